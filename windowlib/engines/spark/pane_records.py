"""The pane path's walkers' shared parts (``pane_walker.py``, ``session_walker.py``): their
base class (the clocks, the key's scope, the partition loop over one key's rows after
another, and the rejected and late rows it writes as they came: ``pass_through``), what a
``Context`` reads, each live window's pane and counters, and where the walk is.

**Elements kept in Arrow.** A walker whose panes only ever go back into Arrow (a batch
function without an evictor, over columns the harness does not carry as JSON) sets
``arrow_elements``: the loop then reads only the key columns into Python, a pane holds row
numbers, and ``element_rows`` takes those rows from the input batches still referenced — the
walker names the oldest row it still needs (``_oldest_row``) and older batches are let go.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from windowlib.core.evictors import TimestampedValue
from windowlib.core.outputs import TOO_LATE
from windowlib.core.time import MIN_TS
from windowlib.engines.spark.columns import (
    ABSENT,
    ELEMENT,
    FLUSH_ROWS,
    KIND,
    PHASE,
    PHASE_ELEMENTS,
    REASON,
    SUB,
    B,
    N,
)
from windowlib.engines.spark.walk_values import WalkConfig, batch_columns, finite_clocks, py_values
from windowlib.engines.spark.walker import Walker

__all__ = ["KeyScope", "PaneWalkBase", "PaneWindow", "WalkPosition"]


class KeyScope:
    """What a ``Context`` reads from its driver: the clocks, the key's global state, the
    pipeline (side outputs are conformed by its runner) and where side outputs go."""

    __slots__ = ("clock", "global_state", "key_arg", "logic", "sink")

    def __init__(self, walker: Any, key_arg: Any) -> None:
        self.clock, self.logic, self.sink = walker.clock, walker.logic, walker.sink
        self.global_state: dict = {}
        self.key_arg = key_arg


class PaneWindow:
    """One live window of the key: its pane, counters and ``window_state`` (``fn_state``)."""

    __slots__ = ("buffer", "early", "fire_at", "fn_state", "index", "last", "late", "on_time",
                 "on_time_fired", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.buffer: list[TimestampedValue] = []
        self.fn_state: dict = {}
        self.on_time = self.early = self.late = self.index = 0
        # the next firing time of a continuous or an after_first_element trigger
        self.fire_at: int | None = None
        self.last: dict | None = None       # a delta trigger's element of the last firing
        self.on_time_fired = False          # (after_first_element alone: its ON_TIME pane)


class WalkPosition:
    """Where the walk is (the tagged rows' ordering columns)."""

    __slots__ = ("b", "phase", "sub")

    def __init__(self) -> None:
        self.b = self.phase = self.sub = 0


class PaneWalkBase(Walker):
    """What the pane path's walkers (``pane_walker.PaneWalker``, ``session_walker.
    SessionWalker``) share: the watermark each bundle's elements meet, the clocks, the key's
    scope, live count and position, and the partition loop (``walk_rows``: rows sorted by key,
    bundle, arrival). A subclass extends ``_start`` (a key's first row) and gives
    ``_finish_key`` (its last), ``_advance`` (a new bundle) and ``_row`` (one row), and its
    ``run`` calls ``walk_rows`` and yields what is left after the last key."""

    live: int = 0     # counted as entries come and go (not from a key driver: Walker.live)

    def __init__(self, walk: WalkConfig, *, discarding: bool, watermark_before: list) -> None:
        super().__init__(walk)
        self.discarding = discarding
        self.w_before = watermark_before
        self.P, self.W = self.times.processing_times, self.times.watermarks
        self.walk = WalkPosition()   # type: ignore[assignment]
        self.scope: KeyScope | None = None
        self.live = 0             # the key's buffered entries, checked against max_key_state
        self.b_open = -1          # the bundle whose rows the walk is in
        self.ready: list[Any] = []        # output batches besides the rows (batch functions)
        # elements kept in Arrow (see the module docstring): the input batches still
        # referenced (user columns), each with the number of its first row in the partition
        self.arrow_elements = False
        self.retained: list[tuple[int, Any]] = []
        self.row_base = 0         # the number of the current batch's first row
        self.next_row = 0         # ... and of the next batch's
        self.n_passed = 0         # the rows ``pass_through`` wrote (their own ``N``)

    def _clock_at(self, b: int, phase: int) -> None:
        """Set the walk's position to step ``phase`` of bundle ``b`` and the clocks to that
        bundle's watermark and processing time (``n_bundles``: the end of the input, both
        ``MIN_TS``)."""
        position = self.walk
        position.b, position.phase, position.sub = b, phase, 0
        clock = self.clock
        in_run = b < self.n_bundles
        clock.watermark = self.W[b] if in_run else MIN_TS
        clock.processing_time = self.P[b] if in_run else MIN_TS

    def _start(self, key: tuple, out_key: tuple) -> None:
        """A new key: its scope, key row, live count and bundle; a subclass extends it with
        its own per-key containers."""
        self.key, self.out_key = key, out_key
        self.scope = KeyScope(self, self.logic.key_argument(key))
        self.key_row = dict(zip(self.key_columns, key))
        self.live, self.b_open = 0, -1

    def _finish_key(self) -> None:
        raise NotImplementedError

    def _advance(self, b: int) -> None:
        raise NotImplementedError

    def _row(self, row: dict | None, i: int, b: int, cols: list, raw_cols: list,
             extra: list) -> None:
        """One row: its user columns as a dict (absent ones left out; ``None`` with
        ``arrow_elements``), its index in the batch, its bundle, the batch's values and raw
        values per user column, and the batch's ``columns`` that ``walk_rows`` was asked
        for, as lists."""
        raise NotImplementedError

    def _oldest_row(self) -> int:
        """The number of the oldest input row a pane or a queued firing still holds (with
        ``arrow_elements``; none: the next batch's first row)."""
        raise NotImplementedError

    def _retain(self, batch: Any) -> None:
        """Keep ``batch``'s user columns for ``element_rows``; let go of the batches before
        the oldest row still held."""
        oldest = self._oldest_row()
        retained = self.retained
        while retained and retained[0][0] + retained[0][1].num_rows <= oldest:
            retained.pop(0)
        self.row_base, self.next_row = self.next_row, self.next_row + batch.num_rows
        retained.append((self.row_base, batch.select(list(self.config.user_columns))))

    def element_rows(self, rows: Any) -> Any:
        """The user columns of the input rows numbered ``rows`` (a NumPy int64 array of row
        numbers still held), as one ``pyarrow.Table`` in that order."""
        first = self.retained[0][0]
        table = self.pa.Table.from_batches([b for _, b in self.retained])
        return table.take(rows - first)

    def pass_through(self, batch: Any) -> tuple[Any, Any]:
        """``(rows to walk, tagged rows or None)`` of an input batch: the rows with a reason
        in ``REASON`` (rejected, or ``too_late`` for every window they belong to:
        ``native_windows.kept_and_passed``) become reject and late rows as the general
        path's walker writes them (``Walker.emit_element``: the element as read; a late
        row's watermark is the one its bundle's elements met), built in Arrow; the others
        are walked. Input without ``REASON`` (sessions) is all walked."""
        if REASON not in batch.schema.names:
            return batch, None
        reasons = batch.column(REASON)
        if reasons.null_count == batch.num_rows:
            return batch, None
        import pyarrow.compute as pc

        has = pc.is_valid(reasons)
        return batch.filter(pc.invert(has)), self._passed(batch.filter(has))

    def _passed(self, rows: Any) -> Any:
        """The tagged reject and late rows of ``rows`` (``pass_through``)."""
        import pyarrow.compute as pc

        pa, schema, n = self.pa, self.arrow_schema, rows.num_rows
        reasons = rows.column(REASON)
        late = pc.fill_null(pc.equal(reasons, TOO_LATE), False).to_numpy(zero_copy_only=False)
        b = rows.column(B).to_numpy(zero_copy_only=False)
        element = schema.field(ELEMENT).type
        values = {
            KIND: pa.array(np.where(late, "late", "reject")), B: rows.column(B),
            PHASE: pa.array(np.full(n, PHASE_ELEMENTS, dtype=np.int32)),
            SUB: rows.column(SUB), N: pa.array(np.arange(self.n_passed, self.n_passed + n)),
            "watermark": finite_clocks(np.asarray(self.w_before)[b], ~late),
            "processing_time": finite_clocks(np.asarray(self.P)[b]),
            ELEMENT: pa.StructArray.from_arrays(
                [rows.column(f.name).cast(f.type) for f in element], fields=list(element)),
            REASON: reasons}
        self.n_passed += n
        keys = range(5, 5 + len(self.key_columns))    # after KIND, B, PHASE, SUB, N: none
        return pa.RecordBatch.from_arrays(
            [pa.nulls(n, f.type) if i in keys or f.name not in values
             else values[f.name].cast(f.type) for i, f in enumerate(schema)], schema=schema)

    def walk_rows(self, batches: Iterator[Any], columns: Sequence[str]) -> Iterator[Any]:
        """For each key ``_start`` before its first row and ``_finish_key`` after its last,
        ``_advance(b)`` at each new bundle, then ``_row`` per row (with ``arrow_elements``:
        no row dict, the row's number is ``row_base + i``). Yields the output batches: the
        ``ready`` ones after each row and the rows every ``FLUSH_ROWS``."""
        config = self.config
        user_columns = config.user_columns
        json_columns = set(config.json_columns)
        arrow = self.arrow_elements
        key_idx = list(range(len(self.key_columns))) if arrow else \
            [user_columns.index(c) for c in self.key_columns]
        single = key_idx[0] if len(key_idx) == 1 else None
        on_row = self._row
        row = None
        for batch in batches:
            batch, passed = self.pass_through(batch)
            if passed is not None:
                yield passed
            if batch.num_rows == 0:
                continue
            batch = self.naive_batch(batch)
            bundles = py_values(batch.column(B))
            if arrow:      # the key columns, then the bundles (a row even without keys)
                self._retain(batch)
                cols = [py_values(batch.column(c)) for c in self.key_columns]
                cols.append(bundles)
                raw_cols = cols
            else:
                cols, raw_cols = batch_columns(batch, user_columns, json_columns)
            extra = [py_values(batch.column(c)) for c in columns]
            absent = py_values(batch.column(ABSENT)) if config.has_absent and not arrow \
                else None
            for i, values in enumerate(zip(*cols)):
                key = (values[single],) if single is not None else \
                    tuple(values[j] for j in key_idx)
                if key != self.key or self.scope is None:
                    self._finish_key()
                    self._start(key, tuple(raw_cols[j][i] for j in key_idx))
                    if len(self.rows) >= FLUSH_ROWS:
                        yield self.flush()
                b = bundles[i]
                if b != self.b_open:
                    self._advance(b)
                if not arrow:
                    row = dict(zip(user_columns, values))
                if absent is not None and absent[i]:
                    for c in absent[i]:
                        row.pop(c, None)
                on_row(row, i, b, cols, raw_cols, extra)
                if self.ready:
                    yield from self.ready
                    self.ready = []
            if len(self.rows) >= FLUSH_ROWS:
                yield self.flush()
        self._finish_key()
