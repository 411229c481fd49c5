"""A ``process`` or ``apply`` window function called once per firing over
``pane_schedule``'s NumPy firings. Python runs per input row only to build the element value
the per-element walk builds (its row dict), and per firing only for the call; the firing
rows are written in Arrow from the firings' columns (``pane_batches.batch_firings``), not as
one tuple per row.

Equal to the per-element walk (``pane_walker.PaneWalker``) because each call gets what the
walk would give it, in the same order (``pane_schedule`` orders the firings as the walk
emits them):

- the key's scope (``global_state``, the key argument) per key run, and one
  ``window_state`` per window;
- the pane's elements in arrival order (accumulating: all of the window's so far;
  discarding: those since its last firing);
- the firing's clocks and position, which ``Context`` and side outputs read from the walker;
- the result rows checked as ``Walker.emit_result`` checks them (``check_result_columns``,
  once the chunk's calls are done: a conflict fails the run all the same) and numbered after
  the side outputs the call wrote (``N``), as the walk numbers them.

``tests/spark/test_pane_schedule.py`` compares both walks' outputs row for row.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import filterfalse
from typing import Any

import numpy as np

from windowlib.core.batch import PANE_ID
from windowlib.core.functions import Context
from windowlib.core.outputs import RESERVED_COLUMNS, check_result_columns
from windowlib.core.pane import PaneInfo, Timing, pane_info
from windowlib.core.windows import time_window_of
from windowlib.engines.spark.columns import ABSENT, FLUSH_ROWS
from windowlib.engines.spark.json_rows import json_texts
from windowlib.engines.spark.pane_batches import KEY_ARRAYS, batch_firings, key_arrays
from windowlib.engines.spark.pane_records import KeyScope
from windowlib.engines.spark.walk_values import batch_columns, py_values, rows_at

__all__ = ["TIMINGS", "firing_calls"]

# the firings' timing codes (``pane_schedule``'s ``kind`` column) index this
TIMINGS = (Timing.EARLY, Timing.ON_TIME, Timing.LATE)


# every ``PaneInfo`` of a pane index below 64, at ``index * 6 + kind * 2 + is_last``
_PANES = [pane_info(index, timing, is_last) for index in range(64) for timing in TIMINGS
          for is_last in (False, True)]


def _at_firing(column: str) -> property:
    """A ``_FiringCursor`` attribute: ``column``'s value for the firing being called."""
    return property(lambda cursor: getattr(cursor, column)[cursor.i])


class _FiringCursor:
    """The firing being called, as its ``Context`` and side outputs read it: ``i`` indexes the
    chunk's firing columns. It stands in for the walker's clock (``watermark``,
    ``processing_time``) and position (``b``, ``phase``, ``sub``) during the calls, and is
    every ``Context``'s window record: ``fn_state`` is the firing's window's ``window_state``
    values, made on first use (one dict per window). One attribute set per firing instead of
    five, and no state dict for a window whose function never reads it."""

    __slots__ = ("_b", "_phase", "_processing", "_states", "_sub", "_watermark", "_window",
                 "i")

    watermark = _at_firing("_watermark")
    processing_time = _at_firing("_processing")
    b = _at_firing("_b")
    phase = _at_firing("_phase")
    sub = _at_firing("_sub")

    def __init__(self, firings: dict) -> None:
        self.i = 0
        self._window, self._b, self._phase, self._sub, self._watermark, self._processing = (
            firings[k].tolist() for k in ("window", "b", "phase", "sub", "watermark",
                                          "processing"))
        self._states: dict[int, dict] = {}

    @property
    def fn_state(self) -> dict:
        window = self._window[self.i]
        state = self._states.get(window)
        if state is None:
            state = self._states[window] = {}
        return state


def firing_calls(walker: Any, firings: dict, table: Any, starts: np.ndarray,
                 meta: dict[str, Any]) -> Iterator[Any]:
    """The output of one chunk of complete key runs (``table``, runs beginning at
    ``starts``) whose ``firings`` ``pane_schedule`` computed: the function called per firing
    (``meta``: the firings' columns of the tagged output, ``pane_schedule.firing_meta``
    without the key arrays), then the firing rows as one batch."""
    config = walker.config
    user_columns = config.user_columns
    batch = table.combine_chunks().to_batches()[0]
    cols, raw_cols = batch_columns(batch, user_columns, set(config.json_columns))
    key_idx = [user_columns.index(c) for c in walker.key_columns]
    first_rows = starts.tolist()
    keys = [tuple(cols[j][s] for j in key_idx) for s in first_rows]
    out_keys = [tuple(raw_cols[j][s] for j in key_idx) for s in first_rows]
    elements = _elements(cols, firings["order"], user_columns,
                         py_values(batch.column(ABSENT)) if config.has_absent else None)
    rows, owner, numbers = _call_each(walker, firings, meta["is_final"].tolist(), elements,
                                      keys, out_keys)
    if rows:
        per_run = key_arrays(walker, [list(c) for c in zip(*out_keys)])
        queued = {**meta, KEY_ARRAYS: {c: a.take(firings["run"]) for c, a in per_run.items()}}
        yield batch_firings(walker, queued, _results_table(walker, rows, owner),
                            numbers=numbers)
    if len(walker.rows) >= FLUSH_ROWS:     # side outputs
        yield walker.flush()


