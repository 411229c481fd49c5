"""The pane path's walker: runs in the Python workers over one key's kept (element, window)
rows, sorted as the reference engine steps through them (bundle, arrival order, window).

Per window it keeps the pane's elements and three counters, and fires by the rules of the
native path's count firings (``native_counts.py``, which states why they equal the reference
engine's DSL triggers; the transcripts and the differential tests prove both):

- an element of bundle ``b`` meets ``W_{b-1}``; it is **on time** when ``W_{b-1} < max`` (the
  window's last millisecond). With an early count ``n``, every ``n``-th on-time element fires
  EARLY (the count restarts after each firing), with the clocks of its bundle;
- **ON_TIME** fires at the first bundle ``b*`` whose watermark reaches ``max`` (after that
  bundle's elements; windows in order of ``b*``, then ``max``), or at the end of a finalized
  input with null clocks — when the pane has contents: any on-time element (accumulating), or
  on-time elements since the last early firing (discarding); ``is_final`` iff the allowed
  lateness is 0;
- a **late** element (``W_{b-1} >= max``, kept: its window is not cleaned up) fires LATE every
  ``m``-th time (``m`` = the late count, 1 without a late trigger);
- every firing takes the next pane index; discarding empties the pane after a firing; a window
  is dropped once the watermark passes its cleanup time (``max + lateness``);
- a ``ContinuousEventTimeTrigger`` (interval ``every``): the first on-time element arms a
  timer at the next multiple of ``every`` (at most ``max``); in step 3 of the bundle whose
  watermark reaches it (never an earlier bundle than the one that armed it) it fires EARLY when
  the pane has contents and re-arms ``every`` later; at the end of a finalized input it fires
  once more without re-arming; ``max`` is the ON_TIME timer; late elements fire at once;
- ``after_first_element`` timers (early or alone, by event or processing time), the
  ``ContinuousProcessingTimeTrigger``, a ``ProcessingTimeTrigger`` over event-time windows
  and **processing-time windows**: ``pane_timers.py``;
- a ``CountTrigger`` fires every ``count_every``-th element of the window, on time (EARLY)
  or late (LATE), and has no end-of-window timer; **count windows** (``GlobalWindows``) never
  end, are never cleaned up, and fire a final ON_TIME pane at the end of a finalized input
  with what arrived since their last firing (the core driver's ``finish``);
- a ``DeltaTrigger`` (Flink's) keeps each window's element of its last firing (at first its
  first element, which does not fire) and fires, EARLY or LATE as a count firing, when
  ``delta_fn(last, element)`` exceeds the threshold; that element becomes the reference. The
  delta function runs once per element, in arrival order, as the core calls the trigger (an
  error is the core's ``trigger_failed``). Like a ``CountTrigger`` it has no end-of-window
  timer, over time windows or ``GlobalWindows`` (which fire a final pane at the end of a
  finalized input with what arrived since their last firing);
- a ``NeverTrigger`` fires nothing: time windows are cleaned up without a firing, and
  ``GlobalWindows`` (whose default it is) fire one final pane at the end of a finalized input
  with every element of the key (Beam's rule for the global window; the core's ``finish``);
- a ``PurgingTrigger`` around any of these is discarding mode (``planner.pane_trigger``);
- an **evictor** runs around each firing's function call as the core's driver runs it (both
  hooks, over a copy of the pane, which keeps what is left); ON_TIME skips a pane that
  discarding or the evictor emptied.

So a trigger costs a few integer operations per element, and the user's function runs once per
firing over the pane (``FunctionRunner.results`` with the core's ``Context``: ``window_state``
per window, ``global_state`` per key), its rows written as the general path's tagged rows
(``walker.Walker.emit_result``: ``firing_row``'s columns without building the row). A
``BatchWindowFunction``'s firings queue up instead, and ``process_panes`` runs once per
``BATCH_ROWS`` queued elements (``pane_batches.BatchQueue``); without an evictor its panes hold
input row numbers and their elements never become Python values (``pane_records.py``) —
and over the end-of-window trigger with count early and late firings ``pane_schedule.py``
computes the same firings with NumPy instead of this walk.
**Memory**: a key's live windows and buffered elements, plus the queued batch (and, for
row numbers, the input batches they point into); above ``max_key_state`` entries a key fails
with ``KEY_STATE_LIMIT``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import WindowlibError
from windowlib.core.evictors import TimestampedValue
from windowlib.core.functions import Context
from windowlib.core.lateness import cleanup_time
from windowlib.core.pane import Timing, pane_info
from windowlib.core.runner import FunctionRunner, function_failed, trigger_failed
from windowlib.core.time import MAX_TS
from windowlib.core.windows import GLOBAL_WINDOW, TimeWindow
from windowlib.engines.spark import pane_schedule
from windowlib.engines.spark.bundles import TS
from windowlib.engines.spark.columns import (
    PHASE_ELEMENTS,
    PHASE_FINISH,
    PHASE_TIMERS_WM,
    SUB,
)
from windowlib.engines.spark.native_parts import WS
from windowlib.engines.spark.pane_batches import BatchQueue
from windowlib.engines.spark.pane_records import PaneWalkBase, PaneWindow
from windowlib.engines.spark.pane_timers import TriggerTimers
from windowlib.engines.spark.walk_values import WalkConfig, key_state_limit

_EARLY, _ON_TIME, _LATE = Timing.EARLY, Timing.ON_TIME, Timing.LATE


@dataclass
class PaneWalkConfig:
    """What the pane walker needs besides the general path's ``WalkConfig``: the window size,
    the allowed lateness, the early and late counts (``None``: no early firings / every late
    element fires), accumulation, and the watermark each bundle's elements meet."""

    walk: WalkConfig
    size_ms: int
    lateness_ms: int
    early: int | None
    late_every: int
    discarding: bool
    watermark_before: list
    continuous: int | None = None
    count_every: int | None = None      # a CountTrigger's count
    global_window: bool = False         # GlobalWindows (count windows)
    delta: Any = None                   # a DeltaTrigger
    never: bool = False                 # a NeverTrigger
    processing: bool = False            # processing-time windows (ProcessingTimeTrigger)
    early_first: Any = None             # an early after_first_element (either clock)
    first: Any = None                   # after_first_element as the window's trigger
    continuous_pt: int | None = None    # a ContinuousProcessingTimeTrigger's interval
    proc_end: bool = False              # a ProcessingTimeTrigger over event-time windows


