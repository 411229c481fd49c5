"""The native path: the planner's subset of pipelines as plain Spark SQL (no Python per row).

Scope (``planner.py`` proves a pipeline is inside it): event-time tumbling and sliding windows
(offsets, negative timestamps: ``ts - pmod(ts - offset, slide)`` is ``core.windows.
window_start``), keyed or ``window_all``, declarative aggregates (``native_aggs.py``), the
default ``EventTimeTrigger`` (or ``EventTimeTrigger.after_end_of_window()`` without early or
late triggers, which fires identically; with count early/late triggers see
``native_counts.py``), allowed lateness, every accumulation mode.

Why it equals the reference engine (``core/driver.py``; ``W_{b-1}`` is the watermark an element
of bundle ``b`` meets, ``max`` = ``window_end - 1``, ``cleanup = max + lateness``):

- an element is dropped for a window iff ``cleanup <= W_{b-1}``; it goes to the late output
  iff it is dropped for every window, i.e. for its latest window (cleanup grows with start);
- a kept element with ``W_{b-1} < max`` is **on time**: it registers the end timer. The timer
  fires at the first bundle ``b*`` with ``W_{b*} >= max`` (``b*`` = how many ``W_b < max``, as
  the watermark is monotone), or at the end of input when finalized; every on-time element has
  ``b <= b*``, so the ON_TIME pane (index 0) aggregates exactly the on-time elements, with
  ``watermark = W_{b*}``, ``processing_time = P_{b*}`` (null at the end of input) and
  ``is_final`` iff the timer is also the cleanup timer (lateness 0);
- a kept element with ``W_{b-1} >= max`` fires at once (LATE): one firing per such element in
  arrival order (bundle, then the arrival order inside the bundle — the general path's
  ``order_by`` columns or ``(ts, xxhash64(row), hash(row))``); its pane index continues after
  the ON_TIME pane (which exists iff the window had on-time elements); accumulating: on-time
  accumulator combined with the running late accumulator; discarding: the element alone;
  accumulating_and_retracting: before it, the previous pane's rows again with
  ``retract=True``, ``is_final=False`` and the current clock;
- rejects: the timestamp reason of ``prepare_input``, then ``future_timestamp``
  (``ts > P_b + max_future_skew``, when ``P_b`` is known), then ``missing_key``.

Plan: one pass over the prepared input; the on-time part is one ``groupBy(key, window)``
aggregate (one shuffle, as hand-written SQL); only the late part (small) goes through a window
function ordered by arrival and a join with the on-time accumulators. The bundle plan (``P_b``,
``W_b``) is the small aggregate of ``bundles.plan_bundles``, inlined as literal arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MAX_TS, MIN_TS
from windowlib.core.watermarks import BoundedOutOfOrderness, WatermarkStrategy
from windowlib.engines.spark.bundles import (
    ARRIVAL,
    INTERNAL_PREFIX,
    TREASON,
    TS,
    BundleOverride,
    BundlePlan,
    plan_bundles,
)
from windowlib.engines.spark.general import (
    PHASE_ELEMENTS,
    PHASE_FINISH,
    PHASE_TIMERS_WM,
    prepare_input,
    result_fields,
)
from windowlib.engines.spark.native_aggs import AggContext, compile_aggregates

B, PB, WP, SUB, ORDER_N = "__wl_b", "__wl_pb", "__wl_wprev", "__wl_sub", "__wl_n"
PHASE, RORDER = "__wl_phase", "__wl_rorder"
WS, MX, ON_N, J, REASON = "__wl_ws", "__wl_mx", "__wl_on_n", "__wl_j", "__wl_reason"


@dataclass
class NativeRun:
    """The native path's three internal frames (window bounds and clocks as ms, plus the
    ordering columns ``__wl_b``/``__wl_phase``/``__wl_sub``/``__wl_n``/``__wl_rorder`` the test
    harness sorts by) and what they were computed from."""

    firings: Any
    late: Any
    rejects: Any
    plan: BundlePlan
    key_columns: tuple[str, ...]
    result_columns: tuple[str, ...]
    retracting: bool
    element_columns: tuple[str, ...]

    def public(self, run_id: str | None) -> tuple[Any, Any, Any]:
        """``(firings, late, rejects)`` with the general path's public schema."""
        from pyspark.sql import functions as F

        def ts(name: str) -> Any:
            return F.timestamp_millis(F.col(name)).alias(name)

        keys = [F.col(f"`{c}`") for c in self.key_columns]
        meta = [ts("window_start"), ts("window_end"), F.col("pane_index"), F.col("timing"),
                F.col("is_final")]
        if self.retracting:
            meta.append(F.col("retract"))
        meta += [ts("watermark"), ts("processing_time"),
                 F.lit(run_id).cast("string").alias("run_id")]
        results = [F.col(f"`{c}`") for c in self.result_columns]
        element = [F.col(f"`{c}`") for c in self.element_columns]
        return (self.firings.select(*keys, *meta, *results),
                self.late.select(*element, F.col("reason"), ts("watermark")),
                self.rejects.select(*element, F.col("reason")))


