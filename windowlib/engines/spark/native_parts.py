"""Shared pieces of the native path's firing builders (``native_default.py``,
``native_counts.py``): internal column names, lookups into the run's clock arrays (bundle
clocks indexed by a Column), the ``bisect_left`` search tree over them, and ``Parts`` (the kept
(element, window) rows plus the bundle plan, with helpers that build firing rows and entry
structs).

Invariant: every helper builds lazy Column expressions; none collects data or joins. The
run's clocks (watermarks, processing times) enter a plan through ``clocks_sql``: as a one-row
scalar subquery, not as literals (one exception: ``rank``'s tree over several bundles).
Spark writes an integer literal into the generated Java source, and caches generated classes
by their source text, so a plan holding this run's watermark compiled about twenty new
classes every run (0.4-0.5 s); a subquery's array result is referenced by the generated code
instead, which is then the same from run to run. The subquery is evaluated on the driver (a
local table, no Spark job) once per execution.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.time import MAX_TS, MIN_TS
from windowlib.engines.spark.general import PHASE_ELEMENTS, PHASE_FINISH, PHASE_TIMERS_WM
from windowlib.engines.spark.native_aggs import AggContext

B, PB, WP, SUB, ORDER_N = "__wl_b", "__wl_pb", "__wl_wprev", "__wl_sub", "__wl_n"
PHASE, RORDER = "__wl_phase", "__wl_rorder"
WS, MX, ON_N, J, REASON = "__wl_ws", "__wl_mx", "__wl_on_n", "__wl_j", "__wl_reason"
LATE_LIST, ENTRY = "__wl_late", "__wl_entry"
BSTAR, OT_W, OT_P = "__wl_bstar", "__wl_ot_w", "__wl_ot_p"


def long_literals(values: Sequence[int]) -> str:
    """SQL text of an ``array<bigint>`` literal (parsed by the JVM in one call: building it
    from one ``lit`` per element costs a py4j round trip each)."""
    if not values:
        return "CAST(array() AS array<bigint>)"
    return "array(" + ",".join(f"{int(v)}L" for v in values) + ")"


def clocks_sql(values: Sequence[int]) -> str:
    """SQL text of the run's clock array ``values`` (``array<bigint>``) as a one-row scalar
    subquery: data to the generated code, not literals (module docstring). Identical
    subqueries of one plan are evaluated once (Spark reuses them)."""
    return f"(SELECT {long_literals(values)} FROM VALUES (0) AS clocks(c))"


def clock_sql(values: Sequence[int], index: int) -> str:
    """SQL text of ``values[index]`` (0-based, ``index`` known to the driver) from the run's
    clock array (``clocks_sql``)."""
    return at_sql(values, str(int(index)))


def at(values: Sequence[int], index: Any) -> Any:
    """``values[index]`` (0-based) for a Column index, from the run's clock array."""
    from pyspark.sql import functions as F

    return F.element_at(F.expr(clocks_sql(values)), index + F.lit(1))


def at_sql(values: Sequence[int], index_sql: str) -> str:
    """``at`` as SQL text, for the SQL expression ``index_sql``."""
    return f"element_at({clocks_sql(values)}, ({index_sql}) + 1)"


RANK_TREE_LIMIT = 512


def rank(sql: str, values: Sequence[int]) -> Any:
    """How many of the ascending run clocks ``values`` are ``< (sql)`` (``bisect_left``)
    for the SQL expression ``sql``, as an int Column: a balanced ``CASE WHEN`` tree over
    literals (log2(n) comparisons, compiled by Spark's code generation; a ``filter`` over the
    clock array beyond ``RANK_TREE_LIMIT`` values), built as SQL text and parsed once. Meant
    for per-window expressions; per-row bundle clocks come from a broadcast join
    (``native.bundle_columns``), which keeps the row-level generated code small.

    One value (an hourly run) is compared with the run's clock array (``clock_sql``), so the
    plan's generated code is the same from run to run. A tree of several values keeps its
    literals: looking the array up at every node made a 48-bundle one-shot run of 1M events
    slower (2.0 s -> 3.1 s; probably the generated method outgrew what the JVM compiles);
    such a plan compiles its classes in every run instead (about 0.5 s)."""
    from pyspark.sql import functions as F

    if len(values) > RANK_TREE_LIMIT:        # the tree's code would grow with n: a filter
        return F.expr(f"size(filter({clocks_sql(values)}, v -> v < ({sql})))")
    if len(values) == 1:
        return F.expr(f"CAST(CASE WHEN {clock_sql(values, 0)} < ({sql}) THEN 1 ELSE 0 END "
                      f"AS int)")

    def tree(lo: int, hi: int) -> str:       # the answer lies in [lo, hi]
        if lo == hi:
            return str(lo)
        mid = (lo + hi) // 2
        return (f"CASE WHEN {int(values[mid])}L < ({sql}) THEN {tree(mid + 1, hi)} "
                f"ELSE {tree(lo, mid)} END")

    return F.expr(f"CAST({tree(0, len(values))} AS int)")


