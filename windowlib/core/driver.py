"""The per-key window operator: SPEC §1's event loop for one key (Flink's ``WindowOperator``).

Every engine runs this class; none restates its rules. A run calls, per bundle and key:
``advance_processing_time`` (step 1), ``process_element`` for each element in order (step 2),
then ``advance_watermark`` (step 3; cleanup, step 4, happens on cleanup timers); and
``finish`` at the end of input. The ``Clock`` is shared by all keys of a run and set by the
engine before each step. Outputs go to a ``Sink``.

State of one key: window records (trigger state, per-window function state, pane index, ON_TIME
flag, timers, last result for retractions), pane contents per *state window* (for merging
assigners the window→state-window map of Flink's ``MergingWindowSet``), timers deduplicated per
(time, window) with their owners, and per-key global state. ``snapshot()`` returns it as plain
data; ``KeyDriver.restore`` rebuilds it.
"""

from __future__ import annotations

import heapq
from types import MethodType
from typing import Any

from windowlib.core.codec import decode, encode
from windowlib.core.errors import ExecutionError, WindowlibError
from windowlib.core.functions import Context
from windowlib.core.lateness import cleanup_time
from windowlib.core.logic import driver_plan
from windowlib.core.merging import SessionMerging
from windowlib.core.outputs import firing_row
from windowlib.core.pane import Timing, pane_info, pane_timing
from windowlib.core.records import EVENT, PROCESSING, Clock, Sink, WindowRecord
from windowlib.core.runner import function_failed, trigger_failed
from windowlib.core.time import MAX_TS
from windowlib.core.triggers.base import TriggerResult
from windowlib.core.window_context import WindowTriggerContext
from windowlib.core.windows import window_from_data

__all__ = ["EVENT", "PROCESSING", "Clock", "KeyDriver", "Sink", "WindowRecord"]
_CONTINUE = TriggerResult.CONTINUE
_FIRE, _PURGE, _FIRE_AND_PURGE = TriggerResult.FIRE, TriggerResult.PURGE, \
    TriggerResult.FIRE_AND_PURGE
_ON_TIME, _LATE = Timing.ON_TIME, Timing.LATE
_TIMER_LIMIT = 1_000_000


def logic_fn(driver: KeyDriver) -> Any:
    """The user's function object of a driver's pipeline (for messages)."""
    return driver.logic.runner.spec.producer