def _longs(values: Sequence[int]) -> Any:
    from pyspark.sql import functions as F

    if not values:
        return F.array().cast("array<bigint>")
    return F.array(*[F.lit(int(v)).cast("long") for v in values])


def _at(values: Sequence[int], index: Any) -> Any:
    """``values[index]`` (0-based) for a Column index, from a literal array."""
    from pyspark.sql import functions as F

    return F.element_at(_longs(values), index + F.lit(1))


def _finite(col: Any) -> Any:
    from pyspark.sql import functions as F

    return F.when((col == F.lit(MIN_TS)) | (col == F.lit(MAX_TS)), F.lit(None).cast("long")
                  ).otherwise(col)


def _plus_saturating(col: Any, ms: int) -> Any:
    """``col + ms`` saturating at ``MAX_TS`` (``lateness.cleanup_time``)."""
    from pyspark.sql import functions as F

    if ms == 0:
        return col
    return F.when(col >= F.lit(MAX_TS - ms), F.lit(MAX_TS)).otherwise(col + F.lit(ms))


def run_native(pipeline: Pipeline, df: Any, arrival: str, *,
               watermark: WatermarkStrategy | None = None, finalize: bool = False,
               order_by: Sequence[str] | str | None = None, processing_time: Any = None,
               arrival_interval: Any = None,
               overrides: Mapping[Any, BundleOverride] | None = None,
               seq_column: str | None = None) -> NativeRun:
    """Plan the bundles (one small aggregate) and build the native frames (lazy; nothing is
    collected). The caller (``engine.run_dataframe``) has checked ``planner.plan_path``.
    ``seq_column`` is the test harness's element number inside a bundle."""
    from pyspark.sql import functions as F

    logic = pipeline.compile()
    strategy = watermark if watermark is not None else BoundedOutOfOrderness(0)
    prepared, kind = prepare_input(df, pipeline, arrival)
    user_columns = [c for c in df.columns if not c.startswith(INTERNAL_PREFIX)]
    plan = plan_bundles(prepared, kind=kind, key_columns=logic.key_columns, strategy=strategy,
                        max_future_skew_ms=logic.max_future_skew_ms, overrides=overrides,
                        processing_time=processing_time, arrival_interval=arrival_interval)
    types = {f.name: f.dataType for f in df.schema.fields}
    mode, fields = result_fields(pipeline, types, None)
    if mode != "typed":
        raise DefinitionError("the native path needs typed declarative aggregates",
                              code="NATIVE_UNSUPPORTED")
    fields = [f for f in fields if f.name not in logic.key_column_set]
    compiled = compile_aggregates(pipeline.function.fn.aggregates, fields, types)

    n = len(plan)
    P, W = plan.processing_times, plan.watermarks
    w_before = [plan.initial_watermark, *W[:-1]]
    lateness = logic.allowed_lateness_ms
    assigner = logic.assigner
    size = assigner.size_ms
    slide = getattr(assigner, "slide_ms", size)
    offset = assigner.offset_ms

    if n:
        pairs = []
        for i, a in enumerate(plan.arrivals):
            pairs += [F.lit(a), F.lit(i)]
        b_col = F.create_map(*pairs)[F.col(ARRIVAL)]
    else:
        b_col = F.lit(None).cast("int")
    keys = [F.col(f"`{c}`") for c in logic.key_columns]
    x = (prepared.withColumn(B, b_col.cast("int"))
         .withColumn(PB, _at(P, F.col(B))).withColumn(WP, _at(w_before, F.col(B))))

    # --- rejects (the general walker's order of checks) -----------------------------------
    skew = logic.max_future_skew_ms
    future = F.when((F.col(PB) != F.lit(MIN_TS)) & (F.col(TS) > F.col(PB) + F.lit(skew)),
                    F.lit("future_timestamp"))
    missing = None
    for k in keys:
        missing = k.isNull() if missing is None else (missing | k.isNull())
    reason = F.coalesce(F.col(TREASON), future,
                        *([F.when(missing, F.lit("missing_key"))] if missing is not None else []))
    x = x.withColumn(REASON, reason)
    sub = F.col(seq_column) if seq_column else F.lit(0).cast("long")
    x = x.withColumn(SUB, sub.cast("long"))
    rejects = x.filter(F.col(REASON).isNotNull()).select(
        *[F.col(f"`{c}`") for c in user_columns], F.col(REASON).alias("reason"), B, SUB)
    accepted = x.filter(F.col(REASON).isNull())

    # --- windows and lateness ---------------------------------------------------------------
    ts = F.col(TS)
    last_start = ts - F.pmod(ts - F.lit(offset), F.lit(slide))
    dropped_all = _plus_saturating(last_start + F.lit(size - 1), lateness) <= F.col(WP)
    late = accepted.filter(dropped_all).select(
        *[F.col(f"`{c}`") for c in user_columns], F.lit("too_late").alias("reason"),
        _finite(F.col(WP)).alias("watermark"), B, SUB)
    kept = accepted.filter(~dropped_all)
    if slide == size:
        kept = kept.withColumn(WS, last_start)
    else:
        k = -(-size // slide)
        starts = F.array(*[last_start - F.lit(i * slide) for i in range(k)])
        kept = kept.withColumn(WS, F.explode(starts))
        if size % slide:
            kept = kept.filter(F.col(WS) > ts - F.lit(size))
        kept = kept.filter(_plus_saturating(F.col(WS) + F.lit(size - 1), lateness)
                           > F.col(WP))
    kept = kept.withColumn(MX, F.col(WS) + F.lit(size - 1))

    if order_by is not None:
        order = [F.col(f"`{c}`") for c in ([order_by] if isinstance(order_by, str)
                                           else order_by)]
    else:
        cols = [F.col(f"`{c}`") for c in user_columns]
        order = [ts, F.xxhash64(*cols), F.hash(*cols)]
    parts = Parts(kept=kept, keys=keys, key_names=[*logic.key_columns, WS], order=order,
                  ctx=AggContext(ts=ts, order=[F.col(B), *order]), compiled=compiled,
                  P=P, W=W, size=size, lateness=lateness, finalize=finalize,
                  accumulating=logic.accumulation != "discarding",
                  retracting=logic.retracting)
    trigger = logic.trigger
    early, late_every = count_phases(trigger)
    if early is None and late_every is None:
        firings = default_firings(parts)
    else:
        from windowlib.engines.spark.native_counts import count_firings

        firings = count_firings(parts, early, late_every)
    if not logic.retracting:
        firings = firings.drop("retract")
    return NativeRun(firings=firings, late=late, rejects=rejects, plan=plan,
                     key_columns=logic.key_columns,
                     result_columns=tuple(c.name for c in compiled),
                     retracting=logic.retracting, element_columns=tuple(user_columns))


def count_phases(trigger: Any) -> tuple[int | None, int | None]:
    """``(early count, late count)`` of a native ``after_end_of_window`` trigger (``None``:
    no early firings / every late element fires); ``(None, None)`` for the default."""
    early = getattr(trigger, "early", None)
    late = getattr(trigger, "late", None)
    return (None if early is None else early.count, None if late is None else late.count)


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
    size: int
    lateness: int
    finalize: bool
    accumulating: bool
    retracting: bool

    @property
    def group(self) -> list:
        from pyspark.sql import functions as F

        return [*self.keys, F.col(WS)]

    def accumulators(self, prefix: str, window: Any = None) -> tuple[list, list[dict]]:
        """Aliased accumulator expressions (running over ``window`` when given) and, per
        aggregate, ``{name: Column}`` referring to them."""
        from pyspark.sql import functions as F

        exprs, accs = [], []
        for i, c in enumerate(self.compiled):
            names = {}
            for name, expr in c.accumulators(self.ctx).items():
                col = f"{prefix}{i}_{name}"
                exprs.append((expr if window is None else expr.over(window)).alias(col))
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
        b_star = F.size(F.filter(_longs(W), lambda w: w < mx)) if n else F.lit(0)
        fired = on.withColumn(B, b_star.cast("int"))
        if not self.finalize:
            fired = fired.filter(F.col(B) < F.lit(n))
        in_run = F.col(B) < F.lit(n)
        return fired.select(
            *self.window_bounds(), pane.cast("long").alias("pane_index"),
            F.lit("ON_TIME").alias("timing"), F.lit(self.lateness == 0).alias("is_final"),
            F.lit(False).alias("retract"),
            F.when(in_run, _finite(_at(W, F.col(B)))).alias("watermark"),
            F.when(in_run, _finite(_at(P, F.col(B)))).alias("processing_time"),
            *results,
            F.when(in_run, F.col(B)).otherwise(F.lit(n)).alias(B),
            F.when(in_run, F.lit(PHASE_TIMERS_WM)).otherwise(F.lit(PHASE_FINISH)).alias(PHASE),
            F.lit(0).cast("long").alias(SUB), mx.alias(ORDER_N), F.lit(1).alias(RORDER))

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
            _finite(F.col(WP)).alias("watermark"), _finite(F.col(PB)).alias("processing_time"),
            *results, F.col(B), F.lit(PHASE_ELEMENTS).alias(PHASE), F.col(SUB),
            F.col(WS).alias(ORDER_N), F.lit(rorder).alias(RORDER))


