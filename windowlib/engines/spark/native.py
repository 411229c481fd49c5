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
- rejects: ``core.loop``'s checks in ``REJECT_CHECKS`` order: the timestamp reason of
  ``prepare_input``, ``future_timestamp`` (``ts > P_b + max_future_skew``, when ``P_b`` is
  known), ``missing_key``.

Plan: the bundle plan (``P_b``, ``W_b``) comes from Parquet footer statistics when the input
is a plain Parquet scan (``bundle_stats.py``: no job), else from the small aggregate of
``bundles.plan_bundles`` (a separate job). Each row gets its bundle's clocks from ONE broadcast
join with the plan as an inline ``VALUES`` table (``bundle_columns``: the broadcast is one
small job, shared by every branch; one bundle — an hourly run — looks them up in the run's
clock arrays, no join); per window, the bundle of the ON_TIME firing (a ``CASE WHEN`` search
tree over ``W_b``, ``native_parts.rank``: over literals when there are several bundles) and
its clocks come from those arrays. The clock arrays are one-row scalar subqueries, not
literals, so the generated code of an hourly run's plan is the same from run to run
(``native_parts``). The default
trigger's firings (``native_default.py``): a plain hash aggregate per window of the on-time
accumulators, joined by window with a branch of the late rows alone (its own scan of the
input; window functions over those rows only) — or, when the footers show sparse keys, both
reading one exchange of the kept rows by window (one scan: ``native_default.shared_scan``).
Count triggers: ``native_counts.py``. Fixed expressions are written as SQL text where that
was simple (``F.expr``/``selectExpr``: one py4j round trip for the whole expression, where
each PySpark ``Column`` operation costs one to three — planning a run made ~1,700 of them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.core.loop import REJECT_CHECKS
from windowlib.core.outputs import TOO_LATE, OutputColumns
from windowlib.core.pipeline import Pipeline
from windowlib.core.schema import sql_identifier
from windowlib.core.time import MIN_TS
from windowlib.core.watermarks import WatermarkStrategy, effective_strategy
from windowlib.engines.base import BundleTimes
from windowlib.engines.spark.bundles import (
    ARRIVAL,
    INTERNAL_PREFIX,
    TREASON,
    TS,
    BundlePlan,
    plan_bundles,
)
from windowlib.engines.spark.columns import user_col
from windowlib.engines.spark.general import arrival_order, prepare_input
from windowlib.engines.spark.native_aggs import AggContext, compile_aggregates
from windowlib.engines.spark.native_default import (
    bundle_keys,
    default_firings,
    prefers_shared_scan,
    shared_scan_setting,
)
from windowlib.engines.spark.native_parts import (  # noqa: F401  (re-exported names)
    MX,
    ORDER_N,
    PB,
    PHASE,
    REASON,
    RORDER,
    SUB,
    WP,
    WS,
    B,
    Parts,
    at,
    clock_sql,
    finite,
    plus_saturating,
    rank,
    saturating_sql,
)
from windowlib.engines.spark.native_windows import assign_windows
from windowlib.engines.spark.outputs import (
    DeferredPart,
    OutputPart,
    SparkOutputs,
    no_side_outputs,
    render,
)
from windowlib.engines.spark.result_types import result_fields

CLOCKS = "__wl_clk"     # the bundle table's packed clocks: array(b, P_b, W_{b-1})


class InputFrames:
    """``late`` and ``rejects`` of a run built over ``inputs`` (``NativeInputs``: planned on
    first use)."""

    inputs: NativeInputs

    @property
    def late(self) -> Any:
        return self.inputs.late

    @property
    def rejects(self) -> Any:
        return self.inputs.rejects


@dataclass
class NativeRun(InputFrames):
    """The native path's three internal frames (window bounds and clocks as ms, plus the
    ordering columns ``__wl_b``/``__wl_phase``/``__wl_sub``/``__wl_n``/``__wl_rorder`` the test
    harness sorts by) and what they were computed from; ``late`` and ``rejects`` are the
    inputs' (planned on first use)."""

    firings: Any
    inputs: NativeInputs = field(repr=False)
    plan: BundlePlan
    key_columns: tuple[str, ...]
    result_columns: tuple[str, ...]
    retracting: bool
    element_columns: tuple[str, ...]
    plan_source: str = "aggregate job"
    shape: str = "partial aggregate"   # the firings' plan: or "shared scan", "count triggers"

    def outputs(self, run_id: str | None) -> SparkOutputs:
        """The run's outputs (``outputs.py``): firings, late and rejects, a part each; the
        side outputs exist without rows (no Python function runs here)."""
        names = OutputColumns(self.key_columns, self.element_columns, self.result_columns,
                              self.retracting)

        def columns(output: str, frame: Any) -> dict[str, Any]:
            # ``frame[name]``: one py4j call per column (``F.col`` costs three)
            return {output: render(names, output, lambda name: frame[sql_identifier(name)], run_id)}

        def late() -> OutputPart:
            key_types = {f.name: f.dataType for f in self.late.schema.fields}
            return OutputPart(self.late, "late", {
                **columns("late", self.late),
                "side_outputs": no_side_outputs(names, key_types, run_id)})

        return SparkOutputs(names, [
            OutputPart(self.firings, "firings", columns("firings", self.firings)),
            DeferredPart(("late", "side_outputs"), late),
            DeferredPart(("rejects",), lambda: OutputPart(
                self.rejects, "rejects", columns("rejects", self.rejects)))])


@dataclass
class NativeInputs:
    """What every native firing builder starts from (``prepare_native``): the kept (element,
    window) rows and the plan (``parts``), the late and rejects frames, ``processed`` (one row
    per kept element: its latest window), and what they were computed from. ``late`` and
    ``rejects`` are planned on first use (``late_rows``/``reject_rows`` build them): Spark
    analyses every new frame, and a one-shot caller may never read them."""

    parts: Parts
    processed: Any
    plan: BundlePlan
    logic: Any
    user_columns: list[str]
    plan_source: str
    late_rows: Callable[[], Any] = field(repr=False)
    reject_rows: Callable[[], Any] = field(repr=False)
    screened: Any = None    # every input row, ``REASON`` its reject reason (null: accepted)

    @cached_property
    def late(self) -> Any:
        return self.late_rows()

    @cached_property
    def rejects(self) -> Any:
        return self.reject_rows()


def prepare_native(pipeline: Pipeline, df: Any, arrival: str, *,
                   watermark: WatermarkStrategy | None = None, finalize: bool = False,
                   order_by: Sequence[str] | str | None = None, processing_time: Any = None,
                   arrival_interval: Any = None,
                   overrides: Mapping[Any, BundleTimes] | None = None,
                   seq_column: str | None = None,
                   bundle_stats: Mapping[Any, Any] | None = None,
                   footer_stats: bool = True, clock: Any = None,
                   aggregates: bool = True) -> NativeInputs:
    """Plan the bundles and build the row-level frames of the native path (lazy; nothing is
    collected). ``clock`` (``core.loop.RunClock``) continues an incremental run's time: the first
    bundle meets its watermark. ``seq_column`` is the test harness's element number inside a
    bundle.

    The bundle plan comes from ``bundle_stats`` when given (exact per-bundle figures in
    ``__wl_arrival`` form: see ``bundles.plan_bundles``), else from Parquet footers when ``df``
    is a plain Parquet scan and ``footer_stats`` is true (``bundle_stats.py``), else from one
    small aggregate job; ``plan_source`` says which (and why not the footers).
    ``aggregates=False``: the firings carry no results (the pane path computes them in
    Python), so the function need not be declarative. Session assigners (the pane path's
    session walker): rejects only; ``kept`` is one row per accepted element (no window
    columns) and ``late`` has no rows — lateness is judged on the merged window, by the
    walker."""
    from pyspark.sql import functions as F

    logic = pipeline.compile()
    strategy = effective_strategy(watermark)
    prepared, kind = prepare_input(df, pipeline, arrival)
    user_columns = [c for c in df.columns if not c.startswith(INTERNAL_PREFIX)]
    stats, plan_source = bundle_stats, "caller's per-bundle statistics"
    if stats is None and footer_stats and TS not in df.columns:
        from windowlib.engines.spark.bundle_stats import footer_stats as read_footers

        stats, how = read_footers(df, arrival=arrival, timestamp=logic.timestamp,
                                  key_columns=logic.key_columns)
        plan_source = how if stats is not None else f"aggregate job ({how})"
    elif stats is None:
        plan_source = "aggregate job"
    initial = {} if clock is None else {
        "initial_watermark": clock.watermark, "initial_processing_time": clock.processing_time,
        "initial_max_event_ts": clock.max_event_ts}
    plan = plan_bundles(prepared, kind=kind, key_columns=logic.key_columns, strategy=strategy,
                        max_future_skew_ms=logic.max_future_skew_ms, overrides=overrides,
                        processing_time=processing_time, arrival_interval=arrival_interval,
                        arrival_name=arrival,
                        stats=stats, **initial)
    types = {f.name: f.dataType for f in df.schema.fields}
    compiled = []
    if aggregates:
        mode, fields = result_fields(pipeline, types)
        if mode != "typed":
            raise DefinitionError("the native path needs typed declarative aggregates",
                                  code="NATIVE_UNSUPPORTED")
        fields = [f for f in fields if f.name not in logic.key_column_set]
        compiled = compile_aggregates(pipeline.function.fn.aggregates, fields, types)

    P, W = plan.processing_times, plan.watermarks
    w_before = [plan.initial_watermark, *W[:-1]]
    lateness = logic.allowed_lateness_ms

    keys = [user_col(c) for c in logic.key_columns]
    x = bundle_columns(prepared, plan)

    # --- rejects: core.loop's checks, compiled in REJECT_CHECKS order ----------------------
    skew = logic.max_future_skew_ms
    missing = " OR ".join(f"{sql_identifier(c)} IS NULL" for c in logic.key_columns)
    nan = None
    for c in logic.finite_columns:      # a column the input lacks holds no non-finite value
        if c in types and types[c].typeName() in ("float", "double"):
            col = user_col(c)
            bad = F.isnan(col) | (F.abs(col) == F.lit(float("inf")))
            nan = bad if nan is None else (nan | bad)
    # SQL text where it can be (one py4j call each instead of one per Column operation)
    checks = {"timestamp": TREASON,
              "future_timestamp": f"CASE WHEN (NOT ({PB} = {MIN_TS}L) AND ({TS} > ({PB} + "
                                  f"{skew}))) THEN 'future_timestamp' END",
              "missing_key": f"CASE WHEN {missing} THEN 'missing_key' END" if missing else None,
              "non_finite": None if nan is None else F.when(nan, F.lit("non_finite"))}
    reason = F.coalesce(*[F.expr(checks[c]) if isinstance(checks[c], str) else checks[c]
                          for c in REJECT_CHECKS if checks[c] is not None])
    sub = F.col(seq_column) if seq_column else F.lit(0)
    x = x.withColumns({REASON: reason, SUB: sub.cast("long")})
    accepted = x.filter(F.col(REASON).isNull())

    def reject_rows() -> Any:
        return x.filter(F.col(REASON).isNotNull()).select(
            *[user_col(c) for c in user_columns], F.col(REASON).alias("reason"), B, SUB)

    # --- windows and lateness ---------------------------------------------------------------
    dropped_all, processed, kept, size = assign_windows(logic.assigner, accepted, lateness)

    def late_rows() -> Any:
        return accepted.filter(dropped_all).select(
            *[user_col(c) for c in user_columns], F.lit(TOO_LATE).alias("reason"),
            finite(WP).alias("watermark"), B, SUB)

    order = arrival_order(user_columns, order_by)
    slide = getattr(logic.assigner, "slide_ms", size)
    shared = aggregates and prefers_shared_scan(
        shared_scan_setting(df.sparkSession), plan.counts, bundle_keys(stats, plan.arrivals),
        P, size, slide)
    parts = Parts(kept=kept, keys=keys, key_names=[*logic.key_columns, WS], order=order,
                  ctx=AggContext(ts=F.col(TS), order=[F.col(B), *order]), compiled=compiled,
                  P=P, W=W, W_before=w_before, size=size, lateness=lateness, finalize=finalize,
                  accumulating=logic.accumulation != "discarding",
                  retracting=logic.retracting, shared_scan=shared)
    return NativeInputs(parts=parts, processed=processed, plan=plan, logic=logic,
                        user_columns=user_columns, plan_source=plan_source,
                        late_rows=late_rows, reject_rows=reject_rows, screened=x)


def run_native(pipeline: Pipeline, df: Any, arrival: str, **options: Any) -> NativeRun:
    """Plan the bundles and build the native frames (lazy; nothing is collected); ``options``
    are ``prepare_native``'s. The caller has checked ``planner.plan_path``."""
    inputs = prepare_native(pipeline, df, arrival, **options)
    parts, logic = inputs.parts, inputs.logic
    early, late_every = count_phases(logic.trigger)
    if early is None and late_every is None:
        firings = default_firings(parts)       # ``retract`` only when retracting
        shape = "shared scan" if parts.shared_scan else "partial aggregate"
    else:
        from windowlib.engines.spark.native_counts import count_firings

        firings = count_firings(parts, early, late_every)
        if not logic.retracting:
            firings = firings.drop("retract")
        shape = "count triggers"
    return NativeRun(firings=firings, inputs=inputs,
                     plan=inputs.plan, key_columns=logic.key_columns,
                     result_columns=tuple(c.name for c in parts.compiled),
                     retracting=logic.retracting, element_columns=tuple(inputs.user_columns),
                     plan_source=inputs.plan_source, shape=shape)


def bundle_columns(prepared: Any, plan: BundlePlan) -> Any:
    """``prepared`` with each row's bundle index ``__wl_b``, processing time ``__wl_pb``
    (``P_b``) and the watermark it meets ``__wl_wprev`` (``W_{b-1}``), from a broadcast join
    with the plan's small bundle table (one row per arrival value: the three clocks packed in
    one ``array<bigint>`` column ``__wl_clk``).

    A join, not per-row expressions over literals: the optimizer pushes filters below
    projections by inlining their expressions, so a search tree over the arrival values was
    repeated in every condition that used the clocks, and the generated method grew past the
    size the JVM compiles (measured: the row stage ran 2x slower with whole-stage codegen than
    without). Every row's arrival value is in the plan (``plan_bundles`` refuses nulls); the
    left join never drops a row. The table is an inline ``VALUES`` relation (no RDD), but its
    broadcast is a job; the clocks travel as one array column so that every branch of the
    plan (the main aggregate reads two of them, the late branch three) prunes the table to
    the same two columns and Spark reuses ONE broadcast (and its dynamic partition pruning
    subquery) for all of them. A plan of ONE bundle (an hourly run) needs no join and no
    job: its clocks are looked up in the run's clock arrays (``clocks_sql``: data, not
    literals, so the generated code is the same from run to run)."""
    from pyspark.sql import functions as F

    w_before = [plan.initial_watermark, *plan.watermarks[:-1]]
    rest = [sql_identifier(c) for c in prepared.columns if c != ARRIVAL]
    if len(plan.arrivals) == 1:
        return prepared.selectExpr(
            ARRIVAL, *rest, f"CAST(0 AS INT) AS {B}",
            f"{clock_sql(plan.processing_times, 0)} AS {PB}",
            f"{clock_sql(w_before, 0)} AS {WP}")
    rows = [f"({_sql_literal(a)}, array({b}L, {int(p)}L, {int(w)}L))" for b, (a, p, w)
            in enumerate(zip(plan.arrivals, plan.processing_times, w_before))]
    arrival_type = prepared.schema[ARRIVAL].dataType.simpleString()
    if rows:
        table = prepared.sparkSession.sql(
            f"SELECT CAST({ARRIVAL} AS {arrival_type}) AS {ARRIVAL}, {CLOCKS} "
            f"FROM VALUES {', '.join(rows)} AS t({ARRIVAL}, {CLOCKS})")
    else:
        table = prepared.sparkSession.sql(
            f"SELECT CAST(NULL AS {arrival_type}) AS {ARRIVAL}, "
            f"CAST(array() AS array<bigint>) AS {CLOCKS} WHERE false")
    return prepared.join(F.broadcast(table), on=ARRIVAL, how="left").selectExpr(
        ARRIVAL, *rest, f"CAST({CLOCKS}[0] AS INT) AS {B}", f"{CLOCKS}[1] AS {PB}",
        f"{CLOCKS}[2] AS {WP}")


def _sql_literal(value: Any) -> str:
    """A bundle table value (``__wl_arrival`` form: string or integer) as SQL text."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"unexpected arrival value {value!r}")
    if isinstance(value, int):
        return f"{value}L"
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def count_phases(trigger: Any) -> tuple[int | None, int | None]:
    """``(early count, late count)`` of a native ``after_end_of_window`` trigger (``None``:
    no early firings / every late element fires); ``(None, None)`` for the default."""
    early = getattr(trigger, "early", None)
    late = getattr(trigger, "late", None)
    return (None if early is None else early.count, None if late is None else late.count)
