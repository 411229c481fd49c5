"""Output rows of a ``BatchWindowFunction`` on the pane path, built with Arrow.

``process_panes`` returns rows naming their pane (``core/batch.py``); each becomes a firing row
of the general path's tagged schema: the pane's key, window, pane index, timing,
``is_final``, clocks and ordering columns are taken by ``pane_id`` from per-pane columns, and the
result columns are cast to their declared Arrow types — no Python value per result row. A
column the function does not declare, or a value that does not cast, is
``RESULT_SCHEMA_MISMATCH``; a row without a valid ``pane_id`` is ``FUNCTION_FAILED``.
"""

from __future__ import annotations

from typing import Any

from windowlib.core.batch import PANE_ID, panes_columns
from windowlib.core.errors import ExecutionError, WindowlibError
from windowlib.core.functions import function_name
from windowlib.core.time import finite_ms
from windowlib.engines.batch_tables import panes_table
from windowlib.engines.spark.columns import KIND, PHASE, SUB, B, N

__all__ = ["batch_firings", "run_batch"]


def run_batch(walker: Any, panes: list[tuple]) -> Any:
    """One ``process_panes`` call over the ``panes`` the pane ``walker`` queued: their elements
    as one Arrow table (``core/batch.py``'s columns), the result as tagged firing rows. A
    failing call is ``FUNCTION_FAILED`` naming the batch's first key and window."""
    fn = walker.runner.spec.fn
    columns = walker.config.user_columns
    fields = [walker.naive_schema.field(c) for c in columns]
    table = panes_table(panes_columns([p[:5] for p in panes], columns), fields)
    try:
        output = fn.process_panes(table)
    except WindowlibError:
        raise
    except Exception as exc:
        first = panes[0]
        raise ExecutionError(
            f"{function_name(fn)}.process_panes failed for a batch of {len(panes)} panes "
            f"(the first: key {first[10]!r}, window {first[0]}): "
            f"{type(exc).__name__}: {exc}", code="FUNCTION_FAILED") from exc
    return batch_firings(walker, panes, output)


def batch_firings(walker: Any, panes: list[tuple], output: Any) -> Any:
    """The tagged firing rows (one ``RecordBatch``) of ``process_panes``' ``output`` for the
    ``panes`` the pane ``walker`` queued (``PaneWalker._defer``), in pane order."""
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
    n = len(panes)
    if len(ids) and (ids.null_count or pc.min(ids).as_py() < 0
                     or pc.max(ids).as_py() >= n):
        raise ExecutionError(f"{fn_name}.process_panes returned a row whose {PANE_ID!r} "
                             f"names no pane of the table (0..{n - 1})",
                             code="FUNCTION_FAILED")
    order = pc.sort_indices(ids)     # stable: a pane's rows keep their order
    table, ids = table.take(order), ids.take(order).combine_chunks()
    m = len(table)
    meta: dict[str, list] = {
        B: [p[7][0] for p in panes], PHASE: [p[7][1] for p in panes],
        SUB: [p[7][2] for p in panes],
        "window_start": [p[0].start for p in panes], "window_end": [p[0].end for p in panes],
        "pane_index": [p[1] for p in panes], "timing": [p[2] for p in panes],
        "is_final": [p[3] for p in panes],
        "watermark": [finite_ms(p[5]) for p in panes],
        "processing_time": [finite_ms(p[6]) for p in panes]}
    for j, column in enumerate(walker.key_columns):
        meta[column] = [p[8][j] for p in panes]
    arrays = []
    for field in walker.arrow_schema:
        name = field.name
        if name == KIND:
            arrays.append(pa.array(["firing"] * m, type=field.type))
        elif name == N:
            arrays.append(pa.array(range(walker.n + 1, walker.n + m + 1), type=field.type))
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