def default_firings(parts: Parts) -> Any:
    """The default trigger: ON_TIME from one aggregate, one LATE firing per late element."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    compiled, group, key_names = parts.compiled, parts.group, parts.key_names
    kept = parts.kept
    agg_exprs, on_accs = parts.accumulators("__wl_a")
    on = kept.filter(F.col(WP) < F.col(MX)).groupBy(*group).agg(
        F.count(F.lit(1)).alias(ON_N), *agg_exprs)
    on_results = [c.result(acc).alias(c.name) for c, acc in zip(compiled, on_accs)]
    on_time = parts.on_time_rows(on, on_results, F.lit(0))

    # one firing per kept late element, running aggregates in arrival order
    by_arrival = Window.partitionBy(*group).orderBy(F.col(B), *parts.order)
    frame = by_arrival.rowsBetween(Window.unboundedPreceding if parts.accumulating
                                   else Window.currentRow, Window.currentRow)
    run_exprs, run_accs = parts.accumulators("__wl_r", frame)
    late_rows = kept.filter(F.col(WP) >= F.col(MX)).select(
        *parts.keys, F.col(WS), F.col(B), F.col(PB), F.col(WP), F.col(SUB),
        F.row_number().over(by_arrival).cast("long").alias(J), *run_exprs)
    on_cols = [ON_N] + [f"__wl_a{i}_{name}" for i, acc in enumerate(on_accs) for name in acc]
    joined = late_rows.join(on.select(*key_names, *on_cols), on=key_names, how="left")
    results = []
    for c, on_acc, run_acc in zip(compiled, on_accs, run_accs):
        acc = c.combine(on_acc, run_acc) if parts.accumulating else run_acc
        results.append(c.result(acc).alias(c.name))
    had_on_time = F.col(ON_N).isNotNull()
    pane = F.col(J) - F.lit(1) + F.when(had_on_time, F.lit(1)).otherwise(F.lit(0))
    firings = on_time.unionByName(parts.element_rows(joined, "LATE", pane, results))
    if parts.retracting:
        by_j = Window.partitionBy(*[F.col(f"`{c}`") for c in key_names]).orderBy(F.col(J))
        lags = []
        for c, on_acc, run_acc in zip(compiled, on_accs, run_accs):
            lagged = F.lag(c.result(c.combine(on_acc, run_acc))).over(by_j)
            lags.append(F.when(F.col(J) == F.lit(1), c.result(on_acc))
                        .otherwise(lagged).alias(f"__wl_prev_{c.name}"))
        # the previous firing is looked up before filtering (the first late firing of a
        # window without on-time elements retracts nothing but is retracted by the next)
        retracted = joined.select("*", *lags).filter((F.col(J) > F.lit(1)) | had_on_time)
        prev = [F.col(f"`__wl_prev_{c.name}`").alias(c.name) for c in compiled]
        timing = F.when(F.col(J) == F.lit(1), F.lit("ON_TIME")).otherwise(F.lit("LATE"))
        firings = firings.unionByName(
            parts.element_rows(retracted, timing, pane - F.lit(1), prev, rorder=0))
    return firings
