"""A walker partition's rows put in walking order inside the Python worker, with Arrow.

The pane path's walkers need each key's rows together and, within a key, in the reference
engine's order (bundle, arrival order, window). Spark's ``sortWithinPartitions`` does that in
the JVM before the rows become Arrow; sorting the same columns with Arrow's sort in the worker
takes about half its CPU (``docs/performance.md``, the twenty-fourth session). The plan
ships the sort columns (the key columns, the bundle, the arrival order's expressions as
columns, the sub-step and the window start) and :class:`ArrowSort` puts the rows in that order
before the walker sees them. Only the key runs' contiguity and the order inside a key matter
to a walker; the order of the keys is Arrow's, which is Spark's for the types
:func:`arrow_sortable` admits (nulls first, NaN above every number, bytes order for strings).

**Memory**: the worker holds the rows it has not yet handed on, at most about ``budget_bytes``
of Arrow buffers (``spark.windowlib.walker.sortMemory``, default 64 MiB; twice that for a
moment while it sorts them): past it the rows held are sorted and spilled to an Arrow file
in Spark's local directory, and at the end the sorted runs are merged, reading one batch per
run at a time. Spill files are deleted when the iteration ends, however it ends; a disk that
refuses them is ``WALKER_SORT_FAILED``.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import ExecutionError

__all__ = ["SORT_CONF", "SORT_MEMORY_CONF", "ArrowSort", "arrow_sortable", "sort_budget"]

SORT_CONF = "spark.windowlib.walker.sort"       # arrow (default where it applies) | spark
SORT_MEMORY_CONF = "spark.windowlib.walker.sortMemory"    # bytes ("64m", "1g" accepted)
DEFAULT_SORT_MEMORY = 64 << 20
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30}
_ROWS_PER_BATCH = 10_000     # Spark's default Arrow batch (the walkers' usual input)


def sort_budget(text: str | None) -> int:
    """``spark.windowlib.walker.sortMemory`` in bytes (``None``: the default); a value that is
    not a positive size is ``ARGUMENT_INVALID``."""
    from windowlib.core.errors import DefinitionError

    if text is None or not str(text).strip():
        return DEFAULT_SORT_MEMORY
    raw = str(text).strip().lower()
    digits = raw.rstrip("abgkm")
    unit = raw[len(digits):]
    if not digits.isdigit() or unit not in _UNITS or int(digits) <= 0:
        raise DefinitionError(f"{SORT_MEMORY_CONF}={text!r} is not a size (e.g. 67108864, "
                              "64m, 1g)", code="ARGUMENT_INVALID")
    return int(digits) * _UNITS[unit]


def arrow_sortable(data_type: Any) -> bool:
    """Whether Arrow sorts values of this Spark type as Spark does: numbers, booleans, dates,
    timestamps, binary and strings of the default (binary) collation. Other types keep
    Spark's sort."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):
        return getattr(data_type, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(data_type, (T.NumericType, T.BooleanType, T.DateType, T.TimestampType,
                                  T.TimestampNTZType, T.BinaryType))


@dataclass(frozen=True)
class ArrowSort:
    """Sorts a walker partition's Arrow batches by ``columns`` (ascending, nulls first),
    drops the ``drop`` columns (shipped only to sort by) and hands the rows on in batches of
    the size they came in. Called as ``arrange(batches)`` by ``walker.make_walker``."""

    columns: tuple[str, ...]
    drop: tuple[str, ...] = ()
    budget_bytes: int = DEFAULT_SORT_MEMORY

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        held: list[Any] = []
        size, rows_per_batch = 0, 0
        spill: _Spill | None = None
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                held.append(batch)
                size += batch.nbytes
                rows_per_batch = max(rows_per_batch, batch.num_rows)
                if size > self.budget_bytes:
                    spill = spill or _Spill()
                    spill.write(self._sorted(held))
                    held, size = [], 0
            chunk = rows_per_batch or _ROWS_PER_BATCH
            if spill is None:
                yield from self._in_order(held, chunk)
                return
            if held:
                spill.write(self._sorted(held))
            held = []
            yield from self._merged(spill.runs(), chunk)
        finally:
            if spill is not None:
                spill.close()

    # --- sorting ----------------------------------------------------------------------------
    def _indices(self, table: Any) -> Any:
        """The row numbers of ``table`` in Spark's ascending order of ``columns``: nulls
        first, and a floating-point column's NaN after its numbers (Arrow places NaN with the
        nulls, so a NaN flag sorts first)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        keys: dict[str, Any] = {}
        for i, name in enumerate(self.columns):
            column = table.column(name)
            if pa.types.is_floating(column.type):
                keys[f"nan{i}"] = pc.is_nan(column)
            keys[f"key{i}"] = column
        return _sort_indices(pa.table(keys))

    def _sorted(self, batches: list[Any]) -> Any:
        table = _table(batches)
        return table.take(self._indices(table))

    def _in_order(self, batches: list[Any], chunk: int) -> Iterator[Any]:
        """The rows of ``batches`` (a list it empties: their rows are copied into one table)
        in order, ``chunk`` rows per batch, each batch taken when it is asked for (besides
        the table the worker holds one sorted batch, not a sorted copy)."""
        if not batches:
            return
        table = _table(batches).combine_chunks()     # a take from one chunk is ~3x faster
        batches.clear()
        indices = self._indices(table)
        if self.drop:
            table = table.drop_columns(list(self.drop))
        for start in range(0, len(indices), chunk):
            yield from table.take(indices.slice(start, chunk)).to_batches()

    def _merged(self, runs: list[Iterator[Any]], chunk: int) -> Iterator[Any]:
        """The sorted ``runs`` merged: each round takes, from every run's current batch, the
        rows not after the smallest of their last rows (all of one run's batch at least), and
        sorts those together; every row left is at or after that bound, so the rounds follow
        each other in order."""
        current: list[Any] = [next(run, None) for run in runs]
        while True:
            live = [i for i, batch in enumerate(current) if batch is not None]
            if not live:
                return
            bound = min(self._row(current[i], current[i].num_rows - 1) for i in live)
            taken = []
            for i in live:
                batch = current[i]
                n = self._rows_not_after(batch, bound)
                if n:
                    taken.append(batch.slice(0, n))
                current[i] = batch.slice(n) if n < batch.num_rows else next(runs[i], None)
            yield from self._in_order(taken, chunk)

    def _row(self, batch: Any, i: int) -> tuple:
        """Row ``i``'s sort columns as a tuple ordered as Arrow sorts (nulls first, NaN above
        every number)."""
        out = []
        for name in self.columns:
            value = batch.column(name)[i].as_py()
            if value is None:
                out.append((0, 0))
            elif isinstance(value, float) and math.isnan(value):
                out.append((2, 0))
            else:
                out.append((1, value))
        return tuple(out)

    def _rows_not_after(self, batch: Any, bound: tuple) -> int:
        """How many of ``batch``'s (sorted) rows are not after ``bound`` (binary search)."""
        lo, hi = 0, batch.num_rows
        while lo < hi:
            mid = (lo + hi) // 2
            if self._row(batch, mid) <= bound:
                lo = mid + 1
            else:
                hi = mid
        return lo


def _table(batches: list[Any]) -> Any:
    import pyarrow as pa

    return pa.Table.from_batches(batches)


def _sort_indices(table: Any) -> Any:
    """Ascending, nulls first, by every column of ``table`` in order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if int(pa.__version__.split(".")[0]) >= 25:     # null placement per key since Arrow 25
        return pc.sort_indices(table, sort_keys=[(n, "ascending", "at_start")
                                                 for n in table.column_names])
    return pc.sort_indices(table, sort_keys=[(n, "ascending") for n in table.column_names],
                           null_placement="at_start")


class _Spill:
    """Sorted runs as Arrow IPC files in a directory of their own under Spark's local
    directory (``SPARK_LOCAL_DIRS``, which Spark sets for its Python workers)."""

    def __init__(self) -> None:
        local = (os.environ.get("SPARK_LOCAL_DIRS") or "").split(",")[0] or None
        try:
            self.directory = tempfile.mkdtemp(prefix="windowlib-sort-", dir=local)
        except OSError as exc:
            raise _failed(exc) from None
        self.paths: list[str] = []

    def write(self, table: Any) -> None:
        import pyarrow as pa

        path = os.path.join(self.directory, f"run-{len(self.paths)}.arrow")
        try:
            with pa.OSFile(path, "wb") as sink, \
                    pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table, max_chunksize=_ROWS_PER_BATCH)
        except OSError as exc:
            raise _failed(exc) from None
        self.paths.append(path)

    def runs(self) -> list[Iterator[Any]]:
        return [self._read(path) for path in self.paths]

    @staticmethod
    def _read(path: str) -> Iterator[Any]:
        import pyarrow as pa

        # read batch by batch, not mapped: a map's pages count as the worker's memory, and
        # against spark.executor.pyspark.memory's address space
        with pa.OSFile(path, "rb") as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _failed(exc: OSError) -> ExecutionError:
    return ExecutionError(
        f"a walker could not spill its sorted rows to Spark's local directory "
        f"({exc.strerror or exc}); free space there or raise {SORT_MEMORY_CONF}",
        code="WALKER_SORT_FAILED")
