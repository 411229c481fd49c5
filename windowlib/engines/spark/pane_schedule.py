"""The pane walker's firings computed with NumPy, many key runs at once, for the common case:
a ``BatchWindowFunction`` without an evictor over tumbling or sliding event-time windows
whose trigger is the window's end with optional count early and late firings (accumulating
or discarding; ``eligible``). Python runs per key run (its key values) and per
``process_panes`` call, not per element or per firing.

Those rules (``pane_walker.py``'s module docstring) make every window independent of the
others — no firing of one window depends on another window's elements — so the firings of a
chunk of complete key runs are computed per window from its elements in arrival order:

- an element of bundle ``b`` is on time when ``W_{b-1} < max``; on-time elements come before
  late ones (bundles ascend within a key, the watermark never falls). The ``n``-th, ``2n``-th
  ... on-time element fires EARLY, the ``m``-th, ``2m``-th ... late element fires LATE, both in
  step 2 of its bundle, with that bundle's clocks;
- a window with an on-time element fires ON_TIME after its last on-time element, in step 3
  of the first bundle whose watermark reaches ``max`` (at the end of a finalized input when
  none does, with null clocks; not at all otherwise) — discarding, only when on-time elements
  came after its last early firing;
- a window's panes are numbered in that order; a pane holds the window's elements up to the
  firing element (accumulating) or since its previous firing (discarding);
- firings are ordered as the per-element walk emits them: key run, bundle, step, then the
  element's input row (step 2) or the window's start (step 3).

A window's cleanup only frees memory here: the SQL that keeps (element, window) rows drops
every element its window's cleanup would have dropped (a chunk where that would not hold is
walked per element). A chunk holding a key run of more than half ``max_key_state`` rows is
walked per element too, where ``KEY_STATE_LIMIT`` is checked as the elements arrive (a run
of ``r`` rows never holds more than ``2r`` entries), and so is the rest of a partition
once a single key run outgrows ``GATHER_ROWS`` (memory stays bounded by a chunk).

``tests/spark/test_pane_schedule.py`` compares the output with the per-element walk's, row
for row.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

import numpy as np

from windowlib.core.pane import Timing
from windowlib.core.time import MAX_TS, MIN_TS
from windowlib.engines.spark.columns import (
    PHASE,
    PHASE_ELEMENTS,
    PHASE_FINISH,
    PHASE_TIMERS_WM,
    SUB,
    B,
)
from windowlib.engines.spark.native_parts import WS
from windowlib.engines.spark.pane_batches import (
    BATCH_ROWS,
    KEY_ARRAYS,
    key_arrays,
    process_queued,
)
from windowlib.engines.spark.pane_calls import TIMINGS, firing_calls
from windowlib.engines.spark.walk_values import py_values

__all__ = ["CHUNK_ROWS", "GATHER_ROWS", "eligible", "stable_lexsort", "walk"]

CHUNK_ROWS = 65_536        # input rows gathered before the complete key runs are walked
GATHER_ROWS = 4 * CHUNK_ROWS     # a key run longer than this: the rest per element
_TIMINGS = np.array([t.value for t in TIMINGS], dtype=object)
_EARLY, _ON_TIME, _LATE = (TIMINGS.index(t) for t in (Timing.EARLY, Timing.ON_TIME,
                                                        Timing.LATE))


def eligible(walker: Any) -> bool:
    """Whether ``walker`` (a ``PaneWalker``) can compute its firings here: a batch function
    whose panes hold input row numbers, or a ``process`` or ``apply`` function (called per
    firing), without an evictor, over event-time windows of one size with only the
    end-of-window timer and count early and late firings."""
    return bool((walker.arrow_elements or walker.runner.takes_values)
                and walker.evictor is None
                and walker.end_timer and walker.every is None
                and walker.early_first is None and not walker.global_window)


def walk(walker: Any, batches: Iterator[Any]) -> Iterator[Any]:
    """The output batches of ``walker``'s partition (``batches``: rows sorted by key, bundle,
    arrival, window), but the final ``flush`` (``PaneWalker.run``)."""
    import pyarrow as pa

    gathered: list = []
    rows = 0
    batches = iter(batches)
    for batch in batches:
        batch, passed = walker.pass_through(batch)
        if passed is not None:
            yield passed
        if batch.num_rows == 0:
            continue
        gathered.append(walker.naive_batch(batch))
        rows += batch.num_rows
        if rows < CHUNK_ROWS:
            continue
        table = pa.Table.from_batches(gathered)
        starts = _run_starts(table, walker.key_columns)
        last = int(starts[-1])
        if last > 0:
            yield from _chunk(walker, table.slice(0, last), starts[:-1])
            table = table.slice(last)
        gathered, rows = table.to_batches(), table.num_rows
        if rows > GATHER_ROWS:       # one key run this long: the rest per element
            yield from walker.walk_each(chain(gathered, batches))
            return
    if rows:
        table = pa.Table.from_batches(gathered)
        yield from _chunk(walker, table, _run_starts(table, walker.key_columns))


def _run_starts(table: Any, key_columns: tuple) -> np.ndarray:
    """The first row of each key run of ``table``: where a key value differs from the row
    before's, as the per-element walk compares them (Python's ``!=``: Arrow's for integers,
    strings, booleans and timestamps without nulls, where the two agree)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    columns = [table.column(c).combine_chunks() for c in key_columns]
    if all(a.null_count == 0 and (pa.types.is_integer(a.type) or pa.types.is_string(a.type)
                                  or pa.types.is_large_string(a.type)
                                  or pa.types.is_boolean(a.type)
                                  or pa.types.is_timestamp(a.type)) for a in columns):
        changed = np.zeros(max(n - 1, 0), dtype=bool)
        for a in columns:
            changed |= pc.not_equal(a.slice(1), a.slice(0, n - 1)).to_numpy(
                zero_copy_only=False)
        return np.concatenate([[0], np.flatnonzero(changed) + 1]).astype(np.int64)
    values = [py_values(a) for a in columns]
    keys = values[0] if len(values) == 1 else list(zip(*values))
    return np.array([0, *[i for i in range(1, n) if keys[i] != keys[i - 1]]], dtype=np.int64)


