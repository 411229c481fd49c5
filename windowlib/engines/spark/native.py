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

Plan (default trigger): the bundle plan (``P_b``, ``W_b``) is the small aggregate of
``bundles.plan_bundles`` (a separate job), inlined as literals (bundle index and ON_TIME bundle
by a search tree of ``CASE WHEN``); then ONE scan of the input and ONE ``groupBy(key,
window)``: per window, the on-time accumulators (aggregates masked to on-time rows) and the
kept late elements (``collect_list`` of ``struct(arrival order, ts, values)``, empty for most
windows). Each window row yields its firings through an array exploded once: ON_TIME, then
one LATE firing per late element in arrival order (the sorted list folded by ``aggregate``
with the running accumulator: on-time accumulator combined with the element's, or the element
alone when discarding; retractions repeat the previous firing). No join, no window function,
no second read. Count triggers (``native_counts.py``) still use window functions and a join.
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
LATE_LIST, ENTRY = "__wl_late", "__wl_entry"
BSTAR, OT_W, OT_P = "__wl_bstar", "__wl_ot_w", "__wl_ot_p"


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


RANK_TREE_LIMIT = 512


def _rank(col: Any, values: Sequence[Any]) -> Any:
    """How many of the ascending ``values`` are ``< col`` (``bisect_left``), as an int Column:
    a balanced tree of ``CASE WHEN`` over literals (log2(n) comparisons, compiled by Spark's
    code generation); beyond ``RANK_TREE_LIMIT`` values, a higher-order ``filter``."""
    from pyspark.sql import functions as F

    n = len(values)
    if n > RANK_TREE_LIMIT:
        return F.size(F.filter(F.array(*[F.lit(v) for v in values]), lambda v: v < col))

    def tree(lo: int, hi: int) -> Any:       # the answer lies in [lo, hi]
        if lo == hi:
            return F.lit(lo)
        mid = (lo + hi) // 2
        return F.when(F.lit(values[mid]) < col, tree(mid + 1, hi)).otherwise(tree(lo, mid))

    return tree(0, n).cast("int")


