"""Column names of the Spark engine's tagged output (shared by the general path's run planning,
its walker in the Python workers, the native path and the test harness). The step phases and
the public names come from the core (``core.loop``, ``core.outputs``). Also how a user's
column names reach Spark: ``user_col`` (quoted) and ``map_in_arrow`` (names PySpark's own
``mapInArrow`` cannot look up), and ``struct_of`` (a small schema built on the client)."""

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from windowlib.core.loop import PHASE_ELEMENTS, PHASE_FINISH, PHASE_TIMERS_PT, PHASE_TIMERS_WM
from windowlib.core.outputs import RESULT_JSON
from windowlib.core.schema import sql_identifier

__all__ = ["ABSENT", "CHECK_EVERY", "DEFAULT_MAX_KEY_STATE", "ELEMENT", "FLUSH_ROWS",
           "FORMAT", "KIND", "NEXT_ET", "NEXT_PT", "PHASE", "PHASE_ELEMENTS", "PHASE_FINISH",
           "PHASE_TIMERS_PT", "PHASE_TIMERS_WM", "REASON", "RESULT_JSON", "SIDE_TYPED", "SIZE",
           "SRC", "STATE", "SUB", "VALUE", "B", "N", "map_in_arrow", "struct_of", "user_col"]

DEFAULT_MAX_KEY_STATE = 5_000_000
CHECK_EVERY = 4096
FLUSH_ROWS = 8192

KIND, B, PHASE, SUB, N = "__wl_kind", "__wl_b", "__wl_phase", "__wl_sub", "__wl_n"
ELEMENT, REASON = "__wl_element", "__wl_reason"
# pane state in/out (see state.py), side-output values, per-partition counts
STATE, NEXT_ET, NEXT_PT, SIZE, FORMAT = ("__wl_state", "__wl_next_et", "__wl_next_pt",
                                         "__wl_size", "__wl_format")
VALUE, SRC = "__wl_value", "__wl_src"
SIDE_TYPED = "__wl_side_typed"   # values of side outputs declared with a schema (a struct)
ABSENT = "__wl_absent"   # test hook: array<string> of columns absent from the element


def user_col(name: str) -> Any:
    """The Spark column of a user's column ``name``, whatever it holds (dots, backquotes,
    spaces): quoted as one SQL identifier (``core.schema.sql_identifier``)."""
    from pyspark.sql import functions as F

    return F.col(sql_identifier(name))


def map_in_arrow(df: Any, fn: Callable[[Iterator[Any]], Iterator[Any]], schema: Any) -> Any:
    """``df.mapInArrow(fn, schema)`` whatever ``df``'s column names hold. PySpark's own looks
    every input column up by its bare name (``df[name]``), which fails for a name with a dot
    or a backquote (``INVALID_ATTRIBUTE_NAME_SYNTAX``, or another column's field); such frames
    travel under positional names and ``fn`` gets its batches under the real ones."""
    names = list(df.columns)
    if not any("." in n or "`" in n for n in names):
        return df.mapInArrow(fn, schema)
    positional = [f"__wl_in_{i}" for i in range(len(names))]

    def renamed(batches: Iterator[Any]) -> Iterator[Any]:
        return fn(batch.rename_columns(names) for batch in batches)

    return df.toDF(*positional).mapInArrow(renamed, schema)


def struct_of(fields: Iterable[tuple[str, str]]) -> Any:
    """The ``StructType`` of ``(name, type)`` pairs, types ``string``, ``long`` or ``int``
    (nullable): built on the client, where a DDL string would be parsed by a server round
    trip over Spark Connect."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    types = {"string": StringType(), "long": LongType(), "int": IntegerType()}
    return StructType([StructField(name, types[kind]) for name, kind in fields])