class KeyDriver(SessionMerging):
    """Window state and the event loop for one key. See the module docstring."""

    def __init__(self, logic: Any, key: tuple, clock: Clock, sink: Sink) -> None:
        self.logic = logic
        self.key = key
        self.key_row = dict(zip(logic.key_columns, key))
        self.key_arg = logic.key_argument(key)
        self.clock = clock
        self.sink = sink
        self.records: dict[Any, WindowRecord] = {}
        self.contents: dict[Any, Any] = {}
        self.merging: dict[Any, Any] | None = {} if logic.merging else None
        self.timers: dict[str, dict[tuple[int, Any], set[str]]] = {EVENT: {}, PROCESSING: {}}
        self.heaps: dict[str, list[tuple[int, Any]]] = {EVENT: [], PROCESSING: []}
        # the same containers, without the lookup by domain on hot paths
        self._event_heap, self._processing_heap = self.heaps[EVENT], self.heaps[PROCESSING]
        self._event_timers = self.timers[EVENT]
        self._processing_timers = self.timers[PROCESSING]
        self.global_state: dict = {}
        self._ctx = WindowTriggerContext(self)  # after clock and timers: it keeps them
        self._fired_in_step: dict[str, tuple[int | None, int]] = {}
        self._plan = driver_plan(logic)
        self.last_window: tuple | None = None   # for elements.one_window_element
        # the plan's element step, bound once (engines call it for every element)
        self.process_element = MethodType(self._plan.element_step, self)  # type: ignore[method-assign]

    # --- timers ---------------------------------------------------------------------------
    def timer_op(self, domain: str, time: int, owner: str, register: bool, window: Any,
                 record: WindowRecord | None) -> None:
        timers = self.timers[domain]
        k = (time, window)
        owners = timers.get(k)
        if register:
            if owners is not None and owner in owners:
                return
            if owners is None:
                timers[k] = {owner}
                heapq.heappush(self.heaps[domain], k)
                if record is not None:
                    record.timers.add((domain, time))
            else:
                owners.add(owner)
        elif owners is not None and owner in owners:
            owners.discard(owner)
            if not owners:
                del timers[k]
                if record is not None:
                    record.timers.discard((domain, time))

    def next_timer(self, domain: str) -> int | None:
        """The earliest pending timer of ``domain`` (engines use it to find due keys)."""
        heap, timers = self.heaps[domain], self.timers[domain]
        while heap and heap[0] not in timers:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def next_timers(self) -> tuple[int | None, int | None]:
        """``(next_timer(EVENT), next_timer(PROCESSING))`` in one call (stale heap entries
        dropped on the way)."""
        heap, timers = self._event_heap, self._event_timers
        while heap and heap[0] not in timers:
            heapq.heappop(heap)
        te = heap[0][0] if heap else None
        heap, timers = self._processing_heap, self._processing_timers
        while heap and heap[0] not in timers:
            heapq.heappop(heap)
        return te, (heap[0][0] if heap else None)

    def _advance(self, domain: str, now: int, clock_value: int) -> None:
        heap, timers = self.heaps[domain], self.timers[domain]
        # The runaway guard counts every timer fired while the clock stands at one value,
        # across calls (engines may fire a key's timers one timestamp at a time).
        step, fired = self._fired_in_step.get(domain, (None, 0))
        if step != clock_value:
            fired = 0
        start = fired
        pop, on_timer = heapq.heappop, self._on_timer
        end_of_window = self._end_of_window if domain == EVENT and \
            self._plan.end_of_window_only else None
        try:
            while heap and heap[0][0] <= now:
                k = pop(heap)
                if timers.pop(k, None) is None:
                    continue
                fired += 1
                if fired > _TIMER_LIMIT:
                    raise ExecutionError(
                        f"key {self.key!r}: more than {_TIMER_LIMIT} timers fired in one step; "
                        f"the trigger {self.logic.trigger!r} keeps re-registering timers at or "
                        "before the current time", code="TIMER_LOOP")
                time, window = k
                if end_of_window is not None and time == window.max_timestamp:
                    end_of_window(time, window)
                else:
                    on_timer(domain, time, window)
        finally:
            if fired != start:
                self._fired_in_step[domain] = (clock_value, fired)

    def advance_processing_time(self, until: int | None = None) -> None:
        """Step 1: fire processing-time timers up to ``clock.processing_time`` (or ``until``,
        when an engine interleaves keys in global timer order)."""
        heap = self._processing_heap
        if heap:
            now = self.clock.processing_time
            limit = now if until is None or until > now else until
            if heap[0][0] <= limit:
                self._advance(PROCESSING, limit, now)

    def advance_watermark(self, until: int | None = None) -> None:
        """Step 3: fire event-time timers up to ``clock.watermark`` (or ``until``), cleanup
        included."""
        heap = self._event_heap
        if heap:
            now = self.clock.watermark
            limit = now if until is None or until > now else until
            if heap[0][0] <= limit:
                self._advance(EVENT, limit, now)

    def _on_timer(self, domain: str, time: int, window: Any) -> None:
        record = self.records.get(window)
        if record is None:
            return
        record.timers.discard((domain, time))
        plan = self._plan
        # the window's last timer: its pane is final, then its state goes
        last = domain == plan.domain and time == cleanup_time(
            window.max_timestamp, plan.lateness_ms, plan.event_time)
        if domain == EVENT and plan.event_time_trigger:
            # EventTimeTrigger.on_event_time, inlined
            result = _FIRE if time == window.max_timestamp else _CONTINUE
        else:
            ctx = self._ctx
            ctx.window, ctx.record = window, record
            try:
                if domain == EVENT:
                    result = plan.on_event_time(time, window, ctx)
                else:
                    result = plan.on_processing_time(time, window, ctx)
            except WindowlibError:
                raise
            except Exception as exc:
                raise trigger_failed(self.logic.trigger, self.key_arg, window, exc) from exc
        if result is not _CONTINUE:
            self._act(window, record, result, domain, time, last)
        if last:
            self._cleanup(window)

    def _end_of_window(self, time: int, window: Any) -> None:
        """``_on_timer`` for an event-time timer at the window's ``max_timestamp`` when
        ``plan.end_of_window_only``: the classic trigger FIREs and, without lateness, the same
        timer is the cleanup timer, so the pane is final and the window goes. ``_on_timer``,
        ``_act``, ``_emit`` and ``_cleanup`` for that case in one step: the same effects in the
        same order (the record's later fields are not written: it is dropped)."""
        record = self.records.get(window)
        if record is None:
            return
        record.timers.discard((EVENT, time))
        contents = self.contents.get(window)
        # pane_timing of a firing caused by the end-of-window timer
        timing = _LATE if record.on_time_emitted else _ON_TIME
        if contents is not None or (timing is _ON_TIME and self.logic.fire_empty_on_time):
            results = self.logic.runner.results(self.key_arg, window, None, contents)
            self._fire_rows(window, record.pane_index, timing, results, True, False)
        del self.records[window]        # _cleanup
        if record.timers:
            self._drop_timers(window, record)
        self.contents.pop(window, None)

    # --- elements -------------------------------------------------------------------------
    def process_element(self, row: dict, ts_ms: int) -> bool:
        """Step 2 for one element (``core.elements``). Returns False when it was dropped for
        every window (it is then sent to the late output)."""
        return self._plan.element_step(self, row, ts_ms)

    # --- firing ---------------------------------------------------------------------------
    def _state_window(self, window: Any) -> Any:
        return window if self.merging is None else self.merging[window]

    def _act(self, window: Any, record: WindowRecord, result: TriggerResult,
             cause_domain: str | None, cause_time: int, is_last: bool = False) -> None:
        """Carry out a trigger's ``result``; ``is_last``: caused by the window's cleanup timer."""
        state_window = window if self.merging is None else self.merging[window]
        emitted = False
        if result is _FIRE or result is _FIRE_AND_PURGE:
            contents = self.contents.get(state_window)
            emitted = self._emit(window, record, state_window, contents, cause_domain,
                                 cause_time, is_last)
        if (result is _PURGE or result is _FIRE_AND_PURGE
                or (emitted and self._plan.discarding)):
            self.contents.pop(state_window, None)

    def _emit(self, window: Any, record: WindowRecord, state_window: Any, contents: Any,
              cause_domain: str | None, cause_time: int, is_last: bool,
              end_of_input: bool = False) -> bool:
        """Fire one pane; ``is_last``: the final pane (cleanup timer or end of input)."""
        logic = self.logic
        plan = self._plan
        max_ts = window.max_timestamp
        by_clock = cause_domain == plan.domain or end_of_input
        caused_by_end = by_clock and cause_time >= max_ts
        if by_clock:
            now = cause_time
        else:
            now = self.clock.watermark if plan.event_time else self.clock.processing_time
        timing = pane_timing(max_ts, now, record.on_time_emitted, caused_by_end)
        if contents is None and not (timing is _ON_TIME and logic.fire_empty_on_time):
            return False
        index = record.pane_index
        context = Context(self, window, record, pane_info(index, timing, is_last)) \
            if plan.needs_context else None
        runner = logic.runner
        evictor = logic.evictor
        if evictor is not None:
            elements = list(contents or ())
            # Both hooks always run (Flink's contract); built-in evictors act in one of them.
            try:
                evictor.evict_before(elements, len(elements), window, context)
                results = runner.results(self.key_arg, window, context, elements)
                evictor.evict_after(elements, len(elements), window, context)
            except WindowlibError:
                raise
            except Exception as exc:
                raise function_failed(evictor, self.key_arg, window, exc) from exc
            if elements:
                self.contents[state_window] = elements
            else:   # an emptied pane is no pane: nothing to snapshot, nothing to fire
                self.contents.pop(state_window, None)
        else:
            results = runner.results(self.key_arg, window, context, contents)
        retracting = plan.retracting
        if retracting and record.last_rows:
            self._retract(record)
        rows = self._fire_rows(window, index, timing, results, is_last, retracting)
        if retracting:
            record.last_rows = rows
        record.pane_index = index + 1
        record.pending = False
        if timing is _ON_TIME:
            record.on_time_emitted = True
        return True

    def _fire_rows(self, window: Any, index: int, timing: Timing, results: list,
                   is_last: bool, retracting: bool) -> list[dict]:
        """The firing rows of one pane's ``results``, handed to the sink; returns them."""
        logic, key_row, timing_value = self.logic, self.key_row, timing._value_
        if len(results) == 1:
            rows = [firing_row(logic, key_row, window, index, timing_value, results[0],
                               is_last, retracting)]
        else:
            rows = [firing_row(logic, key_row, window, index, timing_value, r, is_last,
                               retracting) for r in results]
        firing = self.sink.firing
        for row in rows:
            firing(row)
        return rows

    def _retract(self, record: WindowRecord) -> None:
        for old in record.last_rows or ():
            row = dict(old)
            row["retract"] = True
            row["is_final"] = False
            self.sink.firing(row)
        record.last_rows = None

    # --- cleanup --------------------------------------------------------------------------
    def _drop_timers(self, window: Any, record: WindowRecord) -> None:
        for domain, time in record.timers:
            self.timers[domain].pop((time, window), None)
        record.timers.clear()

    def _cleanup(self, window: Any) -> None:
        record = self.records.pop(window, None)
        if record is None:
            return
        plan = self._plan
        if not plan.skip_trigger_clear:
            ctx = self._ctx
            ctx.window, ctx.record = window, record
            self._clear_trigger(window, ctx)
        if record.timers:
            self._drop_timers(window, record)
        merging = self.merging
        if merging is None:
            self.contents.pop(window, None)
        else:
            self.contents.pop(merging[window], None)
            merging.pop(window, None)
        if plan.runner_clear is not None:
            try:
                plan.runner_clear(self.key_arg, Context(self, window, record, None))
            except WindowlibError:
                raise
            except Exception as exc:        # the window function's clear()
                raise function_failed(logic_fn(self), self.key_arg, window, exc) from exc

    def finish(self) -> None:
        """End of input (SPEC §1): the clocks go to +inf and fire what that fires (time
        windows are cleaned up by their cleanup timers). Windows that outlive +inf (global
        windows) then fire a final pane with whatever arrived since their last firing — so no
        element is dropped silently at the end of input — and are cleaned up."""
        self.clock.processing_time = MAX_TS
        self.advance_processing_time()
        self.clock.watermark = MAX_TS
        self.advance_watermark()
        for window in sorted(self.records, key=lambda w: w.sort_key()):
            record = self.records[window]
            state_window = self._state_window(window)
            contents = self.contents.get(state_window)
            if record.pending and contents is not None:
                self._emit(window, record, state_window, contents, None, MAX_TS, True,
                           end_of_input=True)
            self._cleanup(window)

    def is_empty(self) -> bool:
        return not self.records and not self.contents and not self.global_state

    # --- snapshots ------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """Plain-data state of this key (JSON-able)."""
        runner = self.logic.runner
        return {
            "windows": [[w.to_data(), self._state_window(w).to_data(), r.to_data()]
                        for w, r in self.records.items()],
            "contents": [[sw.to_data(), runner.encode_contents(c)]
                         for sw, c in self.contents.items()],
            "timers": [[domain, t, w.to_data(), sorted(owners)]
                       for domain in (EVENT, PROCESSING)
                       for (t, w), owners in self.timers[domain].items()],
            "global": encode(self.global_state),
        }

    @classmethod
    def restore(cls, logic: Any, key: tuple, clock: Clock, sink: Sink, data: dict) -> KeyDriver:
        driver = cls(logic, key, clock, sink)
        runner = logic.runner
        for w_data, sw_data, rec_data in data["windows"]:
            window = window_from_data(w_data)
            driver.records[window] = WindowRecord.from_data(rec_data)
            if driver.merging is not None:
                driver.merging[window] = window_from_data(sw_data)
        for sw_data, c in data["contents"]:
            driver.contents[window_from_data(sw_data)] = runner.decode_contents(c)
        for domain, t, w_data, owners in data["timers"]:
            window = window_from_data(w_data)
            driver.timers[domain][(int(t), window)] = set(owners)
            heapq.heappush(driver.heaps[domain], (int(t), window))
            record = driver.records.get(window)
            if record is not None:
                record.timers.add((domain, int(t)))
        driver.global_state = decode(data["global"])
        return driver

