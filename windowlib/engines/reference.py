"""The reference engine: the core's event loop (``core/loop.py``) over bundles, in plain Python.

It is the executable specification every other engine is tested against. Each bundle is
processed as it arrives, for every key with work in it (SPEC §1): the keys whose processing-time
timers are due take step 1 first, then every element is admitted (``loop.admit``: rejects get
a reason) and handed to its key's walk in order, then the watermark advances and every key with
elements or due event-time timers takes step 3. After ``process_bundle`` returns, everything due
has fired (the engine is eager; the Spark general path walks the same steps one key at a time).
Rows that cannot be processed become *rejects*; elements dropped for every window become *late*
records; ``inputs == processed + late + rejects`` holds after every bundle.

State survives between engine instances through ``snapshot()`` (plain, versioned data) and the
``snapshot=`` argument of the constructor.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.codec import decode, encode
from windowlib.core.driver import Clock, KeyDriver, Sink
from windowlib.core.errors import DefinitionError, InputError, StateError
from windowlib.core.loop import (
    PHASE_ELEMENTS,
    PHASE_TIMERS_PT,
    PHASE_TIMERS_WM,
    BundleClock,
    KeyWalk,
    admit,
    bundle_time,
    future_horizon,
)
from windowlib.core.outputs import TOO_LATE
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MIN_TS
from windowlib.core.watermarks import WatermarkStrategy, effective_strategy
from windowlib.engines.base import EngineRun, Executor, PriorState, RunClock, TimePolicy

SNAPSHOT_FORMAT_VERSION = 1
STATE_KIND = "reference-snapshot"


@dataclass
class RunStats:
    """Counts of one engine instance; ``inputs == processed + late + rejects`` by construction
    (``processed`` is what is neither late nor rejected)."""

    bundles: int = 0
    inputs: int = 0
    late: int = 0
    rejects: int = 0
    firings: int = 0
    by_timing: dict[str, int] = field(default_factory=dict)

    @property
    def processed(self) -> int:
        return self.inputs - self.late - self.rejects


class ReferenceEngine:
    """Runs one pipeline over bundles, in order, keeping its state in memory."""

    def __init__(self, pipeline: Pipeline, watermark: WatermarkStrategy | None = None,
                 snapshot: Mapping[str, Any] | None = None) -> None:
        self.pipeline = pipeline
        self.logic = pipeline.compile()
        self.strategy = effective_strategy(watermark)
        self.clock = Clock()
        self.times = BundleClock()
        self.sink = Sink()
        self.rejects: list[dict] = []
        self.stats = RunStats()
        self.max_event_ts = MIN_TS
        self.walks: dict[tuple, KeyWalk] = {}
        # (next due time, key order, key) per domain: which keys have work without elements
        self._due: dict[str, list[tuple[int, str, tuple]]] = {"event": [], "processing": []}
        self._scheduled: dict[tuple, tuple[int | None, int | None]] = {}
        if snapshot is not None:
            self._restore(snapshot)

    @property
    def drivers(self) -> dict[tuple, KeyDriver]:
        """The live per-key drivers (keys without state have none)."""
        return {k: w.driver for k, w in self.walks.items() if w.driver is not None}

    # --- the event loop -------------------------------------------------------------------
    def process_bundle(self, elements: Iterable[Any], processing_time: Any = None,
                       watermark: Any = None) -> None:
        """Process one bundle (SPEC §1 steps 1-4)."""
        given = None if processing_time is None else bundle_time(processing_time,
                                                                 "bundle processing_time")
        explicit = None if watermark is None else bundle_time(watermark, "bundle watermark")
        b = self.times.open(given)
        p = self.times.processing_times[b]
        touched: dict[tuple, KeyWalk] = {}
        self._fire_due("processing", p, b, touched)              # step 1
        self._process_elements(elements, b, p, touched)         # step 2
        if explicit is None:
            explicit = self.strategy.watermark(self.max_event_ts, p)
        w = self.times.close(explicit)
        for key in touched:
            self._schedule(key)
        self._fire_due("event", w, b, touched)                  # steps 3-4
        for key, walk in touched.items():
            walk.close_bundle()
            self._schedule(key)
        self.clock.watermark, self.clock.processing_time = w, p
        self.stats.bundles += 1
        self._count_new_firings()

    def finish(self) -> None:
        """End of input (``finalize=True``): clocks to +inf, every window fires and is gone."""
        for key in sorted(self.walks, key=_key_order):
            self.walks[key].finish()
        self.walks.clear()
        self._scheduled.clear()
        for heap in self._due.values():
            heap.clear()
        self._count_new_firings()

    def _process_elements(self, elements: Iterable[Any], b: int, p: int,
                          touched: dict[tuple, KeyWalk]) -> None:
        logic = self.logic
        if not logic.event_time and p == MIN_TS:
            elements = list(elements)
            if elements:
                raise InputError("processing-time windows need a processing_time on every "
                                 "bundle that has elements", code="NO_PROCESSING_TIME")
        horizon = future_horizon(p, logic.max_future_skew_ms)
        key_columns, ts_column, finite = logic.key_columns, logic.timestamp, logic.finite_columns
        stats, walks = self.stats, self.walks
        max_event_ts = self.max_event_ts
        for element in elements:
            stats.inputs += 1
            reason, row, key, ts = admit(element, key_columns, ts_column, horizon, finite)
            if reason is not None:
                self.rejects.append({**row, "reason": reason})
                stats.rejects += 1
                continue
            walk = touched.get(key)
            if walk is None:
                walk = walks.get(key)
                if walk is None:
                    walk = walks[key] = KeyWalk(logic, key, self.clock, self.sink, self.times)
                touched[key] = walk
            if walk.b_open != b or walk.phase != PHASE_ELEMENTS:
                walk.open_bundle(b)
            if ts > max_event_ts:
                max_event_ts = ts
            driver = walk.driver
            if not (walk.process(row, ts) if driver is None else
                    driver.process_element(row, ts)):
                stats.late += 1
        self.max_event_ts = max_event_ts

    # --- timers across keys ---------------------------------------------------------------
    def _schedule(self, key: tuple, order: str | None = None) -> None:
        """Remember the key's next timers (or forget a key without state); ``order`` is
        ``_key_order(key)`` when the caller has it."""
        walk = self.walks.get(key)
        if walk is None:
            return
        if walk.driver is None:
            if walk.b_open < 0:
                del self.walks[key]
                self._scheduled.pop(key, None)
            return
        due = walk.driver.next_timers()     # walk.next_due(), without the extra call
        if self._scheduled.get(key) == due:
            return
        self._scheduled[key] = due
        if order is None:
            order = _key_order(key)
        te, tp = due
        if te is not None:
            heapq.heappush(self._due["event"], (te, order, key))
        if tp is not None:
            heapq.heappush(self._due["processing"], (tp, order, key))

    def _fire_due(self, domain: str, now: int, b: int, touched: dict[tuple, KeyWalk]) -> None:
        """Fire the due ``domain`` timers of all keys in ascending time (ties: key order), one
        timestamp of one key at a time, so the output order never depends on bundling or
        restores. Stale heap entries (the timer moved or went away) are skipped."""
        heap = self._due[domain]
        phase = PHASE_TIMERS_WM if domain == "event" else PHASE_TIMERS_PT
        walks, scheduled, pop = self.walks, self._scheduled, heapq.heappop
        while heap and heap[0][0] <= now:
            t, order, key = pop(heap)
            walk = walks.get(key)
            if walk is None or walk.driver is None or walk.driver.next_timer(domain) != t:
                continue
            walk.fire_at(b, phase, until=t)
            touched[key] = walk
            scheduled.pop(key, None)
            self._schedule(key, order)

    def _count_new_firings(self) -> None:
        firings = self.sink.firings
        for row in firings[self.stats.firings:]:
            timing = row["timing"]
            self.stats.by_timing[timing] = self.stats.by_timing.get(timing, 0) + 1
        self.stats.firings = len(firings)

    # --- snapshots ------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The engine's state as plain, versioned data (JSON-able; never pickles)."""
        return {
            "format_version": SNAPSHOT_FORMAT_VERSION,
            "fingerprint": self.pipeline.fingerprint,
            "watermark": self.times.watermark,
            "processing_time": self.times.processing_time,
            "max_event_ts": self.max_event_ts,
            "keys": [[[encode(v) for v in key], driver.snapshot()]
                     for key, driver in self.drivers.items()],
        }

    def _restore(self, data: Mapping[str, Any]) -> None:
        if not isinstance(data, Mapping):
            raise StateError(f"corrupt snapshot: expected an object, got {type(data).__name__}",
                             code="SNAPSHOT_CORRUPT")
        version = data.get("format_version")
        if version != SNAPSHOT_FORMAT_VERSION:
            raise StateError(f"snapshot format_version {version!r} is not supported (this "
                             f"windowlib reads {SNAPSHOT_FORMAT_VERSION})",
                             code="SNAPSHOT_VERSION")
        # earlier versions described custom parts differently: their snapshots stay readable
        if data.get("fingerprint") not in (self.pipeline.fingerprint,
                                           *self.pipeline.earlier_fingerprints):
            raise StateError(
                f"the snapshot was written by a different definition of pipeline "
                f"{self.pipeline.name!r} (fingerprint {data.get('fingerprint')} != "
                f"{self.pipeline.fingerprint}); start again without the snapshot",
                code="FINGERPRINT_MISMATCH")
        try:
            self.times = BundleClock(int(data["watermark"]), int(data["processing_time"]))
            self.clock.watermark = self.times.watermark
            self.clock.processing_time = self.times.processing_time
            self.max_event_ts = int(data["max_event_ts"])
            for key_data, driver_data in data["keys"]:
                key = tuple(decode(v) for v in key_data)
                driver = KeyDriver.restore(self.logic, key, self.clock, self.sink, driver_data)
                self.walks[key] = KeyWalk(self.logic, key, self.clock, self.sink, self.times,
                                          driver)
                self._schedule(key)
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"corrupt snapshot: {exc!r}", code="SNAPSHOT_CORRUPT") from exc


