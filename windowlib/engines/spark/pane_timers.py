"""The pane walker's processing-time timers (a mixin of ``pane_walker.PaneWalker``; the rules
are in that module's docstring): a processing-time window's end, and an early
``ProcessingTimeTrigger.after_first_element`` firing. Both are due in step 1 of a bundle, before
its elements (``n_bundles``: the end of a finalized input, where processing time goes to +inf
before the watermark moves)."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from typing import Any

from windowlib.core.lateness import cleanup_time
from windowlib.core.pane import Timing
from windowlib.core.time import MAX_TS, MIN_TS
from windowlib.engines.spark.columns import PHASE_FINISH, PHASE_TIMERS_PT

__all__ = ["ProcessingTimers"]


class ProcessingTimers:
    """Reads the walker's windows, bundle clocks (``P``, ``W``, ``w_before``), position and
    configuration (``processing``, ``size``); fires through its ``_fire``."""

    def _arm(self, window: Any, b: int, delay: int) -> None:
        """An ``after_first_element`` timer for an element of bundle ``b``: ``P_b + delay``,
        due in step 1 of the first later bundle whose processing time reaches it."""
        at = window.fire_at = self.P[b] + delay
        heapq.heappush(self.proc_timers,
                       (max(bisect_left(self.P, at), b + 1), at, window.start))

    def _proc_timer(self, time: int, start: int, b: int) -> None:
        """A processing-time timer due in step 1 of bundle ``b`` (``n_bundles``: the end of a
        finalized input)."""
        if self.processing:
            self._processing_timer(start, b)
            return
        window = self.windows.get(start)     # an early after_first_element firing
        if window is None or window.fire_at != time:
            return
        window.fire_at = None          # the trigger restarts (or the early phase is over)
        self._step_one(b)
        mx, watermark = window.start + self.size - 1, self.clock.watermark
        if self.first_delay is not None:      # the window's own trigger
            # (a window the watermark cleaned up before this step is gone)
            if window.buffer and cleanup_time(mx, self.lateness, True) > watermark:
                self._fire(window, Timing.EARLY if watermark < mx else Timing.LATE, False)
        elif watermark < mx and window.buffer:  # early: void past the end; no empty pane
            self._fire(window, Timing.EARLY, False)

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
