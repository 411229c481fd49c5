"""The pane path's walker: runs in the Python workers over rows that Spark SQL already decided.

Input (``panes.py``): per key, in the reference engine's order (bundle, step phase, arrival
order, window, elements before the firings they cause), two kinds of rows:

- an **element row** (``pane_index`` null): one kept (element, window) pair — appended to that
  window's buffer;
- a **firing row**: a firing of one window with its pane index, timing, ``is_final`` and clocks
  (computed by the native firing builders, so the trigger's rules have one owner there) — the
  window function runs once, over the buffer: every element since the window opened
  (accumulating) or since its last firing (discarding: the buffer is emptied).

So Python runs per firing (plus a list append per element); no trigger, timer or lateness
logic runs here. The function's result rows, conformed and built by the core
(``FunctionRunner.results``, ``core.outputs.firing_row``), and its side outputs are written as
the general path's tagged rows (``walker.Walker``'s output half). ``context.window_state`` lives
per window and ``context.global_state`` per key, visited in firing order as on every engine.

**Memory**: a key's buffered elements and windows; a window is dropped once the watermark
passes its cleanup time (no firing can follow) or after its final firing. A key above
``max_key_state`` live entries fails with ``KEY_STATE_LIMIT``, as on the general path.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import ExecutionError
from windowlib.core.evictors import TimestampedValue
from windowlib.core.functions import Context
from windowlib.core.lateness import cleanup_time
from windowlib.core.outputs import firing_row
from windowlib.core.pane import Timing, pane_info
from windowlib.core.runner import FunctionRunner
from windowlib.core.time import MIN_TS
from windowlib.core.windows import TimeWindow
from windowlib.engines.spark.bundles import TS
from windowlib.engines.spark.columns import ABSENT, FLUSH_ROWS, PHASE, SUB, B
from windowlib.engines.spark.walker import WalkConfig, Walker, batch_columns, naive_type

# firing columns of the pane path's input rows (null on element rows)
WS = "__wl_ws"
FIRING_COLUMNS = ("pane_index", "timing", "is_final", "watermark", "processing_time")


@dataclass
class PaneWalkConfig:
    """What the pane walker needs besides the general path's ``WalkConfig``: window size and
    allowed lateness (cleanup), and the watermark each bundle's elements meet."""

    walk: WalkConfig
    size_ms: int
    lateness_ms: int
    watermark_before: list


def make_pane_walker(config: PaneWalkConfig) -> Any:
    def walk(batches: Iterator[Any]) -> Iterator[Any]:
        yield from PaneWalker(config).run_panes(batches)

    return walk


class _KeyScope:
    """What a ``Context`` reads from its driver: the clocks, the key's global state, the
    pipeline (side outputs are conformed by its runner) and where side outputs go."""

    __slots__ = ("clock", "global_state", "key_arg", "logic", "sink")

    def __init__(self, walker: PaneWalker, key_arg: Any) -> None:
        self.clock, self.logic, self.sink = walker.clock, walker.logic, walker.sink
        self.global_state: dict = {}
        self.key_arg = key_arg


class _WindowScope:
    """A window's buffer and its ``window_state`` (``fn_state``, as ``Context`` reads it)."""

    __slots__ = ("buffer", "fn_state")

    def __init__(self) -> None:
        self.buffer: list[TimestampedValue] = []
        self.fn_state: dict = {}


class _Position:
    """Where the walk is (the tagged rows' ordering columns)."""

    __slots__ = ("b", "phase", "sub")

    def __init__(self) -> None:
        self.b = self.phase = self.sub = 0