def nullable(dtype: Any) -> Any:
    """``dtype`` with every nested field, element and value nullable (casts to it never fail
    on nullability)."""
    from pyspark.sql import types as T

    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(nullable(dtype.elementType), True)
    if isinstance(dtype, T.MapType):
        return T.MapType(nullable(dtype.keyType), nullable(dtype.valueType), True)
    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f.name, nullable(f.dataType), True)
                             for f in dtype.fields])
    return dtype


def finite(col: Any) -> Any:
    """``col`` with the clock sentinels ``MIN_TS``/``MAX_TS`` as null; ``col`` a Column or an
    internal column's name (then parsed from SQL text in one py4j call instead of ~20)."""
    from pyspark.sql import functions as F

    if isinstance(col, str):
        return F.expr(f"CASE WHEN (`{col}` = {MIN_TS}L) OR (`{col}` = {MAX_TS}L) "
                      f"THEN CAST(NULL AS BIGINT) ELSE `{col}` END")
    return F.when((col == F.lit(MIN_TS)) | (col == F.lit(MAX_TS)), F.lit(None).cast("long")
                  ).otherwise(col)


def plus_saturating(col: Any, ms: int) -> Any:
    """``col + ms`` saturating at ``MAX_TS`` (``lateness.cleanup_time``)."""
    from pyspark.sql import functions as F

    if ms == 0:
        return col
    return F.when(col >= F.lit(MAX_TS - ms), F.lit(MAX_TS)).otherwise(col + F.lit(ms))


def saturating_sql(sql: str, ms: int) -> str:
    """``plus_saturating`` as SQL text over the SQL expression ``sql``."""
    if ms == 0:
        return sql
    return f"CASE WHEN ({sql} >= {MAX_TS - ms}L) THEN {MAX_TS}L ELSE ({sql} + {ms}) END"