class PaneWalker(TriggerTimers, BatchQueue, PaneWalkBase):
    """Walks the pane path's rows of one partition (see the module docstring;
    ``walker.make_walker(config, PaneWalker)`` is its ``mapInArrow`` function)."""

    def __init__(self, config: PaneWalkConfig) -> None:
        super().__init__(config.walk, discarding=config.discarding,
                         watermark_before=config.watermark_before)
        self.size, self.lateness = config.size_ms, config.lateness_ms
        self.early_every, self.late_every = config.early, config.late_every
        # buffered: the contents are the pane's elements, whatever the function's kind
        self.runner = FunctionRunner(self.logic.runner.spec, buffered=True)
        self.evictor = self.logic.evictor
        self.batching = self.runner.spec.kind == "batch"
        # a Context per firing (a batch function's firings, queued before one is built, get
        # one only for their evictor)
        self.uses_context = self.runner.uses_context or self.evictor is not None
        self.windows: dict[int, PaneWindow] = {}
        self.every = config.continuous      # a ContinuousEventTimeTrigger's interval
        self.count_every, self.global_window = config.count_every, config.global_window
        self.delta, self.never = config.delta, config.never
        self.processing = config.processing
        self.early_first, self.first = config.early_first, config.first
        self.continuous_pt, self.proc_end = config.continuous_pt, config.proc_end
        # count, delta, never, after_first_element and continuous processing-time triggers
        # register no end-of-window timer; processing-time windows one in processing time
        self.end_timer = not (self.count_every or self.delta is not None or self.never
                              or self.processing or self.first is not None
                              or self.continuous_pt or self.proc_end)
        # processing-time timers (b*, time, start): a processing-time window's end, an
        # after_first_element or a continuous processing-time firing (pane_timers.py)
        self.proc_timers: list[tuple[int, int, int]] = []
        # (b*, time, start): event-time timers — a window's end (ON_TIME) or a continuous
        # firing — in the order the reference engine fires them
        self.pending: list[tuple[int, int, int]] = []
        self.cleanups: list[tuple[int, int]] = []         # (cleanup time, start)
        self.batch: list[tuple] = []      # queued firings of a batch function
        self.batch_rows = 0
        # panes hold input row numbers, their elements stay in Arrow (pane_records.py)
        # (a delta function reads each element's values)
        self.arrow_elements = self.batching and self.evictor is None \
            and self.delta is None and not config.walk.json_columns
        self.batch_oldest: int | None = None    # the oldest row number the queue holds

    # --- per key ----------------------------------------------------------------------------
    def _start(self, key: tuple, out_key: tuple) -> None:
        super()._start(key, out_key)
        self.windows, self.pending, self.cleanups, self.proc_timers = {}, [], [], []

    def _finish_key(self) -> None:
        if self.scope is None:
            return
        self._advance(self.n_bundles)
        if self.config.finalize:
            timers, self.proc_timers = sorted(self.proc_timers), []
            for _, time, start in timers:   # processing time at +inf; the watermark stays
                self._proc_timer(time, start, self.n_bundles)
            pending, self.pending = sorted(self.pending), []
            for _, time, start in pending:     # the watermark at +inf: no timer re-arms
                self._timer(time, start, self.n_bundles, PHASE_FINISH)
            if self.global_window:    # a count window outlives +inf: a final pane with what
                for window in self.windows.values():      # arrived since its last firing
                    if window.early and window.buffer:
                        self._clock_at(self.n_bundles, PHASE_FINISH)
                        self._fire(window, _ON_TIME, True)
        self.scope = None

    def _window(self, start: int) -> PaneWindow:
        window = self.windows.get(start)
        if window is None:
            window = self.windows[start] = PaneWindow(start)
            self.live += 1
            if self.global_window:
                return window         # never ends, never cleaned up
            mx = start + self.size - 1
            if self.processing:      # due in step 1 of a later bundle; cleaned up then
                self._due_in_step_one(mx, start, self.b_open + 1)
                return window
            if self.end_timer:
                self._due_in_step_three(mx, start, 0)
            heapq.heappush(self.cleanups, (cleanup_time(mx, self.lateness, True), start))
        return window

    def _advance(self, b: int) -> None:
        """Step 1 of every bundle up to ``b`` and steps 3-4 of every bundle before it (the key
        had no elements there): the processing-time and event-time firings due by then, in
        the event loop's order, then the windows the watermark cleaned up."""
        self.b_open = b
        timers, pending, last = self.proc_timers, self.pending, min(b, self.n_bundles - 1)
        while True:     # step 1 of the bundles up to ``b``, step 3 of those before it
            proc = timers and timers[0][0] <= last
            event = pending and pending[0][0] < b
            if proc and (not event or timers[0][0] <= pending[0][0]):
                b_star, time, start = heapq.heappop(timers)
                self._proc_timer(time, start, b_star)
            elif event:
                b_star, time, start = heapq.heappop(pending)
                self._timer(time, start, b_star, PHASE_TIMERS_WM)
            else:
                break
        if b == 0:
            return
        watermark, heap = self.W[min(b, self.n_bundles) - 1], self.cleanups
        while heap and heap[0][0] <= watermark:
            window = self.windows.pop(heapq.heappop(heap)[1], None)
            if window is not None:
                self.live -= 1 + len(window.buffer)

    def _timer(self, time: int, start: int, b: int, phase: int) -> None:
        """An event-time timer due in step 3 of bundle ``b`` (``n_bundles``: the end of a
        finalized input): the window's end fires ON_TIME; a continuous trigger's time fires
        EARLY and re-arms ``every`` later (at most at the end; not at the end of input)."""
        window = self.windows.get(start)
        if window is None:
            return
        if self.first is not None:       # after_first_element alone (event time)
            self._first_fired(window, time, b, phase)
            return
        mx = start + self.size - 1
        if time == mx:
            if window.on_time:      # registered by any on-time element
                self._on_time(window, b, phase)
            return
        if window.fire_at != time:
            return
        if self.early_first is not None:      # an early after_first_element (event time)
            window.fire_at = None
            if window.buffer:
                self._clock_at(b, phase)
                self._fire(window, _EARLY, False)
            return
        at = min(time + self.every, mx)
        window.fire_at = at if b < self.n_bundles else None
        if b < self.n_bundles and at < mx:
            self._due_in_step_three(at, start, b)
        if window.buffer:           # an empty pane (discarding, an evictor) is none
            self._clock_at(b, phase)
            self._fire(window, _EARLY, False)

    def _on_time(self, window: PaneWindow, b: int, phase: int) -> None:
        # a pane that discarding (or an evictor) emptied is none
        if window.buffer:
            self._clock_at(b, phase)
            self._fire(window, _ON_TIME, self.lateness == 0)

    def _fire(self, window: PaneWindow, timing: Timing, is_final: bool) -> None:
        if self.batching and self.evictor is None:
            self._defer(window, window.buffer, timing, is_final)
            return
        start, index = window.start, window.index
        bounds = GLOBAL_WINDOW if self.global_window else TimeWindow(start, start + self.size)
        context = Context(self.scope, bounds, window, pane_info(index, timing, is_final)) \
            if self.uses_context else None
        if self.batching:       # behind an evictor: the pane as its evict_before left it
            self._defer(window, self._evicting(window, bounds, context,
                                               lambda _k, _w, _c, elements: list(elements)),
                        timing, is_final)
            return
        if self.evictor is not None:
            results = self._evicting(window, bounds, context, self.runner.results)
        else:
            results = self.runner.results(self.scope.key_arg, bounds, context,
                                          window.buffer or None)
        value = timing._value_
        for result in results:
            self.emit_result(bounds, index, value, is_final, result)
        window.index = index + 1
        if self.discarding:
            self.live -= len(window.buffer)
            window.buffer = []

    def _evicting(self, window: PaneWindow, bounds: TimeWindow, context: Context | None,
                  call: Any) -> Any:
        """``call`` over the pane between the evictor's two hooks (FLIP-4, as the core's
        driver runs them: both always run, the built-in evictors act in one); the pane keeps
        what the evictor left."""
        evictor, key_arg = self.evictor, self.scope.key_arg
        elements = list(window.buffer)
        try:
            evictor.evict_before(elements, len(elements), bounds, context)
            results = call(key_arg, bounds, context, elements)
            evictor.evict_after(elements, len(elements), bounds, context)
        except WindowlibError:
            raise
        except Exception as exc:
            raise function_failed(evictor, key_arg, bounds, exc) from exc
        self.live -= len(window.buffer) - len(elements)
        window.buffer = elements
        return results

    def _element(self, window: PaneWindow, b: int, sub: int, ts: int,
                 row: dict | None = None) -> None:
        """The counters of ``window`` after one of its elements (``row``: its values, read
        by a delta trigger) arrived in bundle ``b``."""
        if self.processing:      # fires by processing time only
            return
        if self.first is not None or self.proc_end:      # they fire by their timer only
            if window.fire_at is None:
                self._arm(window, b, ts, self.first)
            return
        if self.never or self.continuous_pt or self.delta is not None:
            window.early += 1      # elements since the last firing (a final global pane)
        if self.never:
            return
        if self.continuous_pt:      # fires by its processing-time timers only
            if window.fire_at is None:
                self._arm_continuous(window, b)
            return
        watermark = self.w_before[b]
        mx = MAX_TS if self.global_window else window.start + self.size - 1
        if self.delta is not None:
            if not self._delta_fires(window, row):
                return
            window.early, timing = 0, _EARLY if watermark < mx else _LATE
        elif self.count_every:     # a CountTrigger: every n-th element, on time or late
            window.early += 1
            if window.early < self.count_every:
                return
            window.early, timing = 0, _EARLY if watermark < mx else _LATE
        elif watermark < mx:       # on time
            window.on_time += 1
            if self.every and window.fire_at is None:
                at = window.fire_at = min(ts - ts % self.every + self.every, mx)
                if at < mx:         # at the end it is the end's own timer; one at or before
                    # the watermark fires in this bundle's step 3
                    self._due_in_step_three(at, window.start, b)
            elif self.early_first is not None and window.fire_at is None:
                self._arm(window, b, ts, self.early_first)
            every, timing = self.early_every, _EARLY
            if not every:
                return
            window.early += 1
            if window.early < every:
                return
            window.early = 0
        else:
            window.late += 1
            if window.late < self.late_every:
                return
            window.late, every, timing = 0, self.late_every, _LATE
        position = self.walk
        position.b, position.phase, position.sub = b, PHASE_ELEMENTS, sub
        self.clock.watermark, self.clock.processing_time = watermark, self.P[b]
        self._fire(window, timing, False)

    def _delta_fires(self, window: PaneWindow, row: Any) -> bool:
        """``DeltaTrigger.on_element`` over the window's reference element."""
        last = window.last
        if last is None:
            window.last = dict(row)
            return False
        delta = self.delta
        try:
            fires = delta.delta_fn(last, row) > delta.threshold
        except WindowlibError:
            raise
        except Exception as exc:
            bounds = GLOBAL_WINDOW if self.global_window else \
                TimeWindow(window.start, window.start + self.size)
            raise trigger_failed(self.logic.trigger, self.scope.key_arg, bounds, exc) from exc
        if fires:
            window.last = dict(row)
        return fires

    # --- the partition loop -----------------------------------------------------------------
    def run(self, batches: Iterator[Any]) -> Iterator[Any]:
        if pane_schedule.eligible(self):      # the firings computed with NumPy
            yield from pane_schedule.walk(self, batches)
        else:
            yield from self.walk_each(batches)
        yield self.flush()

    def walk_each(self, batches: Iterator[Any]) -> Iterator[Any]:
        """The output of ``batches`` (complete key runs) walked per element, but ``flush``."""
        yield from self.walk_rows(batches, (WS, SUB, TS))
        self._run_batch()
        yield from self.ready
        self.ready = []

    def _row(self, row: dict | None, i: int, b: int, cols: list, raw_cols: list,
             extra: list) -> None:
        """One (element, window) row: into its window's pane, then the window's counters."""
        starts, subs, ts_col = extra
        window = self._window(starts[i])
        window.buffer.append(self.row_base + i if row is None
                             else TimestampedValue(row, ts_col[i]))
        self.live += 1
        if self.live > self.config.max_key_state:
            raise key_state_limit(self.key, self.live, self.config.max_key_state)
        self._element(window, b, subs[i], ts_col[i], row)
