"""Event-time sessions in two parts: the *simple* sessions aggregated in Spark SQL, the others
on the session walker (``session_walker.py``). One-shot runs of the pipelines
``planner.session_reasons`` sends to the walker whose function is a declarative aggregate
(``planner.session_sql_reasons``); the aggregates are the native path's (``native_aggs.py``).

**Components.** Over a key's accepted elements (rejects never reach a window), sorted by event
time, a *component* is a maximal run whose windows ``[ts, ts + gap)`` chain by intersection
(Flink's rule, ``TimeWindow.intersects``: overlapping or touching, so a new component starts
where ``ts - previous ts > gap``). Every live session of the walker is a union of chained
element windows, so all its elements lie in one component, and an element's step
(``SessionWalker._window_for``: the sessions its window intersects; lateness on the merged
window; its end timer; the cleanup) reads and writes only sessions of its own component: the
walker over a key's rows emits, per component, what it emits over that component's rows alone
(a declarative aggregate has no per-key state; only ``max_key_state``, a safety limit, counts
across components and now counts the walker's components only).

**The rule.** A component is *simple* iff every element has ``ts >= W + 2``, where ``W`` is the
watermark it met (``W_{b-1}`` of its bundle: the native row plan's ``__wl_wprev``).
Proof that the walker then emits exactly one firing per component ``C``, ON_TIME:

1. no element is late: its window's ``max = ts + gap - 1 >= ts > W``, and the window it joins
   only grows (``is_late(cleanup_time(max)) `` needs ``max + lateness <= W``);
2. no element meets a session that already fired: a session fired at a bundle before the
   element's, by its end timer (the only firing of this trigger for an on-time window), so
   its ``max <= W`` and its ``end = max + 1 <= W + 1``; the element's window meets it only if
   ``ts <= end <= W + 1``, contradicting ``ts >= W + 2``. (``ts > W`` is NOT enough: with
   allowed lateness a session ``[s, W + 1)`` fired ON_TIME at ``W`` is still live, and an
   element at ``W + 1`` *touches* it: the merged window is new, pane 0, and fires again —
   ``tests/spark/test_session_sql.py`` pins that boundary.) Nor does a session fire before
   every element of ``C`` arrived: by (2) no later element of ``C`` meets a fired session;
3. so every element is added, sessions only merge before they fire, and at the end of ``C``'s
   elements one session covers ``C`` exactly: ``[min ts, max ts + gap)``, its contents all of
   ``C`` (discarding empties a pane only when it fires). It fires once, when its end timer
   passes: in step 3 of ``b* = bisect_left(W_0..W_{n-1}, max)`` with ``watermark = W_{b*}``,
   ``processing_time = P_{b*}``, or at the end of a finalized input (both null; not at all in
   a run that is not finalized: the session stays open, and a one-shot run keeps no state);
   pane index 0, ``ON_TIME`` (``pane_timing``: caused by the end timer, no ON_TIME before),
   ``is_final`` iff the timer time ``max`` is the cleanup time (lateness 0), as the native
   path's ON_TIME panes. No late output, no side output.

The result is the aggregate over ``C``'s elements: the walker's accumulators merge in window
order, SQL aggregates in any order; for ``count``/``sum``/``min``/``max``/``mean`` of integers
and ``approx_count_distinct`` (exact, both) that is the same value; ``first``/``last`` take the
smallest/largest ``(ts, arrival order)`` (``AggContext``) — elements with equal ``ts`` share a
window, so the walker's ties are decided by arrival too. Floating-point sums may differ in the
last bits (addition order), as on the native path. ``collect_list`` keeps the walker.
``window_all``: the one group is the key.

**Plan.** One shuffle by key (the walker's), then per partition: a window ordered by event
time numbers the components (``lag`` and a running sum), a window per component marks the ones
with an element ``ts - 1 <= W``; simple components: one hash aggregate per (key, component)
(no shuffle: the rows are partitioned by key already) into the tagged firing rows of the
walker's schema (ordering columns: bundle ``b*``, the timer phase, sub 0, ``N = max``, as the
walker gives them); the rest: sorted in arrival order and walked. The two are one tagged frame.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.bundles import ARRIVAL, TREASON, TS
from windowlib.engines.spark.columns import (
    KIND,
    PHASE,
    PHASE_FINISH,
    PHASE_TIMERS_WM,
    SUB,
    B,
    N,
    user_col,
)
from windowlib.engines.spark.native_aggs import compile_aggregates
from windowlib.engines.spark.native_parts import PB, REASON, WP, Parts, at, finite, rank

__all__ = ["COMPLEX", "COMPONENT", "split_sessions"]

COMPONENT, COMPLEX = "__wl_comp", "__wl_complex"
_START, _LAST = "__wl_s_start", "__wl_s_last"


def split_sessions(rows: Any, parts: Parts, pipeline: Any, result: list, types: dict,
                   out_schema: Any, persist: bool = False) -> tuple[Any, Any, Any]:
    """``(walker rows, SQL firings, marked rows)``: ``rows`` (the accepted elements,
    partitioned by key) with the complex components' rows only, and the simple components'
    firings as rows of the walker's tagged schema ``out_schema`` (``result``: its result
    fields; ``types``: the input's column types); both read the marked rows (every row with
    its component and whether it is complex), persisted when ``persist`` (so the input is
    read, shuffled and sorted once)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    logic = pipeline.compile()
    keys = parts.keys
    ts = F.col(TS)
    gap = logic.assigner.gap_ms
    by_time = (Window.partitionBy(*keys) if keys else Window).orderBy(ts)
    previous = F.lag(ts).over(by_time)          # null: the key's first element
    starts = F.when(previous.isNull() | (ts - previous > F.lit(gap)), F.lit(1)) \
        .otherwise(F.lit(0))
    rows = rows.withColumn(COMPONENT, starts)
    rows = rows.withColumn(COMPONENT, F.sum(COMPONENT).over(
        by_time.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    # complex: some element is not ahead (``ts >= W + 2``); what neither part reads (the
    # clocks and reasons) is dropped in the same projection, so it is not cached
    component = ", ".join([*map(sql_identifier, logic.key_columns), COMPONENT])
    dropped = {ARRIVAL, TREASON, PB, WP, REASON}
    rows = rows.selectExpr(
        *[sql_identifier(c) for c in rows.columns if c not in dropped],
        f"min(CAST({TS} - 1 > {WP} AS INT)) OVER (PARTITION BY {component}) = 0 AS {COMPLEX}")
    if persist:
        rows = rows.persist()
    marked = rows
    compiled = compile_aggregates(pipeline.function.fn.aggregates, result, types)
    sql_parts = replace(parts, compiled=compiled)
    exprs, accs = sql_parts.accumulators("__wl_acc")
    simple = rows.filter(~F.col(COMPLEX)).groupBy(*keys, F.col(COMPONENT)).agg(
        F.min(ts).alias(_START), F.max(ts).alias(_LAST), *exprs)
    results = {c.name: c.result(a) for c, a in zip(compiled, accs)}
    n = len(parts.P)    # the ON_TIME bundle: how many watermarks are below the max
    simple = simple.withColumn(B, rank(f"`{_LAST}` + {gap - 1}L", parts.W) if n
                               else F.lit(0))
    if not parts.finalize:    # still open after the run: no firing
        simple = simple.filter(F.col(B) < F.lit(n))
    firings = simple.select(*_firing_columns(parts, logic, results, out_schema))
    return rows.filter(F.col(COMPLEX)), firings, marked


def _firing_columns(parts: Parts, logic: Any, results: dict, out_schema: Any) -> list:
    """The tagged schema's columns of a simple session's ON_TIME firing (module docstring)."""
    from pyspark.sql import functions as F

    n = len(parts.P)
    mx = F.col(_LAST) + F.lit(logic.assigner.gap_ms - 1)
    b_star = F.col(B)
    in_run = b_star < F.lit(n)
    values = {
        KIND: F.lit("firing"), B: b_star,
        PHASE: F.when(in_run, F.lit(PHASE_TIMERS_WM)).otherwise(F.lit(PHASE_FINISH)),
        SUB: F.lit(0), N: mx,
        "window_start": F.col(_START), "window_end": mx + F.lit(1),
        "pane_index": F.lit(0), "timing": F.lit("ON_TIME"),
        "is_final": F.lit(parts.lateness == 0),
        "watermark": F.when(in_run, finite(at(parts.W, b_star))),
        "processing_time": F.when(in_run, finite(at(parts.P, b_star))),
        **results}
    keys = set(logic.key_columns)
    columns = []
    for field in out_schema.fields:
        if field.name in keys:
            value = user_col(field.name)
        else:
            value = values.get(field.name, F.lit(None))
        columns.append(value.cast(field.dataType).alias(field.name))
    return columns
