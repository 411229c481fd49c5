"""The pane walker's timers besides a time window's end (``TriggerTimers``, a mixin of
``pane_walker.PaneWalker``, whose docstring has the other rules): ``after_first_element``
timers by event or processing time, alone or early, a ``ContinuousProcessingTimeTrigger``'s,
and a processing-time window's end.
Processing-time timers are due in step 1 of a bundle, before its elements (``n_bundles``: the
end of a finalized input, where processing time goes to +inf before the watermark moves).

- An early ``after_first_element(delay)``: the first on-time element since the window's
  last firing arms a timer — by processing time at ``P_b + delay`` (its bundle's), due in
  step 1 (before the elements) of the first later bundle whose processing time reaches it,
  or at the end of a finalized input (before the watermark moves); by event time at
  ``ts + delay``, due in step 3 like a continuous trigger's. It fires EARLY while the window
  is before its end and the pane has contents; once the end has passed it is void (a timer
  at or after ``max`` never fires: ON_TIME comes first and ends the early phase);
- ``after_first_element(delay)`` as the window's trigger: the same timers, armed by the
  first element since the last firing, on time or late, and no end-of-window timer. By
  processing time it fires EARLY before the window's end and LATE after it; by event time
  as the core's pane-timing rule says for a timer of the window's own clock: EARLY before
  ``max``, ON_TIME at or after it (once), LATE after an ON_TIME pane, final when due at the
  cleanup time. Neither fires once the watermark cleaned the window up;
- A ``ContinuousProcessingTimeTrigger`` (interval ``every``) over event-time windows or
  ``GlobalWindows``: the first element since the last firing, on time or late, arms a timer at
  the next multiple of ``every`` after ``P_b`` (at most ``max``), due in step 1 of a later
  bundle; when due it re-arms ``every`` later (not past ``max``, nor at the end of a finalized
  input; due again in the same step if the bundle's processing time reaches it) and fires
  when the pane has contents — EARLY before the window's end, LATE after it — unless the
  watermark cleaned the window up; no end-of-window timer (``GlobalWindows`` fire their final
  pane at the end of a finalized input with what arrived since their last firing);
- A ``ProcessingTimeTrigger`` over event-time windows: every element arms (once until it
  fires) a processing-time timer at the window's ``max``, due in step 1 of a later bundle;
  it fires EARLY or LATE by the watermark, as ``after_first_element`` alone by processing
  time does;
- **Processing-time windows** (tumbling or sliding, assigned in SQL by the bundle's ``P_b``,
  never late) with their ``ProcessingTimeTrigger``: the window's end is a processing-time
  timer, due in step 1 (before the elements) of the first later bundle whose processing time
  reaches ``max``, or at the end of a finalized input (processing time at +inf, the watermark
  where it was); it fires ON_TIME and final (processing-time windows are cleaned up at
  ``max``, Flink ignores the allowed lateness there), and the window goes.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from typing import Any

from windowlib.core.lateness import cleanup_time
from windowlib.core.pane import Timing
from windowlib.core.time import MAX_TS, MIN_TS
from windowlib.engines.spark.columns import PHASE_FINISH, PHASE_TIMERS_PT

__all__ = ["TriggerTimers"]


class TriggerTimers:
    """Reads the walker's windows, bundle clocks (``P``, ``W``, ``w_before``), position and
    configuration (``processing``, ``size``); fires through its ``_fire``. Owns the rule of
    which bundle a timer is due in (``_due_in_step_one``/``_due_in_step_three``), for every
    timer of the walker."""

    def _due_in_step_one(self, at: int, start: int, earliest: int) -> None:
        """A processing-time timer at ``at`` of the window at ``start``: due in step 1 of the
        first bundle from ``earliest`` on whose processing time reaches it (``n_bundles``:
        none in this run)."""
        heapq.heappush(self.proc_timers, (max(bisect_left(self.P, at), earliest), at, start))

    def _due_in_step_three(self, at: int, start: int, earliest: int) -> None:
        """An event-time timer at ``at``: due in step 3 of the first bundle from ``earliest`` on
        whose watermark reaches it."""
        heapq.heappush(self.pending, (max(bisect_left(self.W, at), earliest), at, start))

    def _arm(self, window: Any, b: int, ts: int, trigger: Any) -> None:
        """The ``after_first_element`` timer ``trigger`` arms for an element at ``ts`` of
        bundle ``b`` (``None``: a ``ProcessingTimeTrigger``'s, at the window's ``max``): by
        processing time ``P_b + delay``, due in step 1 of the first later bundle whose
        processing time reaches it; by event time ``ts + delay``, due in step 3 of the first
        bundle (this one at the earliest) whose watermark reaches it — unless the window's end
        (early) or its cleanup (alone) comes first: then nothing is due, and the armed time
        only keeps later elements from arming another."""
        if trigger is None or not trigger.event_time:
            at = window.fire_at = self._max(window) if trigger is None else \
                self.P[b] + trigger.delay_ms
            self._due_in_step_one(at, window.start, b + 1)
            return
        at = window.fire_at = ts + trigger.delay_ms
        mx = self._max(window)
        due_by = cleanup_time(mx, self.lateness, True) if trigger is self.first else mx - 1
        if at <= due_by:
            self._due_in_step_three(at, window.start, b)

    def _arm_continuous(self, window: Any, b: int) -> None:
        """A ``ContinuousProcessingTimeTrigger``'s first timer, for an element of bundle
        ``b``."""
        every = self.continuous_pt
        at = window.fire_at = min(self.P[b] - self.P[b] % every + every, self._max(window))
        self._due_in_step_one(at, window.start, b + 1)

    def _max(self, window: Any) -> int:
        return MAX_TS if self.global_window else window.start + self.size - 1

    def _first_fired(self, window: Any, time: int, b: int, phase: int) -> None:
        """An event-time ``after_first_element`` alone, due in step ``phase`` of bundle ``b``:
        the pane-timing rule of a timer of the window's own clock."""
        if window.fire_at != time:
            return
        window.fire_at = None          # the trigger restarts
        if not window.buffer:
            return
        mx = self._max(window)
        if window.on_time_fired:
            timing = Timing.LATE
        elif time >= mx:
            timing, window.on_time_fired = Timing.ON_TIME, True
        else:
            timing = Timing.EARLY
        self._clock_at(b, phase)
        self._fire(window, timing, time == cleanup_time(mx, self.lateness, True))

    def _proc_timer(self, time: int, start: int, b: int) -> None:
        """A processing-time timer due in step 1 of bundle ``b`` (``n_bundles``: the end of a
        finalized input)."""
        if self.processing:
            self._processing_timer(start, b)
            return
        window = self.windows.get(start)     # after_first_element or continuous
        if window is None or window.fire_at != time:
            return
        window.fire_at = None          # the trigger restarts (or the early phase is over)
        self._step_one(b)
        mx, watermark = self._max(window), self.clock.watermark
        if self.early_first is not None:      # void past the window's end; no empty pane
            if watermark < mx and window.buffer:
                self._fire(window, Timing.EARLY, False)
            return
        if self.continuous_pt and b < self.n_bundles and time < mx:
            # re-armed; due in this step at the earliest
            window.fire_at = min(time + self.continuous_pt, mx)
            self._due_in_step_one(window.fire_at, start, b)
        # the window's own trigger (a window the watermark cleaned up before this step is gone)
        if window.buffer and cleanup_time(mx, self.lateness, True) > watermark:
            window.early = 0         # (a final global pane takes what arrives after this)
            self._fire(window, Timing.EARLY if watermark < mx else Timing.LATE, False)

    def _step_one(self, b: int) -> None:
        """Position and clocks of step 1 of bundle ``b`` (``n_bundles``: the end of a finalized
        input, where processing time is at +inf and the watermark where the run left it)."""
        position, clock = self.walk, self.clock
        position.b, position.sub = b, 0
        if b < self.n_bundles:
            position.phase = PHASE_TIMERS_PT
            clock.watermark, clock.processing_time = self.w_before[b], self.P[b]
        else:
            position.phase = PHASE_FINISH
            clock.watermark = self.W[-1] if self.W else MIN_TS
            clock.processing_time = MAX_TS

    def _processing_timer(self, start: int, b: int) -> None:
        """A processing-time window's end, due in step 1 of bundle ``b`` (``n_bundles``: the
        end of a finalized input): ON_TIME and final when the pane has contents, then the
        window is cleaned up."""
        window = self.windows.pop(start)
        self.live -= 1 + len(window.buffer)
        if window.buffer:
            self._step_one(b)
            self._fire(window, Timing.ON_TIME, True)
