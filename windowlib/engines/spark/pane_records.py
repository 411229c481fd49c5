"""The pane path's walkers' shared parts (``pane_walker.py``, ``session_walker.py``): their
base class (the clocks, the key's scope and the partition loop over one key's rows after
another), what a ``Context`` reads, each live window's pane and counters, and where the walk
is."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from windowlib.core.evictors import TimestampedValue
from windowlib.core.time import MIN_TS
from windowlib.engines.spark.columns import ABSENT, FLUSH_ROWS, B
from windowlib.engines.spark.walk_values import batch_columns, py_values
from windowlib.engines.spark.walker import WalkConfig, Walker

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

    __slots__ = ("buffer", "early", "fire_at", "fn_state", "index", "late", "on_time", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.buffer: list[TimestampedValue] = []
        self.fn_state: dict = {}
        self.on_time = self.early = self.late = self.index = 0
        self.fire_at: int | None = None     # a continuous trigger's next firing time


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

    def _row(self, row: dict, i: int, b: int, cols: list, raw_cols: list,
             extra: list) -> None:
        """One row: its user columns as a dict (absent ones left out), its index in the
        batch, its bundle, the batch's values and raw values per user column, and the
        batch's ``columns`` that ``walk_rows`` was asked for, as lists."""
        raise NotImplementedError

    def walk_rows(self, batches: Iterator[Any], columns: Sequence[str]) -> Iterator[Any]:
        """For each key ``_start`` before its first row and ``_finish_key`` after its last,
        ``_advance(b)`` at each new bundle, then ``_row`` per row. Yields the output batches:
        the ``ready`` ones after each row and the rows every ``FLUSH_ROWS``."""
        config = self.config
        user_columns = config.user_columns
        json_columns = set(config.json_columns)
        key_idx = [user_columns.index(c) for c in self.key_columns]
        single = key_idx[0] if len(key_idx) == 1 else None
        on_row = self._row
        for batch in batches:
            if batch.num_rows == 0:
                continue
            batch = self.naive_batch(batch)
            cols, raw_cols = batch_columns(batch, user_columns, json_columns)
            bundles = py_values(batch.column(B))
            extra = [py_values(batch.column(c)) for c in columns]
            absent = py_values(batch.column(ABSENT)) if config.has_absent else None
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