def _chunk(walker: Any, table: Any, starts: np.ndarray) -> Iterator[Any]:
    """The output of complete key runs (``table``, runs beginning at ``starts``)."""
    n = table.num_rows
    lengths = np.diff(np.append(starts, n))
    firings = None if 2 * int(lengths.max()) > walker.config.max_key_state else \
        _firings(walker, table, lengths)
    if firings is None:     # the per-element walk decides (KEY_STATE_LIMIT, or a kept row
        yield from walker.walk_each(table.to_batches())     # past its window's cleanup)
        return
    if not walker.batching:         # a function called per firing
        yield from firing_calls(walker, firings, table, starts, firing_meta(walker, firings))
        return
    key_values = [py_values(table.column(c).take(starts).combine_chunks())
                  for c in walker.key_columns]
    out_keys = list(zip(*key_values)) if key_values else [()] * len(starts)
    elements = table.select(list(walker.config.user_columns))
    yield from _calls(walker, firings, elements, out_keys, key_arrays(walker, key_values))


def _firings(walker: Any, table: Any, run_lengths: np.ndarray) -> dict | None:
    """Each firing of the chunk's windows, in output order: its run, window start, timing,
    pane index, position and clocks, and its pane's rows (``first``/``last`` positions in
    ``order``, the chunk's rows sorted by run, window and arrival). ``None`` when a kept row
    is past its window's cleanup."""
    size, lateness = walker.size, walker.lateness
    b = table.column(B).to_numpy().astype(np.int64)
    sub = table.column(SUB).to_numpy().astype(np.int64)
    ws = table.column(WS).to_numpy().astype(np.int64)
    run = np.repeat(np.arange(len(run_lengths)), run_lengths)
    order = stable_lexsort((ws, run))      # by run, window, arrival
    b, sub, ws, run = b[order], sub[order], ws[order], run[order]
    mx = ws + (size - 1)
    met = np.asarray(walker.w_before, dtype=np.int64)[b]      # the watermark each row met
    if np.any(met >= np.minimum(mx, MAX_TS - lateness) + lateness):
        return None
    on = met < mx
    # windows: runs of equal (run, start) in ``order``
    new = np.ones(len(ws), dtype=bool)
    new[1:] = (run[1:] != run[:-1]) | (ws[1:] != ws[:-1])
    first = np.flatnonzero(new)
    window = np.cumsum(new) - 1
    on_rank = _rank_in_window(on, first, window)
    late_rank = _rank_in_window(~on, first, window)
    early_every = walker.early_every
    fires = ~on & (late_rank % walker.late_every == 0)
    if early_every:
        fires |= on & (on_rank % early_every == 0)
    pos = np.flatnonzero(fires)
    kind = np.where(on[pos], _EARLY, _LATE)
    # ON_TIME: after a window's last on-time row, when the pane holds one
    ends = np.append(first[1:], len(ws))
    n_on = on_rank[ends - 1]       # on-time rows come first in a window
    fires_on_time = n_on > 0
    if walker.discarding and early_every:
        fires_on_time &= n_on % early_every != 0
    W = np.asarray(walker.W, dtype=np.int64)
    due = np.searchsorted(W, mx[first], side="left")     # the first bundle reaching max
    n_bundles = walker.n_bundles
    if not walker.config.finalize:
        fires_on_time &= due < n_bundles
    on_windows = np.flatnonzero(fires_on_time)
    pos = np.concatenate([pos, first[on_windows] + n_on[on_windows] - 1])
    kind = np.concatenate([kind, np.full(len(on_windows), _ON_TIME)])
    # a window's panes in order: by position, EARLY before ON_TIME at the same row
    by_window = stable_lexsort((kind, pos))
    pos, kind = pos[by_window], kind[by_window]
    win = window[pos]
    starts_window = np.ones(len(pos), dtype=bool)
    starts_window[1:] = win[1:] != win[:-1]
    index = np.arange(len(pos)) - np.maximum.accumulate(
        np.where(starts_window, np.arange(len(pos)), 0))
    pane_first = first[win]
    if walker.discarding:
        pane_first = np.where(starts_window, pane_first, np.roll(pos, 1) + 1)
    # clocks and position: step 2 of the element's bundle, or the ON_TIME timer's step
    timer = kind == _ON_TIME
    fire_b = np.where(timer, due[win], b[pos])
    finishing = timer & (fire_b >= n_bundles)
    P = np.asarray(walker.P, dtype=np.int64)
    in_run = np.minimum(fire_b, n_bundles - 1)
    watermark = np.where(timer, W[in_run], met[pos])
    processing = P[in_run]
    watermark[finishing] = MIN_TS
    processing[finishing] = MIN_TS
    phase = np.where(timer, np.where(finishing, PHASE_FINISH, PHASE_TIMERS_WM),
                     PHASE_ELEMENTS)
    fire_sub = np.where(timer, 0, sub[pos])
    tie = np.where(timer, ws[pos], order[pos])     # step 2: input row; step 3: start
    output = stable_lexsort((tie, phase, fire_b, run[pos]))
    return {
        "run": run[pos][output], "ws": ws[pos][output], "kind": kind[output],
        "index": index[output], "b": fire_b[output], "phase": phase[output],
        "sub": fire_sub[output], "watermark": watermark[output],
        "processing": processing[output], "first": pane_first[output],
        "last": pos[output], "window": win[output], "order": order}


