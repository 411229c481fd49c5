"""Values the Spark walkers (``walker.py``, ``pane_walker.py``) read and write: their
configuration (``WalkConfig``), input batches as UTC wall time and Python lists, clock values
for output columns, and the walkers' two limit errors: ``KEY_STATE_LIMIT`` (a key's live state
above ``max_key_state``) and ``WORKER_MEMORY_EXCEEDED`` (the Python worker out of memory while
walking)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from windowlib.core.codec import decode
from windowlib.core.errors import ExecutionError
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MIN_TS, NOT_FINITE

__all__ = ["WalkConfig", "batch_columns", "finite_clock", "finite_clocks", "key_state_limit",
           "naive_type", "py_values", "rows_at", "worker_memory_exceeded"]

_NUMPY_TIME_UNITS = frozenset({"s", "ms", "us"})
WORKER_MEMORY_HINT = ("give the Python workers more memory (spark.executor.pyspark.memory, or "
                      "spark.executor.memoryOverhead where it is not set)")


@dataclass
class WalkConfig:
    """What ``make_walker`` gives every partition's walker: the pipeline, the bundles' clocks,
    the input and output columns and the limits (built on the driver, pickled to the tasks)."""

    pipeline: Pipeline
    arrivals: dict
    processing_times: list
    watermarks: list
    initial_watermark: int
    finalize: bool
    user_columns: tuple
    json_columns: tuple
    seq_column: str | None
    has_absent: bool
    result_mode: str
    result_names: tuple
    typed_tags: tuple            # side outputs with a declared schema (SIDE_TYPED fields)
    max_key_state: int
    out_schema_json: str
    large_types: bool
    has_state: bool = False
    emit_state: bool = False
    initial_processing_time: int = MIN_TS


def naive_type(t: Any) -> Any:
    """The same Arrow type with time zones dropped (UTC wall time), recursively."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) and t.tz is not None:
        return pa.timestamp(t.unit)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, naive_type(f.type), f.nullable) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, naive_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, naive_type(t.value_type)))
    return t


def py_values(array: Any) -> list:
    """``array.to_pylist()``, the same values of the same types, faster for the columns the
    walkers read per element: naive timestamps of second to microsecond precision through
    NumPy (``datetime64.tolist`` gives ``datetime``, ``NaT`` gives ``None``; about 25 times
    faster than Arrow's own conversion), and integers, floats and booleans without nulls
    (with nulls NumPy would give ``NaN`` or objects). Anything else is ``to_pylist``."""
    import pyarrow as pa

    t = array.type
    if pa.types.is_timestamp(t):
        if t.tz is None and t.unit in _NUMPY_TIME_UNITS:
            return array.to_numpy(zero_copy_only=False).tolist()
    elif array.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_boolean(t) or (
            pa.types.is_floating(t) and not pa.types.is_float16(t))):
        return array.to_numpy(zero_copy_only=False).tolist()
    return array.to_pylist()


def batch_columns(batch: Any, user_columns: Sequence[str], json_columns: Set[str]
                  ) -> tuple[list[list], list[list]]:
    """The user columns of an Arrow batch as Python lists: ``(values, as read)``, the same
    lists unless the test harness carries columns as ``codec`` JSON (decoded in ``values``)."""
    raw_cols = [py_values(batch.column(c)) for c in user_columns]
    if not json_columns:
        return raw_cols, raw_cols
    cols = [[None if v is None else decode(json.loads(v)) for v in col]
            if c in json_columns else col for c, col in zip(user_columns, raw_cols)]
    return cols, raw_cols


@lru_cache(maxsize=64)
def rows_at(columns: tuple[str, ...]) -> Callable[..., list[dict]]:
    """A function ``(positions, *lists)`` giving, for each position ``j``, the row dict
    ``{columns[0]: lists[0][j], ...}``: what ``[dict(zip(columns, row)) for row in rows]``
    gives, in half the time (one list comprehension of a dict display, compiled once per
    tuple of names). The names enter the compiled source only as string literals
    (``repr``), never as code, so any name is safe; a repeated name keeps its last value, as
    ``dict(zip())`` does."""
    args = "".join(f", c{i}" for i in range(len(columns)))
    items = ", ".join(f"{name!r}: c{i}[j]" for i, name in enumerate(columns))
    source = f"def rows_at(positions{args}):\n    return [{{{items}}} for j in positions]\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<windowlib rows_at {len(columns)} columns>", "exec"), namespace)
    return namespace["rows_at"]


def key_state_limit(key: Any, size: int, limit: int) -> ExecutionError:
    """``KEY_STATE_LIMIT`` for a key holding ``size`` live entries above ``limit``."""
    return ExecutionError(
        f"key {key!r} holds {size} live state entries (buffered elements + open windows), "
        f"above the limit max_key_state={limit}; raise max_key_state, pre-aggregate "
        "(aggregate/reduce instead of process/apply), or add a trigger that purges",
        code="KEY_STATE_LIMIT")


def worker_memory_exceeded(walker: Any, failed: str | None = None) -> ExecutionError:
    """``WORKER_MEMORY_EXCEEDED`` for ``walker`` (any of the walkers), whose run raised
    ``MemoryError``. ``failed``: the message of the user function's ``FUNCTION_FAILED`` when
    it was raised there (it names the function's key and window); otherwise the error names
    the key being walked and its live state entries (the walkers' ``live``). Then drops the
    walker's state, so that the error and its trip to the driver have memory to use. Spark's
    ``spark.executor.pyspark.memory`` caps a worker's address space (split over the
    executor's cores; Spark passes the share as ``PYSPARK_EXECUTOR_MEMORY_MB``)."""
    key = getattr(walker, "key", None)
    live = getattr(walker, "live", None)
    limit = getattr(getattr(walker, "config", None), "max_key_state", None)
    walker.__dict__.clear()
    share = os.environ.get("PYSPARK_EXECUTOR_MEMORY_MB")
    cap = f" (its share of spark.executor.pyspark.memory: {share} MiB)" if share else ""
    # a function's failure names its own key: the walker may be past it (the pane path calls
    # functions per chunk of keys)
    where = "" if key is None or failed is not None else f" while walking key {key!r}" + (
        "" if live is None else f" ({live} live state entries: buffered elements + open "
                                "windows)")
    inside = "" if failed is None else f" inside a user function ({failed})"
    bound = "" if limit is None else f" (now {limit})"
    return ExecutionError(
        f"a Spark Python worker ran out of memory{cap}{where}{inside}; {WORKER_MEMORY_HINT}, "
        f"lower max_key_state{bound} so that such a key stops early with KEY_STATE_LIMIT, or "
        "pre-aggregate (aggregate/reduce instead of process/apply)",
        code="WORKER_MEMORY_EXCEEDED")


def finite_clock(t: int) -> int | None:
    """Clock values for output columns: the -inf/+inf sentinels become null."""
    return None if t in NOT_FINITE else t


def finite_clocks(values: Any, also_null: Any = None) -> Any:
    """``finite_clock`` over many clock values at once: an Arrow int64 array of ``values``
    with the -inf/+inf sentinels (and the entries where ``also_null`` is true) null."""
    import numpy as np
    import pyarrow as pa

    values = np.asarray(values, dtype=np.int64)
    nulls = np.isin(values, NOT_FINITE)
    return pa.array(values, mask=nulls if also_null is None else nulls | also_null)
