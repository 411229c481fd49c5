"""SPEC §1's event loop, stated once: the bundle clocks, the admission of elements (the reject
rules) and one key's walk through the bundles of a run.

Every engine runs these; none restates a step. Engines only *schedule*: the reference engine
walks every key with work in each bundle as the bundle arrives, the Spark general path walks one
key at a time over the whole bundle sequence inside a Python worker, and the native path
compiles the same rules to SQL (``REJECT_CHECKS`` gives their order).

Invariants:

- ``P_b = max(P_{b-1}, given_b)`` and ``W_b = max(W_{b-1}, candidate_b)``: neither clock ever
  moves backwards (``BundleClock.open`` / ``close``).
- An element of bundle ``b`` meets ``P_b`` and ``W_{b-1}``; the watermark moves to ``W_b`` only
  after the bundle's last element.
- For one key and bundle the steps are: processing-time timers ``<= P_b``, the key's elements in
  arrival order, event-time timers ``<= W_b`` (cleanup included). A bundle in which the key has
  no element is visited only when one of its timers is due there (bisection in the monotone
  clock sequences), so the cost follows data and live timers, not keys x bundles.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.copies import kept_row
from windowlib.core.driver import Clock, KeyDriver, Sink
from windowlib.core.errors import InputError, StateError
from windowlib.core.time import (
    EVENT_TIME_END_MS,
    EVENT_TIME_MIN_MS,
    MIN_TS,
    event_time_in_range,
    timestamp_ms,
)

# --- admission: why an element cannot be processed --------------------------------------------

# The reject checks in the order they apply (an element gets the first reason that holds):
# its event time (missing, null, not a time), a timestamp beyond the future horizon, a null key,
# NaN or ±inf in a column a numeric aggregate reads (PipelineLogic.finite_columns).
REJECT_CHECKS = ("timestamp", "future_timestamp", "missing_key", "non_finite")
_INFINITE = (float("inf"), float("-inf"))
_MISSING = object()


def timestamp_problem(value: Any) -> str | None:
    """The reject reason for an event-time value, or ``None`` when it is a valid timestamp
    (``missing_timestamp`` is for a row without the column: pass ``MISSING``)."""
    if value is _MISSING:
        return "missing_timestamp"
    if value is None:
        return "null_timestamp"
    try:
        ms = timestamp_ms(value)
    except InputError:
        return "invalid_timestamp"
    return None if event_time_in_range(ms) else "timestamp_out_of_range"


MISSING = _MISSING


def bundle_time(value: Any, what: str) -> int:
    """A bundle's given processing time or watermark as ms (``InputError(BUNDLE_INVALID)``)."""
    try:
        return timestamp_ms(value)
    except InputError as exc:
        raise InputError(f"{what}: {exc}", code="BUNDLE_INVALID") from exc


def future_horizon(processing_time: int, max_future_skew_ms: int) -> int | None:
    """The largest event time a bundle accepts (``None`` while processing time is unknown)."""
    return None if processing_time == MIN_TS else processing_time + max_future_skew_ms


def non_finite(row: Mapping[str, Any], columns: tuple[str, ...]) -> bool:
    """Whether one of ``columns`` of ``row`` holds NaN or ±inf."""
    for c in columns:
        v = row.get(c)
        if type(v) is float and (v != v or v in _INFINITE):
            return True
    return False


def reject_reason(ts_reason: str | None, ts_ms: int | None, key: tuple,
                  horizon: int | None, not_finite: bool = False) -> str | None:
    """The first reject check that fails (``REJECT_CHECKS`` order), or ``None`` to process it.

    ``ts_reason`` is the event time's own problem (``timestamp_problem``), ``ts_ms`` the event
    time when it has none, ``not_finite`` the result of ``non_finite``."""
    if ts_reason is not None:
        return ts_reason
    if horizon is not None and ts_ms is not None and ts_ms > horizon:
        return "future_timestamp"
    if None in key:
        return "missing_key"
    if not_finite:
        return "non_finite"
    return None


def admit(row: Any, key_columns: tuple[str, ...], ts_column: str, horizon: int | None,
          finite_columns: tuple[str, ...] = ()) -> tuple[str | None, dict, tuple, int]:
    """``(reason, row, key, ts_ms)`` of a plain-Python element (``reason`` is ``None`` when it
    is processed); ``row`` is the run's own copy (functions may change the elements they are
    given, the caller's stay as they were). Non-mapping elements are ``schema_mismatch``."""
    if type(row) is not dict and not isinstance(row, Mapping):
        return "schema_mismatch", {"value": row}, (), 0
    row = kept_row(row)
    ts = row.get(ts_column, _MISSING)
    reason = None
    if type(ts) is not int:
        reason = timestamp_problem(ts)
        ts = 0 if reason is not None else timestamp_ms(ts)
    elif not EVENT_TIME_MIN_MS <= ts < EVENT_TIME_END_MS:
        reason = "timestamp_out_of_range"
    if len(key_columns) == 1:
        key: tuple = (row.get(key_columns[0]),)
    else:
        key = tuple(row.get(c) for c in key_columns)
    bad = False
    for c in finite_columns:    # non_finite, inlined (it runs for every element)
        v = row.get(c)
        if type(v) is float and (v != v or v in _INFINITE):
            bad = True
            break
    if reason is None and not bad and (horizon is None or ts <= horizon) and None not in key:
        return None, row, key, ts    # every check of reject_reason passes
    return reject_reason(reason, ts, key, horizon, bad), row, key, ts