class PaneWalker(Walker):
    """Walks the pane path's rows of one partition (see the module docstring)."""

    def __init__(self, config: PaneWalkConfig) -> None:
        super().__init__(config.walk)
        self.size = config.size_ms
        self.lateness = config.lateness_ms
        self.w_before = config.watermark_before
        # buffered: the contents are the pane's elements, whatever the function's kind
        self.runner = FunctionRunner(self.logic.runner.spec, buffered=True)
        self.discarding = self.logic.accumulation == "discarding"
        self.walk = _Position()   # type: ignore[assignment]
        self.scope: _KeyScope | None = None
        self.windows: dict[int, _WindowScope] = {}
        self.cleanups: list[tuple[int, int]] = []
        self.live = 0             # buffered elements + open windows of the key
        self.b_seen = -1

    # --- per key ----------------------------------------------------------------------------
    def _start(self, key: tuple, out_key: tuple) -> None:
        self.key, self.out_key = key, out_key
        self.scope = _KeyScope(self, self.logic.key_argument(key))
        self.key_row = dict(zip(self.key_columns, key))
        self.windows, self.cleanups, self.live, self.b_seen = {}, [], 0, -1

    def _window(self, start: int) -> _WindowScope:
        scope = self.windows.get(start)
        if scope is None:
            scope = self.windows[start] = _WindowScope()
            heapq.heappush(self.cleanups, (cleanup_time(start + self.size - 1, self.lateness,
                                                        True), start))
            self.live += 1
        return scope

    def _drop(self, start: int) -> None:
        scope = self.windows.pop(start, None)
        if scope is not None:
            self.live -= 1 + len(scope.buffer)

    def _enter_bundle(self, b: int) -> None:
        """Drop the windows the watermark met by bundle ``b``'s elements has cleaned up."""
        self.b_seen = b
        if b >= len(self.w_before):
            return
        watermark, heap = self.w_before[b], self.cleanups
        while heap and heap[0][0] <= watermark:
            self._drop(heapq.heappop(heap)[1])

    def _check_live(self) -> None:
        if self.live <= self.config.max_key_state:
            return
        raise ExecutionError(
            f"key {self.key!r} holds {self.live} live state entries (buffered elements + open "
            f"windows), above the limit max_key_state={self.config.max_key_state}; raise "
            "max_key_state, pre-aggregate (aggregate/reduce instead of process/apply), or add "
            "a trigger that purges", code="KEY_STATE_LIMIT")

    def _fire(self, start: int, index: int, timing: str, is_final: bool) -> None:
        window = TimeWindow(start, start + self.size)
        scope = self.windows.get(start)
        record = scope if scope is not None else _WindowScope()
        contents = record.buffer or None
        context = Context(self.scope, window, record, pane_info(index, Timing(timing),
                                                                is_final)) \
            if self.runner.uses_context else None
        results = self.runner.results(self.scope.key_arg, window, context, contents)
        for result in results:
            self.emit_firing(firing_row(self.logic, self.key_row, window, index, timing,
                                        result, is_final, False))
        if scope is None:
            return
        if is_final:
            self._drop(start)
        elif self.discarding:
            self.live -= len(scope.buffer)
            scope.buffer = []

    # --- the partition loop -----------------------------------------------------------------
    def run_panes(self, batches: Iterator[Any]) -> Iterator[Any]:
        pa = self.pa
        config = self.config
        user_columns = config.user_columns
        json_columns = set(config.json_columns)
        key_idx = [user_columns.index(c) for c in self.key_columns]
        clock, position = self.clock, self.walk
        naive_schema = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            if naive_schema is None:
                naive_schema = pa.schema([pa.field(f.name, naive_type(f.type), f.nullable)
                                          for f in batch.schema])
            if naive_schema != batch.schema:
                batch = batch.cast(naive_schema)
            cols, raw_cols = batch_columns(batch, user_columns, json_columns)
            starts, bundles, phases, subs, ts_col = (
                batch.column(c).to_pylist() for c in (WS, B, PHASE, SUB, TS))
            panes, timings, finals, watermarks, times = (
                batch.column(c).to_pylist() for c in FIRING_COLUMNS)
            absent = batch.column(ABSENT).to_pylist() if config.has_absent else None
            for i in range(batch.num_rows):
                key = tuple(cols[j][i] for j in key_idx)
                if key != self.key or self.scope is None:
                    self._start(key, tuple(raw_cols[j][i] for j in key_idx))
                    if len(self.rows) >= FLUSH_ROWS:
                        yield self.flush()
                b = bundles[i]
                if b != self.b_seen:
                    self._enter_bundle(b)
                start, index = starts[i], panes[i]
                if index is None:       # an element of window ``start``
                    row = {c: col[i] for c, col in zip(user_columns, cols)}
                    if absent is not None and absent[i]:
                        for c in absent[i]:
                            row.pop(c, None)
                    self._window(start).buffer.append(TimestampedValue(row, ts_col[i]))
                    self.live += 1
                    self._check_live()
                    continue
                position.b, position.phase, position.sub = b, phases[i], subs[i]
                wm, pt = watermarks[i], times[i]
                clock.watermark = MIN_TS if wm is None else wm
                clock.processing_time = MIN_TS if pt is None else pt
                self._fire(start, index, timings[i], finals[i])
            if len(self.rows) >= FLUSH_ROWS:
                yield self.flush()
        yield self.flush()