def _nullable(dtype: Any) -> Any:
    """``dtype`` with every nested field, element and value nullable (casts to it never fail
    on nullability)."""
    from pyspark.sql import types as T

    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(_nullable(dtype.elementType), True)
    if isinstance(dtype, T.MapType):
        return T.MapType(_nullable(dtype.keyType), _nullable(dtype.valueType), True)
    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True)
                             for f in dtype.fields])
    return dtype


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

    # the bundle index: how many arrival values sort below the row's (a search tree of
    # literals: generated code, no map lookup per row)
    b_col = _rank(F.col(ARRIVAL), plan.arrivals) if n else F.lit(None).cast("int")
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
                  P=P, W=W, W_before=w_before, size=size, lateness=lateness, finalize=finalize,
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
    W_before: list
    size: int
    lateness: int
    finalize: bool
    accumulating: bool
    retracting: bool

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
        exprs, accs = [], []
        for i, c in enumerate(self.compiled):
            names = {}
            for name, expr in c.accumulators(ctx).items():
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
        b_star = _rank(mx, W) if n else F.lit(0)
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

    def entry_names(self) -> list[str]:
        return ["pane_index", "timing", "is_final", "retract", "watermark", "processing_time",
                *[c.name for c in self.compiled], B, PHASE, SUB, ORDER_N, RORDER]

    def entry(self, pane: Any, timing: Any, is_final: Any, retract: Any, b: Any, sub: Any,
              results: list, emit: Any, rorder: int) -> Any:
        """One firing (or retraction) of an element of bundle ``b`` as a struct (fields:
        ``entry_names`` and ``emit``, false for entries that are not output)."""
        from pyspark.sql import functions as F

        return self._entry(pane, timing, is_final, retract,
                           _finite(_at(self.W_before, b)), _finite(_at(self.P, b)), results,
                           b, F.lit(PHASE_ELEMENTS), sub, F.col(WS), F.lit(rorder), emit)

    def _entry(self, pane: Any, timing: Any, is_final: Any, retract: Any, watermark: Any,
               processing_time: Any, results: list, b: Any, phase: Any, sub: Any,
               order_n: Any, rorder: Any, emit: Any) -> Any:
        from pyspark.sql import functions as F

        values = [pane.cast("long"), timing, is_final, retract, watermark.cast("long"),
                  processing_time.cast("long"),
                  *[r.cast(c.dtype) for r, c in zip(results, self.compiled)],
                  b.cast("int"), phase.cast("int"), sub.cast("long"), order_n.cast("long"),
                  rorder.cast("int")]
        return F.struct(*[v.alias(n) for v, n in zip(values, self.entry_names())],
                        emit.alias("emit"))

    def with_on_time_clocks(self, frame: Any) -> Any:
        """``frame`` (one row per window) with the bundle of its ON_TIME firing (``len(P)``
        if none in this run) and the clocks there, computed once per row (columns, so the
        search tree is not repeated inside the firing expressions)."""
        from pyspark.sql import functions as F

        n, W, P = len(self.P), self.W, self.P
        mx = F.col(WS) + F.lit(self.size - 1)
        frame = frame.withColumn(BSTAR, _rank(mx, W) if n else F.lit(0))
        in_run = F.col(BSTAR) < F.lit(n)
        return (frame.withColumn(OT_W, F.when(in_run, _at(W, F.col(BSTAR))))
                .withColumn(OT_P, F.when(in_run, _at(P, F.col(BSTAR)))))

    def on_time_entry(self, results: list, had_on_time: Any) -> Any:
        """The ON_TIME firing of a window (as ``on_time_rows``; needs the columns of
        ``with_on_time_clocks``) as an entry struct; emitted iff the window had on-time
        elements and its end timer fired in this run."""
        from pyspark.sql import functions as F

        n = len(self.P)
        in_run = F.col(BSTAR) < F.lit(n)
        emit = had_on_time if self.finalize else (had_on_time & in_run)
        return self._entry(
            F.lit(0), F.lit("ON_TIME"), F.lit(self.lateness == 0), F.lit(False),
            _finite(F.col(OT_W)), _finite(F.col(OT_P)), results, F.col(BSTAR),
            F.when(in_run, F.lit(PHASE_TIMERS_WM)).otherwise(F.lit(PHASE_FINISH)),
            F.lit(0), F.col(WS) + F.lit(self.size - 1), F.lit(1), emit)

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
    """The default trigger in ONE aggregate and no join: per window, the on-time
    accumulators (masked to on-time rows) and the list of kept late elements; the firings
    of a window (ON_TIME, then one LATE per late element in arrival order, with running
    accumulators from a fold over the sorted list; retractions before them) are generated
    from that one row."""
    from pyspark.sql import functions as F

    compiled, kept = parts.compiled, parts.kept
    on = F.col(WP) < F.col(MX)
    agg_exprs, on_accs = parts.accumulators("__wl_a", mask=on)
    value_columns = sorted({c.column for c in compiled if c.column is not None})
    payload = {name: F.col(f"`{name}`") for name in value_columns}
    order_fields = [F.col(B).alias("o0"), *[c.alias(f"o{i + 1}")
                                            for i, c in enumerate(parts.order)]]
    element = F.struct(F.struct(*order_fields, F.col(SUB).alias("sub")).alias("k"),
                       F.col(TS).alias("t"),
                       *[col.alias(f"p{j}") for j, col in enumerate(payload.values())])
    agg = kept.groupBy(*parts.group).agg(
        F.count(F.when(on, F.lit(1))).alias(ON_N), *agg_exprs,
        F.collect_list(F.when(~on, element)).alias(LATE_LIST))
    types = {f.name: _nullable(f.dataType) for f in agg.schema.fields}
    agg = parts.with_on_time_clocks(agg)

    had_on_time = F.col(ON_N) > F.lit(0)
    on_results = [c.result(acc) for c, acc in zip(compiled, on_accs)]
    on_time = parts.on_time_entry(on_results, had_on_time)

    acc_names = [[f"__wl_a{i}_{name}" for name in acc] for i, acc in enumerate(on_accs)]
    flat = [name for names in acc_names for name in names]

    def as_accs(struct: Any) -> list[dict]:
        return [{name: struct[f"{prefix}"] for name, prefix in zip(acc, names)}
                for acc, names in zip(on_accs, acc_names)]

    def typed(accs: list[dict]) -> list:
        return [col.cast(types[name]).alias(name) for acc, names in zip(accs, acc_names)
                for col, name in zip(acc.values(), names)]

    def step(state: Any, x: Any) -> Any:
        """Fold one late element into the running accumulator; append its firing's
        accumulators (and the previous firing's, which a retraction repeats)."""
        values = {name: x[f"p{j}"] for j, name in enumerate(payload)}
        order = F.struct(*[x["k"][f"o{i}"].alias(f"o{i}") for i in range(len(order_fields))])
        previous = as_accs(state["acc"])
        single = [c.element(values, x["t"], order) for c in compiled]
        now = ([c.combine(p, e) for c, p, e in zip(compiled, previous, single)]
               if parts.accumulating else single)
        fired = F.struct(F.struct(*typed(now)).alias("acc"),
                         F.struct(*typed(previous)).alias("prev"),
                         x["k"]["o0"].alias("b"), x["k"]["sub"].alias("sub"))
        return F.struct(F.struct(*typed(now)).alias("acc"),
                        F.concat(state["out"], F.array(fired)).alias("out"))

    start = F.struct(*[F.col(name).cast(types[name]).alias(name) for name in flat])
    no_firing = F.filter(F.array(F.struct(start.alias("acc"), start.alias("prev"),
                                          F.lit(0).alias("b"), F.lit(0).cast("long")
                                          .alias("sub"))), lambda _: F.lit(False))
    late_sorted = F.array_sort(F.col(LATE_LIST), lambda a, b: F.when(
        a["k"] < b["k"], F.lit(-1)).when(a["k"] > b["k"], F.lit(1)).otherwise(F.lit(0)))
    folded = F.aggregate(late_sorted, F.struct(start.alias("acc"), no_firing.alias("out")),
                         step, lambda state: state["out"])

    def late_entries(f: Any, j: Any) -> Any:
        """The entries of the ``j``-th (0-based) late firing ``f``."""
        pane = j + F.when(had_on_time, F.lit(1)).otherwise(F.lit(0))
        b = f["b"]
        firing = parts.entry(pane, F.lit("LATE"), F.lit(False), F.lit(False), b, f["sub"],
                             [c.result(a) for c, a in zip(compiled, as_accs(f["acc"]))],
                             F.lit(True), rorder=1)
        if not parts.retracting:
            return F.array(firing)
        prev = parts.entry(pane - F.lit(1), F.when(j == F.lit(0), F.lit("ON_TIME"))
                           .otherwise(F.lit("LATE")), F.lit(False), F.lit(True), b, f["sub"],
                           [c.result(a) for c, a in zip(compiled, as_accs(f["prev"]))],
                           (j > F.lit(0)) | had_on_time, rorder=0)
        return F.array(prev, firing)

    late = F.flatten(F.transform(folded, late_entries))
    entries = F.when(F.size(F.col(LATE_LIST)) == F.lit(0), F.array(on_time)).otherwise(
        F.concat(F.array(on_time), late))
    exploded = agg.select(*parts.keys, F.col(WS), F.explode(entries).alias(ENTRY))
    return exploded.filter(F.col(f"{ENTRY}.emit")).select(
        *parts.window_bounds(), *[F.col(f"{ENTRY}.`{name}`").alias(name)
                                  for name in parts.entry_names()])