# --- the clocks of a run's bundles ------------------------------------------------------------

@dataclass(frozen=True)
class RunClock:
    """Where global time stands between runs (ms; ``MIN_TS`` = not yet known): what a
    checkpoint records next to the pane state, and where the next run's clocks start."""

    watermark: int = MIN_TS
    processing_time: int = MIN_TS
    max_event_ts: int = MIN_TS

    def to_dict(self) -> dict[str, int]:
        return {"watermark": self.watermark, "processing_time": self.processing_time,
                "max_event_ts": self.max_event_ts}

    @classmethod
    def from_dict(cls, data: Any) -> RunClock:
        try:
            return cls(int(data["watermark"]), int(data["processing_time"]),
                       int(data["max_event_ts"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"corrupt run clock in the checkpoint: {data!r}",
                             code="CHECKPOINT_CORRUPT") from exc


@dataclass
class BundleClock:
    """Processing time and watermark of each bundle of a run (ms), indexed by bundle.

    ``processing_times[b]`` is ``P_b``, ``watermarks[b]`` is ``W_b`` (after bundle ``b``);
    ``initial_*`` is where the clocks stood before the run (a checkpoint's clock, or -inf).
    Both lists never decrease. ``open``/``close`` append one bundle by SPEC §1's rules."""

    initial_watermark: int = MIN_TS
    initial_processing_time: int = MIN_TS
    processing_times: list[int] = field(default_factory=list)
    watermarks: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.processing_times)

    @property
    def processing_time(self) -> int:
        """``P`` of the last bundle opened (the initial one before any)."""
        return self.processing_times[-1] if self.processing_times else \
            self.initial_processing_time

    @property
    def watermark(self) -> int:
        """``W`` after the last bundle closed (the initial one before any)."""
        return self.watermarks[-1] if self.watermarks else self.initial_watermark

    def open(self, given: int | None) -> int:
        """Start the next bundle: ``P_b = max(P_{b-1}, given)``; returns ``b``."""
        p = self.processing_time
        self.processing_times.append(p if given is None else max(p, given))
        return len(self.processing_times) - 1

    def close(self, candidate: int) -> int:
        """End the open bundle: ``W_b = max(W_{b-1}, candidate)``; returns ``W_b``."""
        w = max(self.watermark, candidate)
        self.watermarks.append(w)
        return w

    def watermark_before(self, b: int) -> int:
        """``W_{b-1}``: the watermark the elements of bundle ``b`` meet."""
        return self.watermarks[b - 1] if b > 0 else self.initial_watermark

    def first_due(self, lo: int, end: int, event_timer: int | None,
                  processing_timer: int | None) -> int:
        """The first bundle in ``[lo, end)`` where one of the timers is due (``end`` if none)."""
        j = end
        if processing_timer is not None:
            j = bisect_left(self.processing_times, processing_timer, lo, end)
        if event_timer is not None:
            j = min(j, bisect_left(self.watermarks, event_timer, lo, end))
        return j


# --- one key's walk ---------------------------------------------------------------------------

# the step a key is in (engines tag outputs with (bundle, phase, element number) to order them)
PHASE_TIMERS_PT, PHASE_ELEMENTS, PHASE_TIMERS_WM, PHASE_FINISH = 0, 1, 2, 3


class KeyWalk:
    """One key's ``KeyDriver`` stepped through the bundles of a ``BundleClock``.

    Call ``open_bundle(b)`` before the key's first element of bundle ``b`` (it first fires what
    was due in the bundles the key skipped), ``process`` for each element in arrival order,
    ``catch_up(end)`` to fire what is due up to bundle ``end`` (exclusive) and ``finish`` at the
    end of a finalized input. Bundles must be visited in ascending order. The shared ``Clock``
    is set before every step; ``b``, ``phase`` and ``sub`` say where the walk stands. The driver
    is created with the first element and dropped whenever it holds no state."""

    __slots__ = ("b", "b_next", "b_open", "clock", "driver", "key", "logic", "phase", "sink",
                 "sub", "times")

    def __init__(self, logic: Any, key: tuple, clock: Clock, sink: Sink, times: BundleClock,
                 driver: KeyDriver | None = None) -> None:
        self.logic, self.key, self.clock, self.sink, self.times = logic, key, clock, sink, times
        self.driver = driver
        self.b_open = -1     # the bundle whose elements are being processed
        self.b_next = 0      # the first bundle not visited yet
        self.b, self.phase, self.sub = 0, PHASE_ELEMENTS, 0

    def _drop_if_empty(self) -> None:
        driver = self.driver
        # KeyDriver.is_empty, inlined: this runs after every step of every key
        if driver is not None and not driver.records and not driver.contents \
                and not driver.global_state:
            self.driver = None

    def _enter(self, b: int, phase: int) -> None:
        """Set the shared clock for a step of bundle ``b`` (``P_b``; ``W_b`` once the bundle's
        elements are done, ``W_{b-1}`` before)."""
        times = self.times
        self.clock.processing_time = times.processing_times[b]
        self.clock.watermark = (times.watermarks[b] if phase >= PHASE_TIMERS_WM
                                else times.watermark_before(b))
        self.b, self.phase, self.sub = b, phase, 0

    def _begin(self, b: int) -> None:
        if self.b_open != b:
            if self.b_open >= 0:
                self.close_bundle()
            self.catch_up(b)
            self.b_open = b

    def open_bundle(self, b: int) -> None:
        """Step 1 of bundle ``b`` (processing-time timers ``<= P_b``), then its elements."""
        if self.b_open != b:
            self._begin(b)
        times, clock = self.times, self.clock     # _enter(b, PHASE_TIMERS_PT), inlined
        clock.processing_time = times.processing_times[b]
        clock.watermark = times.watermarks[b - 1] if b > 0 else times.initial_watermark
        self.b, self.sub = b, 0
        driver = self.driver
        if driver is not None:
            if driver._processing_heap:     # (advance_processing_time's own first test)
                self.phase = PHASE_TIMERS_PT
                driver.advance_processing_time()
            self._drop_if_empty()
        self.phase = PHASE_ELEMENTS

    def fire_at(self, b: int, phase: int, until: int) -> None:
        """Fire the key's timers of step ``phase`` (``PHASE_TIMERS_PT`` or
        ``PHASE_TIMERS_WM``) of bundle ``b`` up to ``until``: for engines that interleave keys
        in global timer order. ``close_bundle`` ends the bundle."""
        if self.b_open != b:
            self._begin(b)
        times, clock = self.times, self.clock     # _enter(b, phase), inlined
        clock.processing_time = times.processing_times[b]
        clock.watermark = (times.watermarks[b] if phase >= PHASE_TIMERS_WM
                           else times.watermarks[b - 1] if b > 0 else times.initial_watermark)
        self.b, self.phase, self.sub = b, phase, 0
        if self.driver is not None:
            if phase == PHASE_TIMERS_PT:
                self.driver.advance_processing_time(until=until)
            else:
                self.driver.advance_watermark(until=until)
            self._drop_if_empty()

    def process(self, row: dict, ts_ms: int) -> bool:
        """Step 2 for one element of the open bundle; ``False`` when it was too late for every
        window (the engine sends it to the late output)."""
        driver = self.driver
        if driver is None:
            driver = self.driver = KeyDriver(self.logic, self.key, self.clock, self.sink)
        return driver.process_element(row, ts_ms)

    def close_bundle(self) -> None:
        """Step 3 of the open bundle: ``W = W_b``, event-time timers (and cleanup)."""
        b = self.b_open
        self._drop_if_empty()
        self._enter(b, PHASE_TIMERS_WM)
        if self.driver is not None:
            self.driver.advance_watermark()
            self._drop_if_empty()
        self.b_open = -1
        self.b_next = b + 1

    def catch_up(self, end: int) -> None:
        """Fire what is due in bundles ``[b_next, end)``, in which the key has no elements."""
        if self.b_open >= 0 and self.b_open < end:
            self.close_bundle()
        lo, times = self.b_next, self.times
        while lo < end and self.driver is not None:
            driver = self.driver
            te, tp = driver.next_timers()
            if te is None and tp is None:
                break
            j = times.first_due(lo, end, te, tp)
            if j >= end:
                break
            self._enter(j, PHASE_TIMERS_PT)
            driver.advance_processing_time()
            self._drop_if_empty()
            if self.driver is None:
                break
            self._enter(j, PHASE_TIMERS_WM)
            driver.advance_watermark()
            self._drop_if_empty()
            lo = j + 1
        self.b_next = max(self.b_next, end)

    def next_due(self) -> tuple[int | None, int | None]:
        """``(event timer, processing timer)``: the key's earliest timers (``None``: none)."""
        if self.driver is None:
            return None, None
        return self.driver.next_timers()

    def finish(self) -> None:
        """End of input after the last bundle: everything fires and is cleaned up."""
        n = len(self.times)
        self.catch_up(n)
        if self.driver is not None:
            self.clock.watermark = self.times.watermark
            self.clock.processing_time = self.times.processing_time
            self.b, self.phase, self.sub = n, PHASE_FINISH, 0
            self.driver.finish()
            self.driver = None