def _key_order(key: tuple) -> str:
    """A total, process-independent order of keys (timers due at the same time fire in it)."""
    # cached only for str/int keys: equal keys of other types (1, 1.0, True) encode apart
    if len(key) == 1:
        t = type(key[0])
        cacheable = t is str or t is int
    else:
        cacheable = all(type(v) is str or type(v) is int for v in key)
    if cacheable:
        order = _KEY_ORDERS.get(key)
        if order is not None:
            return order
    order = json.dumps([encode(v) for v in key], sort_keys=True, default=repr)
    if cacheable:
        if len(_KEY_ORDERS) >= 100_000:
            _KEY_ORDERS.clear()
        _KEY_ORDERS[key] = order
    return order


_KEY_ORDERS: dict[tuple, str] = {}


@dataclass
class ListOutputs:
    """The reference executor's outputs: firing rows as ``KeyDriver`` emits them, late and
    rejected elements with their ``reason``, side outputs by tag, and the new state (a
    snapshot; ``None`` after a finalized run, when nothing is left)."""

    firings: list[dict]
    late: list[dict]
    rejects: list[dict]
    side_outputs: dict[str, list[Any]]
    state: dict | None


class ReferenceExecutor(Executor):
    """``Executor`` over plain Python bundles (objects with ``elements``, ``processing_time``
    and ``watermark``, e.g. ``windowlib.testing.Bundle``); prior state is a snapshot."""

    name = "reference"

    def run(self, pipeline: Pipeline, bundles: Any, *, prior: PriorState | None = None,
            time: TimePolicy | None = None, run_id: str | None = None
            ) -> EngineRun[ListOutputs]:
        time = time or TimePolicy()
        if time.processing_time is not None or time.arrival_interval is not None \
                or time.bundles:
            raise DefinitionError("the reference engine takes bundle times from its bundles",
                                  code="ARGUMENT_INVALID")
        engine = ReferenceEngine(pipeline, watermark=time.watermark,
                                 snapshot=None if prior is None else prior.state)
        for bundle in bundles:
            engine.process_bundle(bundle.elements, processing_time=bundle.processing_time,
                                  watermark=bundle.watermark)
        clock = RunClock(engine.times.watermark, engine.times.processing_time,
                         engine.max_event_ts)
        if time.finalize:
            engine.finish()
        late = [{**row, "reason": TOO_LATE} for row, _ in engine.sink.late]
        outputs = ListOutputs(engine.sink.firings, late, engine.rejects,
                              engine.sink.side_outputs,
                              None if time.finalize else engine.snapshot())
        return EngineRun(outputs, clock, path=self.name, state_kind=STATE_KIND,
                         inputs=engine.stats.inputs)
