"""The native incremental path's window state (``state_kind`` ``native-windows``): its
persisted columns and format version (the format ``native_incremental.py`` documents and
``tests/golden/native_windows_v1`` pins), the schema check, and the saved windows as the next
run joins them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from windowlib.core.errors import StateError, rebuild_hint
from windowlib.engines.spark.columns import user_col
from windowlib.engines.spark.native_parts import WS, Parts
from windowlib.engines.spark.state import check_key_types

STATE_KIND = "native-windows"
NATIVE_STATE_FORMAT = 1
IN_S = "__wl_in_s"    # the window was saved (a column of ``saved_windows``)
# persisted state columns (besides the keys and accumulators)
S_WS, S_ON_N, S_FIRED = "__wl_window_start", "__wl_on_time_count", "__wl_on_time_fired"
S_PANES, S_LAST_TIMING, S_FORMAT = "__wl_panes", "__wl_last_timing", "__wl_format_version"


def acc_column(i: int, name: str) -> str:
    return f"__wl_acc{i}_{name}"


def last_column(name: str) -> str:
    return f"__wl_last_{name}"


def check_native_state(state: Any, key_columns: Sequence[str], key_types: dict[str, Any],
                       acc_types: dict[str, Any]) -> None:
    """Raise ``StateError`` unless ``state`` has the native state schema for these keys and
    accumulators (only the schema is read)."""
    fields = {f.name: f.dataType for f in state.schema.fields}
    needed = [*key_columns, S_WS, S_ON_N, S_FIRED, S_PANES, S_FORMAT, *acc_types]
    missing = [c for c in needed if c not in fields]
    if missing:
        raise StateError(f"the native window state lacks columns {missing}; restore an intact "
                         f"checkpoint version, or {rebuild_hint()}", code="CHECKPOINT_CORRUPT")
    check_key_types(fields, key_columns, key_types)


def saved_windows(state: Any, parts: Parts, key_cols: list[str], acc_types: dict[str, Any],
                   result_types: dict[str, Any], df: Any) -> Any:
    """The saved windows renamed for the join (``__wl_p`` accumulators, presence flag), or an
    empty frame of that shape for the first run."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    types = {f.name: f.dataType for f in df.schema.fields}
    if state is not None:
        check_native_state(state, key_cols, types, acc_types)
    fields = [*[T.StructField(c, types[c], True) for c in key_cols],
              T.StructField(S_WS, T.LongType(), True), T.StructField(S_ON_N, T.LongType(), True),
              T.StructField(S_FIRED, T.BooleanType(), True),
              T.StructField(S_PANES, T.LongType(), True),
              *[T.StructField(n, t, True) for n, t in acc_types.items()]]
    if parts.retracting:
        fields += [T.StructField(S_LAST_TIMING, T.StringType(), True),
                   *[T.StructField(last_column(n), t, True) for n, t in result_types.items()]]
    if state is None:
        spark = df.sparkSession
        state = spark.createDataFrame([], T.StructType(fields))
    cols = [*[user_col(c) for c in key_cols], F.col(S_WS).alias(WS),
            F.col(S_ON_N), F.col(S_FIRED), F.col(S_PANES)]
    for name, dtype in acc_types.items():
        i, _, acc = name[len("__wl_acc"):].partition("_")
        cols.append(F.col(name).cast(dtype).alias(f"__wl_p{i}_{acc}"))
    if parts.retracting:
        cols += [F.col(S_LAST_TIMING),
                 *[F.col(last_column(n)).cast(t).alias(last_column(n))
                   for n, t in result_types.items()]]
    return state.select(*cols, F.lit(True).alias(IN_S))
