"""Output rows of a ``BatchWindowFunction`` on the pane path, built with Arrow.

``process_panes`` returns rows naming their pane (``core/batch.py``); each becomes a firing row
of the general path's tagged schema: the pane's key, window, pane index, timing,
``is_final``, clocks and ordering columns are taken by ``pane_id`` from per-pane columns, and the
result columns are cast to their declared Arrow types — no Python value per result row. A
column the function does not declare, or a value that does not cast, is
``RESULT_SCHEMA_MISMATCH``; a row without a valid ``pane_id`` is ``FUNCTION_FAILED``.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from windowlib.core.batch import META_COLUMNS, PANE_ID
from windowlib.core.errors import ExecutionError, WindowlibError
from windowlib.core.functions import function_name
from windowlib.core.outputs import CLOCK_COLUMNS
from windowlib.engines.batch_tables import arrow_panes_table, elements_table
from windowlib.engines.spark.columns import KIND, PHASE, SUB, B, N
from windowlib.engines.spark.walk_values import finite_clocks

__all__ = ["BATCH_ROWS", "KEY_ARRAYS", "QUEUED", "BatchQueue", "batch_firings", "key_arrays",
           "process_queued", "run_batch"]

BATCH_ROWS = 65_536   # elements per process_panes call (bounded memory per batch)

# a queued firing (``BatchQueue._defer``): its window (``None`` for count windows), pane,
# clocks and position when it fired, its key (as read and as the function's argument) and its
# elements (row numbers with ``arrow_elements``, else ``TimestampedValue``s)
KEY_ARRAYS = "key_arrays"     # the key columns per firing as Arrow arrays (``key_arrays``)
QUEUED = ("window_start", "window_end", "pane_index", "timing", "is_final", "watermark",
          "processing_time", B, PHASE, SUB, "out_key", "key_arg", "elements")


class BatchQueue:
    """The pane walker's queue of a ``BatchWindowFunction``'s firings (a mixin of
    ``pane_walker.PaneWalker``, whose state it reads: ``batch``, ``batch_rows``,
    ``batch_oldest``, the windows, the position and the clocks): ``process_panes`` runs once
    per ``BATCH_ROWS`` queued elements, and with ``arrow_elements`` the oldest input row a
    queued pane holds keeps its input batch alive."""

    def _defer(self, window: Any, buffer: list, timing: Any,
               is_final: bool) -> None:
        """Queue a firing of a ``BatchWindowFunction`` over ``buffer`` (the pane, or what an
        evictor left of it) as a ``pane_batches.QUEUED`` tuple."""
        if buffer:
            if buffer is window.buffer and not self.discarding:
                buffer = list(buffer)      # accumulating: the pane grows on
            position, clock, start = self.walk, self.clock, window.start
            self.batch.append((
                None if self.global_window else start,
                None if self.global_window else start + self.size,
                window.index, timing._value_, is_final, clock.watermark,
                clock.processing_time, position.b, position.phase, position.sub,
                self.out_key, self.scope.key_arg, buffer))
            self.batch_rows += len(buffer)
            if self.arrow_elements and (self.batch_oldest is None
                                        or buffer[0] < self.batch_oldest):
                self.batch_oldest = buffer[0]
        window.index += 1
        if self.discarding:
            self.live -= len(window.buffer)
            window.buffer = []
        if self.batch_rows >= BATCH_ROWS:
            self._run_batch()

    def _run_batch(self) -> None:
        """Call ``process_panes`` once for the queued firings and emit their rows in firing
        order."""
        panes, self.batch, self.batch_rows = self.batch, [], 0
        if panes:
            self.ready.append(run_batch(self, panes))
        self.batch_oldest = None

    def _oldest_row(self) -> int:
        oldest = [w.buffer[0] for w in self.windows.values() if w.buffer]
        if self.batch_oldest is not None:
            oldest.append(self.batch_oldest)
        return min(oldest, default=self.next_row)


def run_batch(walker: Any, panes: list[tuple]) -> Any:
    """One ``process_panes`` call over the ``panes`` the pane ``walker`` queued (``QUEUED``
    tuples): their elements as one Arrow table (``core/batch.py``'s columns), the result as
    tagged firing rows (``process_queued``)."""
    queued = dict(zip(QUEUED, zip(*panes)))
    elements = queued["elements"]
    lengths = [len(e) for e in elements]
    if walker.arrow_elements:       # the panes hold input row numbers
        rows = np.fromiter(chain.from_iterable(elements), np.int64, sum(lengths))
        element_table = walker.element_rows(rows)
    else:      # behind an evictor (what it left) or harness JSON columns: Python values
        element_table = elements_table(
            [e.value for e in chain.from_iterable(elements)],
            [walker.naive_schema.field(c) for c in walker.config.user_columns])
    queued[KEY_ARRAYS] = key_arrays(walker, list(zip(*queued["out_key"])))
    return process_queued(walker, queued, lengths, element_table)


def key_arrays(walker: Any, key_values: list) -> dict[str, Any]:
    """The key columns (``key_values``: one sequence of Python values per key column) as the
    tagged output's Arrow arrays."""
    schema = walker.arrow_schema
    return {c: walker.pa.array(values, type=schema.field(c).type)
            for c, values in zip(walker.key_columns, key_values)}


def process_queued(walker: Any, queued: dict[str, Any], lengths: Any,
                   element_table: Any) -> Any:
    """``process_panes`` over queued firings (``queued``: ``QUEUED``'s columns but ``out_key``
    and ``elements``, one value per firing, and ``KEY_ARRAYS``), the ``lengths`` of their
    panes and their elements one pane after another (``element_table``); the result as tagged
    firing rows (``batch_firings``). A failing call is ``FUNCTION_FAILED`` naming the first
    pane's key and window."""
    fn = walker.runner.spec.fn
    n = len(queued["pane_index"])
    per_pane = {PANE_ID: range(n), **{c: queued[c] for c in META_COLUMNS[1:]}}
    table = arrow_panes_table(per_pane, lengths, element_table)
    try:
        output = fn.process_panes(table)
    except WindowlibError:
        raise
    except Exception as exc:
        start, end = queued["window_start"][0], queued["window_end"][0]
        window = "the global window" if start is None else f"window [{start}, {end})"
        raise ExecutionError(
            f"{function_name(fn)}.process_panes failed for a batch of {n} panes "
            f"(the first: key {queued['key_arg'][0]!r}, {window}): "
            f"{type(exc).__name__}: {exc}", code="FUNCTION_FAILED") from exc
    return batch_firings(walker, queued, output)


def batch_firings(walker: Any, queued: dict[str, tuple], output: Any,
                  numbers: Any = None) -> Any:
    """The tagged firing rows (one ``RecordBatch``) of ``process_panes``' ``output`` for the
    firings the pane ``walker`` queued (``queued``: ``QUEUED``'s columns, sequences or NumPy
    arrays, with the key columns as ``KEY_ARRAYS`` instead of ``out_key``), in pane order.
    The rows are numbered (``N``) on from the walker's count, or by ``numbers`` (one per
    output row, in pane order; the walker's count is then left as it is)."""
    pa = walker.pa
    import pyarrow.compute as pc

    fn_name = function_name(walker.runner.spec.fn)
    table = _output_table(output, fn_name)
    if PANE_ID not in table.column_names:
        raise ExecutionError(f"{fn_name}.process_panes returned rows without a {PANE_ID!r} "
                             "column: every row names the pane it belongs to",
                             code="FUNCTION_FAILED")
    undeclared = [c for c in table.column_names
                  if c != PANE_ID and c not in walker.result_names]
    if undeclared:
        raise ExecutionError(f"a result row of {fn_name}: {undeclared[0]!r} is not declared "
                             f"(declared: {', '.join(walker.result_names)})",
                             code="RESULT_SCHEMA_MISMATCH")
    ids = table.column(PANE_ID)
    try:
        ids = ids.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ExecutionError(f"{fn_name}.process_panes returned {PANE_ID!r} values that are "
                             f"not pane numbers ({exc})", code="FUNCTION_FAILED") from None
    n = len(queued["pane_index"])
    if len(ids) and (ids.null_count or pc.min(ids).as_py() < 0
                     or pc.max(ids).as_py() >= n):
        raise ExecutionError(f"{fn_name}.process_panes returned a row whose {PANE_ID!r} "
                             f"names no pane of the table (0..{n - 1})",
                             code="FUNCTION_FAILED")
    ids = ids.combine_chunks()
    if not _ascending(ids):     # (a per-firing function's rows come in pane order)
        order = pc.sort_indices(ids)     # stable: a pane's rows keep their order
        table, ids = table.take(order), ids.take(order)
        if numbers is not None:
            numbers = pa.array(numbers, type=pa.int64()).take(order)
    m = len(table)
    meta = {name: queued[name] for name in QUEUED[:10]}
    clocks = {name: finite_clocks(meta.pop(name)) for name in CLOCK_COLUMNS}
    keys = queued[KEY_ARRAYS]
    arrays = []
    for field in walker.arrow_schema:
        name = field.name
        if name == KIND:
            arrays.append(pa.array(["firing"] * m, type=field.type))
        elif name == N:
            arrays.append(pa.array(range(walker.n + 1, walker.n + m + 1) if numbers is None
                                   else numbers, type=field.type))
        elif name in keys:
            arrays.append(keys[name].take(ids))
        elif name in clocks:
            arrays.append(clocks[name].take(ids))
        elif name in meta:
            arrays.append(pa.array(meta[name], type=field.type).take(ids))
        elif name in walker.result_names and name in table.column_names:
            try:
                arrays.append(table.column(name).cast(field.type).combine_chunks())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise ExecutionError(
                    f"a result row of {fn_name}: field {name!r} expects "
                    f"{field.type}: {exc}", code="RESULT_SCHEMA_MISMATCH") from None
        else:
            arrays.append(pa.nulls(m, type=field.type))
    if numbers is None:
        walker.n += m
    return pa.RecordBatch.from_arrays(arrays, schema=walker.arrow_schema)


def _output_table(output: Any, fn_name: str) -> Any:
    """What ``process_panes`` returned, as a ``pyarrow.Table``."""
    import pyarrow as pa

    if output is None:
        return pa.table({PANE_ID: pa.array([], type=pa.int64())})
    if isinstance(output, pa.Table):
        return output
    if isinstance(output, pa.RecordBatch):
        return pa.Table.from_batches([output])
    if hasattr(output, "to_dict") and hasattr(output, "columns"):     # pandas
        return pa.Table.from_pandas(output, preserve_index=False)
    rows = list(output)
    if not all(isinstance(r, dict) for r in rows):
        raise ExecutionError(f"{fn_name}.process_panes must return rows (dicts, a pyarrow "
                             "Table or a pandas DataFrame)", code="FUNCTION_FAILED")
    return pa.Table.from_pylist(rows) if rows else \
        pa.table({PANE_ID: pa.array([], type=pa.int64())})


def _ascending(ids: Any) -> bool:
    """Whether the pane numbers ``ids`` (an ``int64`` array without nulls) never decrease."""
    values = ids.to_numpy()
    return bool((values[1:] >= values[:-1]).all())