def _elements(cols: list[list], order: np.ndarray, user_columns: tuple,
              absent: list | None) -> list[dict]:
    """Each row's element value as the walk buffers it (a row dict of the user columns,
    absent ones left out), in ``order``."""
    positions = order.tolist()
    elements = rows_at(user_columns)(positions, *cols)
    if absent is not None:
        for element, j in zip(elements, positions):
            for c in absent[j] or ():
                element.pop(c, None)
    return elements


def _call_each(walker: Any, firings: dict, is_final: list, elements: list, keys: list,
               out_keys: list) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """The function called per firing, in order (``is_final``: per firing, the pane's
    ``is_last``): the result rows, the firing each belongs to and each row's number
    (``N``). The firings' windows, panes and element lists are built before the calls, in C
    where it can; during them ``_FiringCursor`` stands in for the walker's clock and
    position, which are left at the last firing's values afterwards, as the walk leaves
    them."""
    results, size = walker.runner.value_results, walker.size
    uses_context = walker.uses_context
    clock, position, logic = walker.clock, walker.walk, walker.logic
    windows = _windows(firings["ws"], size)
    panes = _panes(firings["index"], firings["kind"], np.asarray(is_final, dtype=np.int64))
    values = _pane_values(elements, firings["first"], firings["last"])
    cursor = _FiringCursor(firings)
    n = len(windows)
    rows: list[dict] = []
    counts = [0] * n          # result rows per firing
    after_side = [0] * n      # the row number before them
    current, scope, key_arg = -1, None, None
    walker.clock = walker.walk = cursor
    try:
        for i, (r, bounds, pane, pane_values) in enumerate(zip(firings["run"].tolist(),
                                                               windows, panes, values)):
            if r != current:
                current = r
                walker.out_key = out_keys[r]
                scope = KeyScope(walker, logic.key_argument(keys[r]))
                key_arg = scope.key_arg
            cursor.i = i
            produced = results(key_arg, bounds, Context(scope, bounds, cursor, pane)
                               if uses_context else None, pane_values)
            if produced:
                rows.extend(produced)
                counts[i] = len(produced)
                after_side[i] = walker.n      # the call's side outputs took their numbers
                walker.n += len(produced)
    finally:
        walker.clock, walker.walk = clock, position
        if n:
            clock.watermark, clock.processing_time = cursor.watermark, cursor.processing_time
            position.b, position.phase, position.sub = cursor.b, cursor.phase, cursor.sub
    per_firing, before = np.array(counts, dtype=np.int64), np.array(after_side, dtype=np.int64)
    owner = np.repeat(np.arange(n), per_firing)
    first_number = np.repeat(before + 1 - np.cumsum(per_firing) + per_firing, per_firing)
    return rows, owner, first_number + np.arange(len(owner))


def _windows(starts: np.ndarray, size: int) -> list:
    """Each firing's ``TimeWindow`` (``starts``: their starts): one object per distinct
    start, shared by its firings (a window is an immutable tuple), when starts repeat."""
    distinct = np.unique(starts)
    if 2 * len(distinct) > len(starts):
        return list(map(time_window_of, zip(starts.tolist(), (starts + size).tolist())))
    by_start = {s: time_window_of((s, s + size)) for s in distinct.tolist()}
    return list(map(by_start.__getitem__, starts.tolist()))


def _pane_values(elements: list, first: np.ndarray, last: np.ndarray) -> list[list]:
    """Each firing's element values, ``elements[first:last + 1]``: a new list per firing (the
    function may keep it)."""
    longer = np.flatnonzero(last > first)
    if 2 * len(longer) > len(first):
        return list(map(elements.__getitem__, map(slice, first.tolist(), (last + 1).tolist())))
    values = [[value] for value in map(elements.__getitem__, first.tolist())]
    for i, begin, end in zip(longer.tolist(), first[longer].tolist(),
                             (last[longer] + 1).tolist()):
        values[i] = elements[begin:end]
    return values


def _panes(index: np.ndarray, kind: np.ndarray, is_last: np.ndarray) -> list[PaneInfo]:
    """Each firing's ``PaneInfo`` (``kind`` indexes ``TIMINGS``): looked up below index 64."""
    small = index < 64
    table = _PANES
    panes = [table[code] for code in np.where(small, index * 6 + kind * 2 + is_last,
                                              0).tolist()]
    for i in np.flatnonzero(~small).tolist():
        panes[i] = pane_info(int(index[i]), TIMINGS[kind[i]], bool(is_last[i]))
    return panes


def _results_table(walker: Any, rows: list[dict], owner: np.ndarray) -> Any:
    """The result rows as a table of ``pane_batches.batch_firings``' input: the firing each
    belongs to (``PANE_ID``) and the result columns (JSON text by ``json_rows``, or the
    declared columns)."""
    pa = walker.pa
    columns: dict[str, Any] = {PANE_ID: pa.array(owner)}
    json_mode = walker.result_mode == "json"
    skip = walker.skip_in_json if json_mode else frozenset()
    # one pass finds the rare rows to look at: a reserved column is RESULT_COLUMN_CONFLICT;
    # key columns are dropped from the JSON text (the rows are the runner's own copies)
    for row in filterfalse((RESERVED_COLUMNS | skip).isdisjoint, rows):
        check_result_columns(row)
        for name in skip.intersection(row):
            del row[name]
    if json_mode:
        columns[walker.result_names[0]] = json_texts(rows)
    else:
        schema = walker.arrow_schema
        for name in walker.result_names:
            columns[name] = walker.column_array(schema.field(name),
                                                [r.get(name) for r in rows])
    return pa.table(columns)