def stable_lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """``np.lexsort(keys)``: the order by the last key, then the one before, ..., ties in
    input order. Integer keys whose ranges fit together in 63 bits (each key's values offset
    by its minimum and divided by their common step) are packed into one ``int64`` and
    sorted once, stably: several times faster than ``lexsort``, which it falls back to
    otherwise."""
    n = len(keys[0])
    if n < 2:
        return np.arange(n)
    parts, total = [], 1
    for key in keys:
        low, high = int(key.min()), int(key.max())
        if high - low >= 2**63:
            return np.lexsort(keys)
        offset = key - low if low else key
        step = int(np.gcd.reduce(offset)) or 1
        span = (high - low) // step + 1
        total *= span
        if total >= 2**63:
            return np.lexsort(keys)
        parts.append((offset // step if step > 1 else offset, span))
    packed, scale = np.zeros(n, dtype=np.int64), 1
    for offset, span in parts:
        packed += offset * scale
        scale *= span
    return np.argsort(packed, kind="stable")


def _rank_in_window(flags: np.ndarray, first: np.ndarray, window: np.ndarray) -> np.ndarray:
    """Per row, how many rows of its window up to it (itself included) have ``flags``."""
    counts = np.cumsum(flags)
    before = np.concatenate([[0], counts])[first]      # flagged rows before each window
    return counts - before[window]


def _calls(walker: Any, firings: dict, elements: Any, out_keys: list,
           keys: dict[str, Any]) -> Iterator[Any]:
    """``process_panes`` over the firings in order, a call every ``BATCH_ROWS`` elements."""
    lengths = firings["last"] - firings["first"] + 1
    cumulative = np.cumsum(lengths)
    begin = 0
    while begin < len(lengths):
        done = int(cumulative[begin - 1]) if begin else 0
        end = int(np.searchsorted(cumulative, done + BATCH_ROWS, side="left")) + 1
        end = min(end, len(lengths))
        yield _call(walker, {k: v[begin:end] if k != "order" else v
                             for k, v in firings.items()},
                    lengths[begin:end], elements, out_keys, keys)
        begin = end


def _call(walker: Any, firings: dict, lengths: np.ndarray, elements: Any, out_keys: list,
          keys: dict[str, Any]) -> Any:
    """One ``process_panes`` call (``pane_batches.process_queued``) over ``firings``."""
    total = int(lengths.sum())
    offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    rows = firings["order"][np.repeat(firings["first"], lengths) + offsets]
    run = firings["run"]
    queued = firing_meta(walker, firings)   # ``elements``: below
    queued[KEY_ARRAYS] = {c: a.take(run) for c, a in keys.items()}
    queued["key_arg"] = [walker.logic.key_argument(out_keys[int(run[0])])]
    return process_queued(walker, queued, lengths, elements.take(rows))


def firing_meta(walker: Any, firings: dict) -> dict[str, Any]:
    """``QUEUED``'s columns of ``firings`` by name, but the key (``out_key``, ``key_arg``)
    and the elements."""
    ws, kind = firings["ws"], firings["kind"]
    return {
        "window_start": ws, "window_end": ws + walker.size, "pane_index": firings["index"],
        "timing": _TIMINGS[kind], "is_final": (kind == _ON_TIME) & (walker.lateness == 0),
        "watermark": firings["watermark"], "processing_time": firings["processing"],
        B: firings["b"], PHASE: firings["phase"], SUB: firings["sub"]}