@dataclass
class Parts:
    """What the firing builders share: kept (element, window) rows and the plan."""

    kept: Any
    keys: list
    key_names: list
    order: list
    ctx: AggContext
    compiled: list
    P: list
    W: list
    W_before: list
    size: int
    lateness: int
    finalize: bool
    accumulating: bool
    retracting: bool
    shared_scan: bool = False   # the default trigger's shape (native_default)

    @property
    def max_sql(self) -> str:
        """SQL text of a window's ``max_timestamp`` (``window_start + size - 1``)."""
        return f"`{WS}` + {self.size - 1}L"

    @property
    def group(self) -> list:
        from pyspark.sql import functions as F

        return [*self.keys, F.col(WS)]

    def accumulators(self, prefix: str, window: Any = None, mask: Any = None
                     ) -> tuple[list, list[dict]]:
        """Aliased accumulator expressions (running over ``window`` when given, restricted
        to the rows where ``mask`` holds when given) and, per aggregate, ``{name: Column}``
        referring to them."""
        from pyspark.sql import functions as F

        ctx = self.ctx if mask is None else AggContext(self.ctx.ts, self.ctx.order, mask)
        over = None if window is None else (lambda call: call.over(window))
        exprs, accs = [], []
        for i, c in enumerate(self.compiled):
            names = {}
            for name, expr in c.accumulators(ctx, over).items():
                col = f"{prefix}{i}_{name}"
                exprs.append(expr.alias(col))
                names[name] = F.col(col)
            accs.append(names)
        return exprs, accs

    def window_bounds(self) -> list:
        from pyspark.sql import functions as F

        return [*self.keys, F.col(WS).alias("window_start"),
                (F.col(WS) + F.lit(self.size)).alias("window_end")]

    def on_time_rows(self, on: Any, results: list, pane: Any) -> Any:
        """The ON_TIME firing of each window of ``on`` (one row per window with the window's
        accumulators): at the first bundle whose watermark reaches ``max``, or at the end of
        a finalized input."""
        from pyspark.sql import functions as F

        n, W, P = len(self.P), self.W, self.P
        mx = F.col(WS) + F.lit(self.size - 1)
        b_star = rank(self.max_sql, W) if n else F.lit(0)
        fired = on.withColumn(B, b_star.cast("int"))
        if not self.finalize:
            fired = fired.filter(F.col(B) < F.lit(n))
        in_run = F.col(B) < F.lit(n)
        return fired.select(
            *self.window_bounds(), pane.cast("long").alias("pane_index"),
            F.lit("ON_TIME").alias("timing"), F.lit(self.lateness == 0).alias("is_final"),
            F.lit(False).alias("retract"),
            F.when(in_run, finite(at(W, F.col(B)))).alias("watermark"),
            F.when(in_run, finite(at(P, F.col(B)))).alias("processing_time"),
            *results,
            F.when(in_run, F.col(B)).otherwise(F.lit(n)).alias(B),
            F.when(in_run, F.lit(PHASE_TIMERS_WM)).otherwise(F.lit(PHASE_FINISH)).alias(PHASE),
            F.lit(0).cast("long").alias(SUB), mx.alias(ORDER_N), F.lit(1).alias(RORDER))

    def entry_names(self) -> list[str]:
        return ["pane_index", "timing", "is_final", "retract", "watermark", "processing_time",
                *[c.name for c in self.compiled], B, PHASE, SUB, ORDER_N, RORDER]

    def entry(self, pane: Any, timing: Any, is_final: Any, retract: Any, b: Any, sub: Any,
              results: list, emit: Any, rorder: int) -> Any:
        """One firing (or retraction) of an element of bundle ``b`` as a struct (fields:
        ``entry_names`` and ``emit``, false for entries that are not output)."""
        from pyspark.sql import functions as F

        return self._entry(pane, timing, is_final, retract,
                           finite(at(self.W_before, b)), finite(at(self.P, b)), results,
                           b, F.lit(PHASE_ELEMENTS), sub, F.col(WS), F.lit(rorder), emit=emit)

    def _values(self, pane: Any, timing: Any, is_final: Any, retract: Any, watermark: Any,
                processing_time: Any, results: list, b: Any, phase: Any, sub: Any,
                order_n: Any, rorder: Any) -> list:
        """The entry's values in ``entry_names`` order, cast to their entry types."""
        return [pane.cast("long"), timing, is_final, retract, watermark.cast("long"),
                processing_time.cast("long"),
                *[r.cast(c.dtype) for r, c in zip(results, self.compiled)],
                b.cast("int"), phase.cast("int"), sub.cast("long"), order_n.cast("long"),
                rorder.cast("int")]

    def element_values(self, pane: Any, timing: Any, retract: Any, results: list,
                       rorder: int) -> list:
        """Values (``entry_names`` order) of a firing or retraction caused by a late element:
        the clocks of its bundle (the row's ``__wl_pb``/``__wl_wprev``), ``is_final`` false."""
        from pyspark.sql import functions as F

        return self._values(pane, timing, F.lit(False), retract, finite(WP),
                            finite(PB), results, F.col(B), F.lit(PHASE_ELEMENTS),
                            F.col(SUB), F.col(WS), F.lit(rorder))

    def _entry(self, *args: Any, emit: Any) -> Any:
        from pyspark.sql import functions as F

        return F.struct(*[v.alias(n) for v, n in zip(self._values(*args), self.entry_names())],
                        emit.alias("emit"))

    def with_on_time_clocks(self, frame: Any, also: Mapping[str, Any] | None = None) -> Any:
        """``frame`` (one row per window) with the bundle of its ON_TIME firing (``len(P)``
        if none in this run) and the clocks there, computed once per row (columns, so the
        search tree is not repeated inside the firing expressions). ``also``: more columns
        added in the same projection (they may read ``BSTAR``, not the clocks)."""
        from pyspark.sql import functions as F

        n, W, P = len(self.P), self.W, self.P
        frame = frame.withColumn(BSTAR, rank(self.max_sql, W) if n else F.lit(0))
        in_run = F.col(BSTAR) < F.lit(n)
        return frame.withColumns({OT_W: F.when(in_run, at(W, F.col(BSTAR))),
                                  OT_P: F.when(in_run, at(P, F.col(BSTAR))), **(also or {})})

    def on_time_values(self, results: list, had_on_time: Any) -> tuple[list, Any]:
        """The ON_TIME firing of a window (as ``on_time_rows``; needs the columns of
        ``with_on_time_clocks``): its values in ``entry_names`` order, and whether it is
        emitted — iff the window had on-time elements and its end timer fired in this run."""
        from pyspark.sql import functions as F

        n = len(self.P)
        in_run = F.col(BSTAR) < F.lit(n)
        emit = had_on_time if self.finalize else (had_on_time & in_run)
        values = self._values(
            F.lit(0), F.lit("ON_TIME"), F.lit(self.lateness == 0), F.lit(False),
            finite(OT_W), finite(OT_P), results, F.col(BSTAR),
            F.when(in_run, F.lit(PHASE_TIMERS_WM)).otherwise(F.lit(PHASE_FINISH)),
            F.lit(0), F.col(WS) + F.lit(self.size - 1), F.lit(1))
        return values, emit

    def on_time_entry(self, results: list, had_on_time: Any) -> Any:
        """``on_time_values`` as an entry struct."""
        from pyspark.sql import functions as F

        values, emit = self.on_time_values(results, had_on_time)
        return F.struct(*[v.alias(n) for v, n in zip(values, self.entry_names())],
                        emit.alias("emit"))

    def element_rows(self, frame: Any, timing: Any, pane: Any, results: list,
                     rorder: int = 1) -> Any:
        """Firings caused by an element (EARLY or LATE; ``rorder`` 0: retractions before
        them): the clocks of the element's bundle."""
        from pyspark.sql import functions as F

        timing = F.lit(timing) if isinstance(timing, str) else timing
        return frame.select(
            *self.window_bounds(), pane.cast("long").alias("pane_index"),
            timing.alias("timing"), F.lit(False).alias("is_final"),
            F.lit(rorder == 0).alias("retract"),
            finite(WP).alias("watermark"), finite(PB).alias("processing_time"),
            *results, F.col(B), F.lit(PHASE_ELEMENTS).alias(PHASE), F.col(SUB),
            F.col(WS).alias(ORDER_N), F.lit(rorder).alias(RORDER))
