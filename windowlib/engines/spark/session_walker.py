"""The pane path's session walker: event-time sessions (``EventTimeSessionWindows``)
with the default ``EventTimeTrigger``, without the per-element trigger and timer machinery of
the core's driver (one-shot runs; ``planner.session_reasons`` says which pipelines).

It runs in the Python workers over one key's accepted elements (rejects are Spark SQL's, as on
the native path; with a declarative aggregate only the sessions ``session_sql.py`` leaves to
it), sorted as the reference engine steps through them (bundle, arrival order),
and keeps the key's live sessions as a sorted list of disjoint, non-touching windows with their
contents. Per element of bundle ``b`` (it meets ``W = W_{b-1}``), as ``KeyDriver`` with
``SessionMerging`` does (``core/driver.py``, ``core/merging.py``):

- its window ``[ts, ts + gap)`` (a dynamic gap: the assigner's, its gap function called once
  per element as the core calls it) is merged with the live sessions it intersects (found by
  bisection; grouped and covered by the assigner's own ``merge_windows``). A new cover is a new
  window (pane index 0, no ON_TIME pane yet): contents merged in window order with the
  function runner's ``merge``, per-window function state with ``SessionMerging._merge_fn_state``,
  its end timer armed when ``cover.max > W`` (``EventTimeTrigger.on_merge``); a window inside
  one session is that session;
- lateness is judged on the resulting window (``is_late(cleanup_time(max))``): only a window
  that merged with nothing can be late, and its element goes to the late output with ``W``;
- the element is added with the runner's ``add``; then ``EventTimeTrigger.on_element``: a
  window whose ``max <= W`` fires at once (LATE: ``pane_timing``), else its end timer is armed;
- step 3 of a bundle fires the armed end timers ``t <= W_b`` in ``(t, window)`` order
  (ON_TIME, ``is_final`` iff ``t`` is the cleanup time) and drops the sessions the watermark
  cleaned up; a finalized input fires the rest at ``+inf`` (then, as ``KeyDriver.finish``, any
  session with contents pending since its last firing fires a last pane: none can be left
  with this trigger, every element fires or arms a timer).

A firing with no contents (discarding emptied them) fires nothing. Contents are the core's
``FunctionRunner``'s (accumulators for aggregates, elements for ``process``/``apply``), added,
merged and turned into rows by the same calls in the same order as the core's driver, so the
results equal the reference engine's bit for bit (float sums included); firing rows are
``core.outputs.firing_row``. The transcripts run on this walker and a differential property
compares it with the reference engine (``tests/spark/test_pane_path.py``).

Cost: a bisection and a few comparisons per element, the runner's ``add`` (the driver's own
per-element work on contents), Python per firing. **Memory**: a key's live sessions and their
contents; above ``max_key_state`` entries a key fails with ``KEY_STATE_LIMIT``.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import WindowlibError
from windowlib.core.functions import Context
from windowlib.core.lateness import cleanup_time, is_late
from windowlib.core.merging import SessionMerging
from windowlib.core.outputs import TOO_LATE, firing_row
from windowlib.core.pane import Timing, pane_info, pane_timing
from windowlib.core.runner import assignment_failed, function_failed
from windowlib.core.time import MAX_TS
from windowlib.core.windows import TimeWindow
from windowlib.engines.spark.bundles import TS
from windowlib.engines.spark.columns import (
    PHASE_ELEMENTS,
    PHASE_FINISH,
    PHASE_TIMERS_WM,
    SUB,
)
from windowlib.engines.spark.pane_records import PaneWalkBase
from windowlib.engines.spark.walk_values import WalkConfig, finite_clock, key_state_limit

__all__ = ["SessionWalkConfig", "SessionWalker"]
_ON_TIME = Timing.ON_TIME


@dataclass
class SessionWalkConfig:
    """What the session walker needs besides the general path's ``WalkConfig``: the watermark
    each bundle's elements meet and the accumulation mode."""

    walk: WalkConfig
    watermark_before: list
    discarding: bool


class Session:
    """One live session window of the key: what ``KeyDriver`` keeps in its ``WindowRecord``
    and contents for it (``fn_state`` is what a ``Context`` reads)."""

    __slots__ = ("armed", "cleanup", "contents", "fn_state", "index", "mx", "on_time",
                 "pending", "window")

    def __init__(self, window: TimeWindow, cleanup: int) -> None:
        self.window, self.cleanup = window, cleanup
        self.mx = window.max_timestamp      # bounds never change: a merge makes a new session
        self.contents: Any = None
        self.fn_state: dict = {}
        self.index = 0
        self.on_time = self.pending = self.armed = False


