"""Declarative aggregates (``windowlib.aggregates``) compiled to Spark SQL for the native path.

Each aggregate has an *accumulator* made of plain Spark aggregate expressions, so that it can be
computed in two places and combined:

- the **on-time part** of a window (every element that arrived while the watermark was below
  the window's end): a ``groupBy(key, window)`` aggregate;
- the **late part** (elements kept within the allowed lateness): a running aggregate over a
  window function ordered by arrival, combined with the on-time accumulator (accumulating
  modes) or alone (discarding mode: the frame is the current row).

Equality with the reference engine (``windowlib.core.aggregates``), kind by kind:

- ``count``/``sum``/``min``/``max``: Spark ignores nulls as the reference does; ``least`` and
  ``greatest`` skip nulls when combining. Integral (and decimal) sums are exact or fail: they
  add with ``try_sum``/``try_add`` (null on overflow, whatever ``spark.sql.ansi.enabled`` says:
  without ANSI, Spark's ``sum`` and ``+`` wrap silently) and a null that is not the sum of no
  values raises ``AGGREGATE_OVERFLOW`` through ``raise_error`` (``engines/spark/errors.py``
  turns it into the coded error). Spark adds in its own order, so a running total that leaves
  the range fails even where later values would bring it back; the reference engine, exact,
  checks the final sum (of integers only: a decimal sum's range depends on the Spark column's
  precision, which the reference engine does not know). Floating-point sums may differ from
  the reference in the last bits: Spark does not add in arrival order.
- ``mean``: ``sum / count`` of the non-null values, as ``double`` (exact for integral sums below
  2**53, where both engines divide the same two numbers).
- ``first``/``last``: ``min_by``/``max_by`` over ``struct(ts, arrival order)`` of the non-null
  values (``min_by`` skips null orderings): the smallest event time, ties to the earliest
  arrival (first); the largest, ties to the latest arrival (last). On-time elements arrive
  before late ones, which decides ties across the two parts.
- ``collect_list``: the accumulator is ``collect_list(struct(arrival order, value))``
  (unsorted; parts concatenate); the result sorts it and keeps the values: arrival order
  exactly, independent of shuffle order.
- ``approx_count_distinct``: EXACT, as the reference engine computes it: ``collect_set`` (the
  distinct non-null values) and its size; parts combine with ``array_union``. (Spark's HLL
  sketches would be exact only for small cardinalities; exactness is what the reference
  promises.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import ExecutionError
from windowlib.engines.spark.columns import user_col
from windowlib.engines.spark.errors import task_text
from windowlib.engines.spark.result_types import is_atomic, sum_type

NATIVE_KINDS = frozenset({"count", "sum", "min", "max", "mean", "first", "last",
                          "approx_count_distinct", "collect_list"})


@dataclass
class CompiledAggregate:
    """One aggregate: accumulator expressions and how results are formed from them.

    ``accumulators(ctx)`` returns ``{name: Column}`` (plain aggregate function calls, usable
    in ``agg`` and, with ``.over(window)``, as running aggregates); ``result(acc)`` turns the
    accumulator columns (a mapping name -> Column) into the result; ``combine(on, late)``
    merges an on-time accumulator (null when the window had no on-time elements) with a late
    one into a new accumulator mapping.
    """

    kind: str
    column: str | None
    name: str
    dtype: Any          # the declared Spark result type (general.result_fields)
    input_type: Any     # the input column's type (None for count())

    # --- accumulators ----------------------------------------------------------------------
    def accumulators(self, ctx: AggContext, over: Callable[[Any], Any] | None = None
                     ) -> dict[str, Any]:
        """``over``: how each aggregate function call is used (``call.over(window)`` for a
        running aggregate; default: as it is)."""
        from pyspark.sql import functions as F

        on = over or (lambda call: call)
        kind = self.kind
        v = user_col(self.column) if self.column is not None else None
        if ctx.mask is not None:   # rows outside the mask count as null values
            v = F.when(ctx.mask, F.lit(1) if v is None else v)
        if kind == "count":
            return {"n": on(F.count(F.lit(1) if v is None else v))}
        if kind == "sum":
            return {"s": self._sum(v, on)}
        if kind == "min":
            return {"m": on(F.min(v))}
        if kind == "max":
            return {"m": on(F.max(v))}
        if kind == "mean":
            return {"s": self._sum(v, on), "n": on(F.count(v))}
        present = v.isNotNull()
        if kind == "first":
            return {"v": on(F.min_by(v, F.when(present, ctx.order_struct(with_ts=True)))),
                    "t": on(F.min(F.when(present, ctx.ts)))}
        if kind == "last":
            return {"v": on(F.max_by(v, F.when(present, ctx.order_struct(with_ts=True)))),
                    "t": on(F.max(F.when(present, ctx.ts)))}
        if kind == "collect_list":
            # unsorted (order, value) structs: sorted when the result is formed
            return {"l": on(F.collect_list(F.when(
                present, F.struct(ctx.order_struct(with_ts=False).alias("o"), v.alias("v")))))}
        if kind == "approx_count_distinct":
            return {"d": on(F.collect_set(v))}
        raise AssertionError(kind)

    # --- exact sums (module docstring) ----------------------------------------------------
    @property
    def _exact(self) -> bool:
        """Whether the sum is integral or decimal: exact, or ``AGGREGATE_OVERFLOW``."""
        from pyspark.sql import types as T

        return isinstance(self.input_type, T.DecimalType) \
            or isinstance(sum_type(self.input_type), T.LongType)

    def _sum(self, v: Any, on: Callable[[Any], Any]) -> Any:
        from pyspark.sql import functions as F

        if not self._exact:
            return on(F.sum(v))
        return F.coalesce(on(F.try_sum(v)), F.when(on(F.count(v)) > 0, self._overflow()))

    def _added(self, a: Any, b: Any) -> Any:
        """``a + b`` of two partial sums, either null when it has no values."""
        from pyspark.sql import functions as F

        if not self._exact:
            return F.coalesce(a + b, a, b)
        both = a.isNotNull() & b.isNotNull()
        return F.coalesce(F.try_add(a, b), F.when(both, self._overflow()), a, b)

    def _overflow(self) -> Any:
        """Raises ``AGGREGATE_OVERFLOW`` in the task (the driver's ``reraise`` codes it)."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        where = ("Spark's decimal sums (38 digits)" if isinstance(self.input_type, T.DecimalType)
                 else "a 64-bit integer")
        return F.raise_error(F.lit(task_text(ExecutionError(
            f"the {self.kind} of {self.column!r} as {self.name!r}: its sum left the range of "
            f"{where} in a window of this run (Spark adds a window's values in its own order: "
            "a running total beyond the range fails); run_bundles on the input finds the key "
            "and the window", code="AGGREGATE_OVERFLOW"))))

    def accumulator_types(self) -> dict[str, Any] | None:
        """Spark's types of ``accumulators``' columns, known on the client for ``count``,
        ``sum``, ``min``, ``max`` and ``mean`` over integral, floating-point and other atomic
        inputs; ``None`` otherwise (the caller asks Spark: over Spark Connect a round trip
        that analyses the whole plan). ``tests/spark/test_native_aggs_types.py`` checks each
        against Spark's analysis."""
        from pyspark.sql import types as T

        kind, dtype = self.kind, self.input_type
        if kind == "count":
            return {"n": T.LongType()}
        total = sum_type(dtype)
        if kind == "sum":
            return None if total is None else {"s": total}
        if kind == "mean":
            return None if total is None else {"s": total, "n": T.LongType()}
        if kind in ("min", "max") and is_atomic(dtype):
            return {"m": dtype}
        return None

    def element(self, values: dict[str, Any], ts: Any, order: Any) -> dict[str, Any]:
        """The accumulator of ONE element (equal to ``accumulators`` over a one-row group):
        ``values`` maps input column names to the element's values, ``order`` is its
        arrival-order struct (``AggContext.order_struct(with_ts=False)``'s fields)."""
        from pyspark.sql import functions as F

        kind = self.kind
        v = values[self.column] if self.column is not None else None
        if kind == "count":
            return {"n": F.lit(1).cast("long") if v is None
                    else F.when(v.isNotNull(), F.lit(1)).otherwise(F.lit(0)).cast("long")}
        if kind == "sum":
            return {"s": v}
        if kind in ("min", "max"):
            return {"m": v}
        present = v.isNotNull()
        if kind == "mean":
            return {"s": v, "n": F.when(present, F.lit(1)).otherwise(F.lit(0)).cast("long")}
        if kind in ("first", "last"):
            return {"v": v, "t": F.when(present, ts)}
        if kind == "collect_list":
            return {"l": F.when(present, F.array(F.struct(order.alias("o"), v.alias("v"))))
                    .otherwise(F.array())}
        if kind == "approx_count_distinct":
            return {"d": F.when(present, F.array(v)).otherwise(F.array())}
        raise AssertionError(kind)

    # --- combining the on-time and late parts ------------------------------------------------
    def combine(self, on: dict[str, Any], late: dict[str, Any]) -> dict[str, Any]:
        from pyspark.sql import functions as F

        kind = self.kind
        if kind == "count":
            return {"n": F.coalesce(on["n"], F.lit(0)) + late["n"]}
        if kind == "sum":
            return {"s": self._added(on["s"], late["s"])}
        if kind == "min":
            return {"m": F.least(on["m"], late["m"])}
        if kind == "max":
            return {"m": F.greatest(on["m"], late["m"])}
        if kind == "mean":
            return {"s": self._added(on["s"], late["s"]),
                    "n": F.coalesce(on["n"], F.lit(0)) + late["n"]}
        if kind in ("first", "last"):
            better = late["t"] < on["t"] if kind == "first" else late["t"] >= on["t"]
            take_late = late["t"].isNotNull() & (on["t"].isNull() | better)
            return {"v": F.when(take_late, late["v"]).otherwise(on["v"]),
                    "t": F.when(take_late, late["t"]).otherwise(on["t"])}
        if kind == "collect_list":
            return {"l": F.when(on["l"].isNull(), late["l"])
                    .otherwise(F.concat(on["l"], late["l"]))}
        if kind == "approx_count_distinct":
            return {"d": F.when(on["d"].isNull(), late["d"])
                    .otherwise(F.array_union(on["d"], late["d"]))}
        raise AssertionError(kind)

    # --- results ------------------------------------------------------------------------------
    def result(self, acc: dict[str, Any]) -> Any:
        from pyspark.sql import functions as F

        kind = self.kind
        if kind == "count":
            out = acc["n"]
        elif kind == "sum":
            out = acc["s"]
        elif kind in ("min", "max"):
            out = acc["m"]
        elif kind == "mean":
            out = F.when(acc["n"] > 0, acc["s"].cast("double") / acc["n"].cast("double"))
        elif kind in ("first", "last"):
            out = acc["v"]
        elif kind == "collect_list":
            out = F.transform(F.array_sort(acc["l"]), lambda x: x["v"])
        else:
            out = F.size(acc["d"]).cast("long")
        return out.cast(self.dtype)


@dataclass
class AggContext:
    """Columns the accumulators need: event time and the arrival-order columns; ``mask``
    (a boolean Column, optional) restricts the accumulators to the rows where it holds."""

    ts: Any
    order: Sequence[Any]
    mask: Any = None

    def order_struct(self, with_ts: bool) -> Any:
        from pyspark.sql import functions as F

        fields = ([self.ts.alias("t")] if with_ts else []) + [
            c.alias(f"o{i}") for i, c in enumerate(self.order)]
        return F.struct(*fields)


def compile_aggregates(aggregates: Sequence[Any], fields: Sequence[Any],
                       input_types: dict[str, Any]) -> list[CompiledAggregate]:
    """Pair each declarative aggregate with its declared result field (same order; aggregates
    whose output name is a key column were dropped from ``fields`` and are skipped here)."""
    by_name = {f.name: f for f in fields}
    out = []
    for agg in aggregates:
        field = by_name.get(agg.name)
        if field is None:
            continue
        out.append(CompiledAggregate(agg.kind, agg.column, agg.name, field.dataType,
                                     input_types.get(agg.column) if agg.column else None))
    return out

