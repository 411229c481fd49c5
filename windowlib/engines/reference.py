"""The reference engine: SPEC §1's event loop over bundles, in plain Python.

It is the executable specification every other engine is tested against. Per bundle:
processing time advances (processing-time timers fire), elements are validated and handed to
their key's ``KeyDriver`` in order, then the watermark advances (event-time timers and cleanup).
Rows that cannot be processed become *rejects* with a reason; elements dropped for every window
become *late* records; ``inputs == processed + late + rejects`` holds after every bundle.

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
from windowlib.core.driver import EVENT, PROCESSING, Clock, KeyDriver, Sink
from windowlib.core.errors import InputError, StateError
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MIN_TS, timestamp_ms
from windowlib.core.watermarks import BoundedOutOfOrderness, WatermarkStrategy

SNAPSHOT_FORMAT_VERSION = 1
_MISSING = object()


@dataclass
class RunStats:
    """Counts of one engine instance; ``inputs == processed + late + rejects``."""

    bundles: int = 0
    inputs: int = 0
    processed: int = 0
    late: int = 0
    rejects: int = 0
    firings: int = 0
    by_timing: dict[str, int] = field(default_factory=dict)

    def check(self) -> None:
        if self.inputs != self.processed + self.late + self.rejects:
            raise StateError(f"conservation violated: {self}", code="STATE_INVALID")


class ReferenceEngine:
    """Runs one pipeline over bundles, in order, keeping its state in memory."""

    def __init__(self, pipeline: Pipeline, watermark: WatermarkStrategy | None = None,
                 snapshot: Mapping[str, Any] | None = None) -> None:
        self.pipeline = pipeline
        self.logic = pipeline.compile()
        self.strategy = watermark if watermark is not None else BoundedOutOfOrderness(0)
        self.clock = Clock()
        self.sink = Sink()
        self.rejects: list[dict] = []
        self.stats = RunStats()
        self.max_event_ts = MIN_TS
        self.drivers: dict[tuple, KeyDriver] = {}
        self._due: dict[str, list[tuple[int, str, tuple]]] = {EVENT: [], PROCESSING: []}
        if snapshot is not None:
            self._restore(snapshot)

    # --- the event loop -------------------------------------------------------------------
    def process_bundle(self, elements: Iterable[Any], processing_time: Any = None,
                       watermark: Any = None) -> None:
        """Process one bundle (SPEC §1 steps 1-4)."""
        clock = self.clock
        if processing_time is not None:
            given = bundle_time(processing_time, "bundle processing_time")
            clock.processing_time = max(clock.processing_time, given)
        self._fire_due(PROCESSING, clock.processing_time)
        self._process_elements(elements)
        if watermark is not None:
            candidate = bundle_time(watermark, "bundle watermark")
        else:
            candidate = self.strategy.watermark(self.max_event_ts, clock.processing_time)
        clock.watermark = max(clock.watermark, candidate)
        self._fire_due(EVENT, clock.watermark)
        self.stats.bundles += 1
        self._count_new_firings()
        self.stats.check()

    def finish(self) -> None:
        """End of input (``finalize=True``): clocks to +inf, every window fires and is gone."""
        watermark, processing_time = self.clock.watermark, self.clock.processing_time
        for key in sorted(self.drivers, key=_key_order):
            # Every key ends from the same clocks (a driver's finish moves them to +inf).
            self.clock.watermark, self.clock.processing_time = watermark, processing_time
            self.drivers[key].finish()
        self.drivers.clear()
        for heap in self._due.values():
            heap.clear()
        self._count_new_firings()

    def _process_elements(self, elements: Iterable[Any]) -> None:
        logic = self.logic
        key_columns = logic.key_columns
        single_key = key_columns[0] if len(key_columns) == 1 else None
        ts_column = logic.timestamp
        clock = self.clock
        processing_time = clock.processing_time
        horizon = (processing_time + logic.max_future_skew_ms
                   if processing_time != MIN_TS else None)
        if not logic.event_time and processing_time == MIN_TS:
            elements = list(elements)
            if elements:
                raise InputError("processing-time windows need a processing_time on every "
                                 "bundle that has elements", code="NO_PROCESSING_TIME")
        drivers = self.drivers
        stats = self.stats
        late_before = len(self.sink.late)
        touched: dict[tuple, None] = {}
        max_event_ts = self.max_event_ts
        for row in elements:
            stats.inputs += 1
            if type(row) is not dict:
                if not isinstance(row, Mapping):
                    self._reject({"value": row}, "schema_mismatch")
                    continue
                row = dict(row)
            ts = row.get(ts_column, _MISSING)
            if type(ts) is not int:
                reason = timestamp_problem(ts)
                if reason is not None:
                    self._reject(row, reason)
                    continue
                ts = timestamp_ms(ts)
            if horizon is not None and ts > horizon:
                self._reject(row, "future_timestamp")
                continue
            if single_key is not None:
                key = (row.get(single_key),)
                if key[0] is None:
                    self._reject(row, "missing_key")
                    continue
            elif key_columns:
                key = tuple(row.get(c) for c in key_columns)
                if None in key:
                    self._reject(row, "missing_key")
                    continue
            else:
                key = ()
            driver = drivers.get(key)
            if driver is None:
                driver = drivers[key] = KeyDriver(logic, key, clock, self.sink)
            if ts > max_event_ts:
                max_event_ts = ts
            driver.process_element(row, ts)
            touched[key] = None
        self.max_event_ts = max_event_ts
        late_now = len(self.sink.late) - late_before
        stats.late += late_now
        stats.processed = stats.inputs - stats.late - stats.rejects
        for key in touched:
            self._schedule(key)

    def _reject(self, row: dict, reason: str) -> None:
        record = dict(row)
        record["reason"] = reason
        self.rejects.append(record)
        self.stats.rejects += 1

    # --- timers across keys ---------------------------------------------------------------
    def _schedule(self, key: tuple) -> None:
        driver = self.drivers.get(key)
        if driver is None:
            return
        if driver.is_empty():
            del self.drivers[key]
            return
        for domain in (EVENT, PROCESSING):
            t = driver.next_timer(domain)
            if t is not None:
                heapq.heappush(self._due[domain], (t, _key_order(key), key))

    def _fire_due(self, domain: str, now: int) -> None:
        """Fire due timers of all keys in ascending time (ties: key order), one timestamp of
        one key at a time, so the output order never depends on bundling or restores."""
        heap = self._due[domain]
        while heap and heap[0][0] <= now:
            t, order, key = heapq.heappop(heap)
            driver = self.drivers.get(key)
            if driver is None:
                continue
            actual = driver.next_timer(domain)
            if actual != t:  # stale entry: the timer moved or was deleted
                if actual is not None and actual <= now:
                    heapq.heappush(heap, (actual, order, key))
                continue
            if domain == EVENT:
                driver.advance_watermark(until=t)
            else:
                driver.advance_processing_time(until=t)
            self._schedule(key)

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
            "watermark": self.clock.watermark,
            "processing_time": self.clock.processing_time,
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
        if data.get("fingerprint") != self.pipeline.fingerprint:
            raise StateError(
                f"the snapshot was written by a different definition of pipeline "
                f"{self.pipeline.name!r} (fingerprint {data.get('fingerprint')} != "
                f"{self.pipeline.fingerprint}); start a new state generation (rebuild)",
                code="FINGERPRINT_MISMATCH")
        try:
            self.clock.watermark = int(data["watermark"])
            self.clock.processing_time = int(data["processing_time"])
            self.max_event_ts = int(data["max_event_ts"])
            for key_data, driver_data in data["keys"]:
                key = tuple(decode(v) for v in key_data)
                self.drivers[key] = KeyDriver.restore(self.logic, key, self.clock, self.sink,
                                                      driver_data)
                self._schedule(key)
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"corrupt snapshot: {exc!r}", code="SNAPSHOT_CORRUPT") from exc


def _key_order(key: tuple) -> str:
    """A total, process-independent order of keys (timers due at the same time fire in it)."""
    # cached only for str/int keys: equal keys of other types (1, 1.0, True) encode apart
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


def timestamp_problem(value: Any) -> str | None:
    """The reject reason for an event-time value, or None when it is a valid timestamp."""
    if value is _MISSING:
        return "missing_timestamp"
    if value is None:
        return "null_timestamp"
    try:
        timestamp_ms(value)
    except InputError:
        return "invalid_timestamp"
    return None


def bundle_time(value: Any, what: str) -> int:
    """A bundle's processing time or watermark as ms (``InputError(BUNDLE_INVALID)``)."""
    try:
        return timestamp_ms(value)
    except InputError as exc:
        raise InputError(f"{what}: {exc}", code="BUNDLE_INVALID") from exc
