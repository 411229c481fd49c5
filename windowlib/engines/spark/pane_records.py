"""The pane path's walkers' shared parts (``pane_walker.py``, ``session_walker.py``): what a
``Context`` reads, each live window's pane and counters, where the walk is, and the
partition loop over one key's rows after another."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from windowlib.core.evictors import TimestampedValue
from windowlib.engines.spark.columns import ABSENT, FLUSH_ROWS, B
from windowlib.engines.spark.walk_values import batch_columns

__all__ = ["KeyScope", "PaneWindow", "WalkPosition", "walk_key_rows"]


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


# (row, i, b, cols, raw_cols, extra): a row's user columns as a dict (absent ones left out),
# its index in the batch, its bundle, the batch's values and raw values per user column, and
# the batch's ``columns`` asked for as lists
RowStep = Callable[[dict, int, int, list, list, list], None]


def walk_key_rows(walker: Any, batches: Iterator[Any], columns: Sequence[str],
                  on_row: RowStep) -> Iterator[Any]:
    """The pane path's partition loop (rows sorted by key, bundle, arrival): for each key
    ``walker._start`` before its first row and ``walker._finish_key`` after its last,
    ``walker._advance(b)`` at each new bundle, then ``on_row`` per row. Yields the walker's
    output batches: its ``ready`` ones after each row and its rows every ``FLUSH_ROWS``; the
    caller yields what is left after the last key."""
    config = walker.config
    user_columns = config.user_columns
    json_columns = set(config.json_columns)
    key_idx = [user_columns.index(c) for c in walker.key_columns]
    single = key_idx[0] if len(key_idx) == 1 else None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        batch = walker.naive_batch(batch)
        cols, raw_cols = batch_columns(batch, user_columns, json_columns)
        bundles = batch.column(B).to_pylist()
        extra = [batch.column(c).to_pylist() for c in columns]
        absent = batch.column(ABSENT).to_pylist() if config.has_absent else None
        for i, values in enumerate(zip(*cols)):
            key = (values[single],) if single is not None else \
                tuple(values[j] for j in key_idx)
            if key != walker.key or walker.scope is None:
                walker._finish_key()
                walker._start(key, tuple(raw_cols[j][i] for j in key_idx))
                if len(walker.rows) >= FLUSH_ROWS:
                    yield walker.flush()
            b = bundles[i]
            if b != walker.b_open:
                walker._advance(b)
            row = dict(zip(user_columns, values))
            if absent is not None and absent[i]:
                for c in absent[i]:
                    row.pop(c, None)
            on_row(row, i, b, cols, raw_cols, extra)
            if walker.ready:
                yield from walker.ready
                walker.ready = []
        if len(walker.rows) >= FLUSH_ROWS:
            yield walker.flush()
    walker._finish_key()