class SessionWalker(PaneWalkBase):
    """Walks the session rows of one partition (see the module docstring;
    ``walker.make_walker(config, SessionWalker)`` is its ``mapInArrow`` function)."""

    def __init__(self, config: SessionWalkConfig) -> None:
        super().__init__(config.walk, discarding=config.discarding,
                         watermark_before=config.watermark_before)
        logic = self.logic
        self.assigner, self.runner = logic.assigner, logic.runner
        self.gap, self.lateness = logic.assigner.gap_ms, logic.allowed_lateness_ms
        self.dynamic = logic.assigner.gap_fn is not None     # a gap per element
        self.uses_context = self.runner.uses_context
        self.sessions: list[Session] = []     # live, sorted by start, pairwise non-touching
        self.starts: list[int] = []
        # (b*, t, start, seq, session): end timers; (cleanup, start, seq, session): cleanups
        self.timers: list[tuple[int, int, int, int, Session]] = []
        self.cleanups: list[tuple[int, int, int, Session]] = []
        self.seq = 0
        self.firing_max = 0

    # --- per key ----------------------------------------------------------------------------
    def _start(self, key: tuple, out_key: tuple) -> None:
        super()._start(key, out_key)
        self.sessions, self.starts, self.timers, self.cleanups = [], [], [], []

    def _finish_key(self) -> None:
        if self.scope is None:
            return
        self._advance(self.n_bundles)
        if self.config.finalize:
            self._clock_at(self.n_bundles, PHASE_FINISH)
            timers, self.timers = sorted(self.timers, key=lambda t: t[1:3]), []
            for _, time, _, _, session in timers:    # the watermark at +inf
                if session.armed:       # not merged away or fired since
                    self._timer(session, time)
            for session in self.sessions:         # KeyDriver.finish's last panes
                if session.pending and session.contents is not None:
                    self._fire(session, pane_timing(session.mx, MAX_TS,
                                                    session.on_time, True), True)
        self.scope = None

    def _advance(self, b: int) -> None:
        """Steps 3-4 of every bundle before ``b``: the end timers due by then, in order, then
        the sessions the watermark cleaned up."""
        self.b_open = b
        timers = self.timers
        while timers and timers[0][0] < b:
            b_star, time, _, _, session = heapq.heappop(timers)
            if session.armed:
                self._clock_at(b_star, PHASE_TIMERS_WM)
                self._timer(session, time)
        if b == 0:
            return
        watermark, heap = self.W[min(b, self.n_bundles) - 1], self.cleanups
        while heap and heap[0][0] <= watermark:
            session = heapq.heappop(heap)[3]
            i = bisect_right(self.starts, session.window.start) - 1
            if i >= 0 and self.sessions[i] is session:
                self._remove(i)

    def _timer(self, session: Session, time: int) -> None:
        """``EventTimeTrigger.on_event_time`` at the session's end: FIRE (caused by the end)."""
        session.armed = False
        mx = session.mx
        self._fire(session, pane_timing(mx, time, session.on_time, True),
                   time == cleanup_time(mx, self.lateness, True))

    def _meta(self, kind: str) -> tuple:
        """A firing's ordering number is its window's max (``session_sql.py`` numbers its
        firings so): a key's firings of one step are in end-timer order."""
        head = super()._meta(kind)
        return (*head[:4], self.firing_max) if kind == "firing" else head

    def _fire(self, session: Session, timing: Timing, is_final: bool) -> None:
        """``KeyDriver._emit`` for this trigger: nothing for an empty pane; the function once
        over the contents; the next pane index; discarding empties the pane."""
        contents = session.contents
        if contents is None:
            return
        window, index = session.window, session.index
        context = Context(self.scope, window, session, pane_info(index, timing, is_final)) \
            if self.uses_context else None
        results = self.runner.results(self.scope.key_arg, window, context, contents)
        value = timing._value_
        self.firing_max = session.mx
        for result in results:
            self.emit_firing(firing_row(self.logic, self.key_row, window, index, value,
                                        result, is_final, False))
        session.index, session.pending = index + 1, False
        if timing is _ON_TIME:
            session.on_time = True
        if self.discarding:
            self.live -= len(contents) if type(contents) is list else 0
            session.contents = None

    # --- sessions ---------------------------------------------------------------------------
    def _insert(self, session: Session) -> None:
        i = bisect_right(self.starts, session.window.start)
        self.sessions.insert(i, session)
        self.starts.insert(i, session.window.start)
        self.live += 1
        self.seq += 1
        heapq.heappush(self.cleanups, (session.cleanup, session.window.start, self.seq,
                                       session))

    def _remove(self, i: int) -> Session:
        session = self.sessions.pop(i)
        del self.starts[i]
        contents = session.contents
        self.live -= 1 + (len(contents) if type(contents) is list else 0)
        session.armed = False
        return session

    def _arm(self, session: Session) -> None:
        if not session.armed:
            session.armed = True
            mx = session.mx
            self.seq += 1
            heapq.heappush(self.timers, (self._bundle_reaching(mx), mx, session.window.start,
                                         self.seq, session))

    def _bundle_reaching(self, t: int) -> int:
        """The first bundle whose watermark reaches ``t`` (``n_bundles``: none)."""
        return bisect_left(self.W, t)

    def _window_for(self, new: TimeWindow, watermark: int) -> Session | None:
        """``SessionMerging._add_merging_window`` and the lateness check of
        ``KeyDriver.process_element`` for ``new``: the session the element goes to, or
        ``None`` when it is late (the window merged with nothing and is past its cleanup)."""
        starts, sessions = self.starts, self.sessions
        hi = bisect_right(starts, new.end)
        lo = hi
        while lo > 0 and sessions[lo - 1].window.intersects(new):
            lo -= 1
        if lo == hi:
            cleanup = cleanup_time(new.max_timestamp, self.lateness, True)
            if is_late(cleanup, watermark, True):
                return None
            session = Session(new, cleanup)
            self._insert(session)
            return session
        members = sessions[lo:hi]
        windows = [s.window for s in members]
        (cover, _), = self.assigner.merge_windows([*windows, new])
        if len(members) == 1 and cover == windows[0]:
            return members[0]          # inside one session: that session, no merge
        session = Session(cover, cleanup_time(cover.max_timestamp, self.lateness, True))
        session.pending = any(s.pending for s in members)
        if cover.max_timestamp > watermark:      # EventTimeTrigger.on_merge
            self._arm(session)
        SessionMerging._merge_fn_state(session, members)   # type: ignore[arg-type]
        for _ in members:
            self._remove(lo)
        runner, target = self.runner, members[0].contents
        try:
            for other in members[1:]:
                target = runner.merge(target, other.contents)
        except WindowlibError:
            raise
        except Exception as exc:            # the aggregate function's merge()
            raise function_failed(runner.spec.producer, self.scope.key_arg, cover,
                                  exc) from exc
        session.contents = target
        self._insert(session)
        self.live += len(target) if type(target) is list else 0
        return session

    def _element(self, row: dict, ts: int, b: int, sub: int) -> bool:
        """Step 2 for one element of bundle ``b``; ``False`` when it is late."""
        watermark = self.w_before[b]
        if self.dynamic:
            try:
                (window,) = self.assigner.assign_windows(row, ts, self.P[b])
            except WindowlibError:
                raise
            except Exception as exc:        # the user's gap function
                raise assignment_failed(self.assigner, self.scope.key_arg, ts, exc) from exc
        else:
            window = TimeWindow(ts, ts + self.gap)
        session = self._window_for(window, watermark)
        if session is None:
            return False
        runner = self.runner
        try:
            session.contents = runner.add(session.contents, row, ts)
        except WindowlibError:
            raise
        except Exception as exc:        # the user's reduce/aggregate
            raise function_failed(runner.spec.producer, self.scope.key_arg, session.window,
                                  exc) from exc
        if runner.buffered:
            self.live += 1
        session.pending = True
        if session.mx <= watermark:     # EventTimeTrigger.on_element: FIRE
            position = self.walk
            position.b, position.phase, position.sub = b, PHASE_ELEMENTS, sub
            self.clock.watermark, self.clock.processing_time = watermark, self.P[b]
            self._fire(session, pane_timing(session.mx, watermark,
                                            session.on_time, False), False)
        else:
            self._arm(session)
        return True

    # --- the partition loop -----------------------------------------------------------------
    def run(self, batches: Iterator[Any]) -> Iterator[Any]:
        yield from self.walk_rows(batches, (SUB, TS))
        yield self.flush()

    def _row(self, row: dict, i: int, b: int, cols: list, raw_cols: list,
             extra: list) -> None:
        """One element: into its session, or to the late output as it was given."""
        subs, ts_col = extra
        if not self._element(row, ts_col[i], b, subs[i]):
            position = self.walk
            position.b, position.phase, position.sub = b, PHASE_ELEMENTS, subs[i]
            raw = row if cols is raw_cols else \
                dict(zip(self.config.user_columns, (col[i] for col in raw_cols)))
            self.emit_element("late", raw, TOO_LATE, finite_clock(self.w_before[b]))
        elif self.live > self.config.max_key_state:
            raise key_state_limit(self.key, self.live, self.config.max_key_state)
