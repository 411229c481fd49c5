"""Incremental runs on the native path: the default trigger over declarative aggregates with
pane state carried between runs as ONE ROW PER LIVE WINDOW — Spark SQL only, no Python per
row, no per-key snapshot to parse.

Scope (``planner.incremental_path``): what the native path runs with the default trigger
(``EventTimeTrigger`` or ``after_end_of_window()`` without a late trigger), every
accumulation mode, except ``collect_list`` (its arrival order would have to survive runs);
with an early count trigger too, outside accumulating_and_retracting
(``native_incremental_early.py``: the EARLY firings, the pane since the last one, and why
they continue the saved count).

State (``state_kind`` ``native-windows``, ``NATIVE_STATE_FORMAT``): per live window — key
columns, ``__wl_window_start`` (ms), ``__wl_on_time_count`` (on-time elements so far),
``__wl_on_time_fired`` (the ON_TIME decision is made: the pane fired, or — discarding, with
early firings — was empty when the watermark reached ``max``), ``__wl_panes`` (firings so
far = the next pane index), the accumulator columns ``__wl_acc{i}_{name}`` (accumulating:
every kept element so far; discarding: the elements since the last firing, null when none),
and in retracting mode the last firing's ``__wl_last_timing`` and results ``__wl_last_{name}``.
``__wl_format_version``. A window leaves the state when the watermark reaches its cleanup
time (``max_timestamp + allowed_lateness``).

Why a run equals the reference engine continuing from its snapshot (see ``native.py`` for one
run): time only moves forward, so everything a window saw in earlier runs arrived before this
run's elements — the saved accumulator is the "on-time" side of every combination (``combine``
keeps first/last ties on the earlier side), and

- this run's elements meet ``W_{b-1}`` with ``W_{-1}`` = the saved watermark: on-time iff
  ``W_{b-1} < max``; the window's ON_TIME pane fires in this run iff it has not fired before,
  has on-time elements (saved or new) and this run's watermark reaches ``max`` (pane index =
  saved firings, 0 without early firings; with them, discarding, only when the pane is not
  empty — ``native_incremental_early.py``, whose EARLY firings come first);
- each kept late element fires at once: pane = saved firings + (this run's EARLY firings) +
  (ON_TIME in this run) + its
  rank among this run's late elements of the window (window functions over the late rows
  alone); accumulating: saved + on-time + late so far; discarding: the element alone;
  retractions repeat the previous firing — this run's, or the saved last firing;
- the new state: saved + this run's elements (accumulating), or what arrived since the last
  firing (discarding: nothing after a firing); firings, flags and last results updated.

Shape: ``groupBy(key, window)`` of this run's kept rows (fixed-width accumulators) full-outer
joined with the saved windows; left-joined with this run's late rows (window functions); each
window row yields its ON_TIME firing and its state row, each late row its firing (and
retraction). The caller writes firings, state, late, rejects and the processed count in one
routed job (``runs/run_outputs.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.outputs import OutputColumns
from windowlib.engines.spark.columns import user_col
from windowlib.engines.spark.general import PHASE_TIMERS_WM
from windowlib.engines.spark.native import NativeInputs, count_phases, prepare_native
from windowlib.engines.spark.native_default import (
    ON_TIME_MARK,
    RETRACTION,
    ROLE,
    K,
    late_branch,
)
from windowlib.engines.spark.native_incremental_early import REST_N, early_branch
from windowlib.engines.spark.native_parts import (
    BSTAR,
    MX,
    ON_N,
    OT_P,
    OT_W,
    WP,
    WS,
    J,
    Parts,
    clock_sql,
    finite,
    nullable,
    plus_saturating,
)
from windowlib.engines.spark.native_window_state import (
    IN_S,
    NATIVE_STATE_FORMAT,
    S_FIRED,
    S_FORMAT,
    S_LAST_TIMING,
    S_ON_N,
    S_PANES,
    S_WS,
    STATE_KIND,
    acc_column,
    last_column,
    saved_windows,
)
from windowlib.engines.spark.outputs import (
    ROUTE_SEP,
    OutputPart,
    SparkOutputs,
    no_side_outputs,
    render,
)

FIRING, STATE = "__wl_firing", "__wl_state"
FIRES, KEEPS = "__wl_fires", "__wl_keeps"
IN_M, OT = "__wl_in_m", "__wl_ot"
EARLY_N, DECIDED = "__wl_early_n", "__wl_decided"


@dataclass
class NativeIncrementalRun:
    """The frames of one native incremental run (lazy).

    ``windows``: one row per window and per late firing or retraction that has an output:
    ``__wl_fires`` (a firing row in the struct ``__wl_firing``: internal values under the
    public names) and/or ``__wl_keeps`` (a state row in the struct ``__wl_state``);
    ``late``/``rejects`` as in ``NativeRun``; ``processed``: one row, the count of kept elements."""

    windows: Any
    state_columns: tuple[str, ...]
    late: Any
    rejects: Any
    processed: Any
    plan: Any
    key_columns: tuple[str, ...]
    result_columns: tuple[str, ...]
    retracting: bool
    element_columns: tuple[str, ...]

    def outputs(self, run_id: str | None) -> SparkOutputs:
        """The run's outputs (``outputs.py``): the window rows feed firings and the new
        window state (``state_kind`` ``native-windows``), a row possibly both; late, rejects
        and the processed count come from their own frames. Native runs have no side
        outputs (no Python functions): the columns exist, no row goes there."""
        from pyspark.sql import functions as F

        names = OutputColumns(self.key_columns, self.element_columns, self.result_columns,
                              self.retracting)
        fires, keeps = F.col(FIRES), F.col(KEEPS)
        route = (F.when(fires & keeps, F.lit(f"firings{ROUTE_SEP}state"))
                 .when(fires, F.lit("firings")).otherwise(F.lit("state")))
        key_types = {f.name: f.dataType for f in self.late.schema.fields}
        windows = {
            "firings": render(names, "firings", lambda c: F.col(f"{FIRING}.`{c}`"), run_id),
            "state": [(c, F.col(f"{STATE}.`{c}`")) for c in self.state_columns],
            "side_outputs": no_side_outputs(names, key_types, run_id)}

        def value(name: str) -> Any:
            return user_col(name)

        return SparkOutputs(names, [
            OutputPart(self.windows, route, windows, multi=True),
            OutputPart(self.late, "late", {"late": render(names, "late", value, run_id)}),
            OutputPart(self.rejects, "rejects",
                       {"rejects": render(names, "rejects", value, run_id)}),
            OutputPart(self.processed, "stats", {"stats": [("processed", F.col("processed"))]}),
        ], state_kind=STATE_KIND)


def run_native_incremental(pipeline: Any, df: Any, arrival: str, *, watermark: Any = None,
                           order_by: Sequence[str] | str | None = None,
                           processing_time: Any = None, state: Any = None,
                           clock: Any = None,
                           bundle_stats: Any = None) -> NativeIncrementalRun:
    """One incremental run over ``df`` (this run's new rows) continuing from ``state`` (the
    previous run's window state, or ``None``) and ``clock`` (``core.loop.RunClock``).
    ``bundle_stats``: the caller's exact per-bundle figures (``prepare_native``), else the
    bundle plan's aggregate job (``df`` is not a plain Parquet scan here)."""
    from pyspark.sql import functions as F

    inputs = prepare_native(pipeline, df, arrival, watermark=watermark, order_by=order_by,
                            processing_time=processing_time, footer_stats=False, clock=clock,
                            bundle_stats=bundle_stats)
    parts, logic = inputs.parts, inputs.logic
    early, _ = count_phases(logic.trigger)
    windows, state_columns = _windows(parts, inputs, state, df, early)
    return NativeIncrementalRun(
        windows=windows, state_columns=state_columns,
        late=inputs.late, rejects=inputs.rejects,
        # one row to the writer, not one per element (a Spark count, merged in the job)
        processed=inputs.processed.agg(F.count(F.lit(1)).alias("processed")),
        plan=inputs.plan, key_columns=logic.key_columns,
        result_columns=tuple(c.name for c in parts.compiled), retracting=logic.retracting,
        element_columns=tuple(inputs.user_columns))


def accumulator_types(parts: Parts, main: Any, run_accs: list[dict], prefix: str
                      ) -> dict[str, Any]:
    """The Spark types of the accumulators (by ``acc_column`` name) that
    ``parts.accumulators(prefix)`` built into ``main`` (``run_accs``: their names per
    aggregate); nullable throughout (the saved state comes back from Parquet with nullable
    elements). From the aggregates' typing rules (``CompiledAggregate.accumulator_types``)
    when all know them; else from ``main``'s schema, which over Spark Connect is a server
    round trip analysing the whole plan (about 0.5 s of a small run)."""
    local = [c.accumulator_types() for c in parts.compiled]
    if all(types is not None for types in local):
        return {acc_column(i, name): nullable(dtype)
                for i, types in enumerate(local) for name, dtype in types.items()}
    return {acc_column(i, name): nullable(main.schema[f"{prefix}{i}_{name}"].dataType)
            for i, acc in enumerate(run_accs) for name in acc}


def _windows(parts: Parts, inputs: NativeInputs, state: Any, df: Any, every: int | None
             ) -> tuple[Any, tuple[str, ...]]:
    """The window rows (``NativeIncrementalRun.windows``); ``every``: the early count
    (``native_incremental_early.py``), ``None`` without early firings."""
    from pyspark.sql import functions as F

    compiled, kept = parts.compiled, parts.kept
    key_cols = list(inputs.logic.key_columns)
    n = len(parts.P)
    on = F.col(WP) < F.col(MX)

    # --- this run's windows, full-outer joined with the saved ones ---------------------------
    agg_exprs, run_accs = parts.accumulators("__wl_a", mask=on)
    main = kept.groupBy(*parts.group).agg(F.count(F.when(on, F.lit(1))).alias(ON_N),
                                          *agg_exprs, F.lit(True).alias(IN_M))
    acc_types = accumulator_types(parts, main, run_accs, "__wl_a")
    result_types = {c.name: c.dtype for c in compiled}
    saved = saved_windows(state, parts, key_cols, acc_types, result_types, df)
    # shuffled hash join (the saved windows build the table): a sort-merge join would sort both
    w0 = main.join(saved.hint("shuffle_hash"), on=parts.key_names, how="full")
    in_s = F.coalesce(F.col(IN_S), F.lit(False))
    in_m = F.coalesce(F.col(IN_M), F.lit(False))
    saved_accs = [{name: F.col(f"__wl_p{i}_{name}") for name in acc}
                  for i, acc in enumerate(run_accs)]
    early = None
    if every is not None:
        early = early_branch(parts, saved, every, saved_accs)
        if early.rest is not None:
            w0 = w0.join(early.rest.hint("shuffle_hash"), on=parts.key_names, how="left")
    totals = []     # the on-time side of every combination: saved + this run's on-time part
    total_cols = {}
    for i, (c, s_acc, m_acc) in enumerate(zip(compiled, saved_accs, run_accs)):
        merged = c.combine(s_acc, m_acc)
        for name in m_acc:
            total_cols[f"__wl_t{i}_{name}"] = (F.when(~in_s, m_acc[name])
                                               .when(~in_m, s_acc[name]).otherwise(merged[name])
                                               .cast(acc_types[acc_column(i, name)]))
        totals.append({name: F.col(f"__wl_t{i}_{name}") for name in m_acc})
    saved_n = F.coalesce(F.col(S_ON_N), F.lit(0))
    on_total = saved_n + F.coalesce(F.col(ON_N), F.lit(0))
    fired_s = F.coalesce(F.col(S_FIRED), F.lit(False))
    panes_s = F.coalesce(F.col(S_PANES), F.lit(0)).cast("long")
    # the ON_TIME decision falls in this run; S_FIRED records it (fired or, discarding after
    # an early firing with nothing since, empty)
    decided = (~fired_s) & (on_total > F.lit(0)) & (F.col(BSTAR) < F.lit(n))
    ot = decided
    early_n = F.lit(0).cast("long")     # this run's early firings of the window
    if every is not None:
        early_n = (F.floor(on_total / F.lit(every)) - F.floor(saved_n / F.lit(every)))
        if not parts.accumulating:
            ot = decided & (F.pmod(on_total, F.lit(every)) != F.lit(0))
    w0 = parts.with_on_time_clocks(w0.withColumns(total_cols),
                                   also={OT: ot, EARLY_N: early_n, DECIDED: decided})
    ot, early_n = F.col(OT), F.col(EARLY_N)
    panes_s = panes_s + early_n         # the firings before this run's ON_TIME and late ones
    since_last = totals     # the pane's contents since the last firing (null: none)
    if early is not None and early.rest_accs is not None:
        rest = F.col(REST_N) > F.lit(0)
        since_last = [{name: F.when(early_n > F.lit(0), F.when(rest, r[name]))
                       .otherwise(t[name]) for name in t}
                      for t, r in zip(totals, early.rest_accs)]
    ot01 = F.when(ot, F.lit(1)).otherwise(F.lit(0))

    # --- this run's late rows: arrival order, running accumulators, roles ---------------------
    branch = late_branch(parts, totals=True)
    late, running = branch.rows, branch.running
    prev_running, late_all = branch.previous, branch.totals

    # --- one row per window and per late element -------------------------------------------
    rows = w0.join(late.hint("shuffle_hash"), on=parts.key_names, how="left")
    role = F.col(ROLE)
    window_row = role.isNull() | (role == F.lit(ON_TIME_MARK))
    j = F.col(J) - F.lit(1)
    k0 = F.coalesce(F.col(K), F.lit(0)).cast("long")

    def results(accs: list[dict]) -> list:
        return [c.result(a) for c, a in zip(compiled, accs)]

    def combined(base: list[dict], other: list[dict]) -> list[dict]:
        return [c.combine(b, o) for c, b, o in zip(compiled, base, other)]

    on_results = results(totals if parts.accumulating else since_last)
    now = combined(totals, running) if parts.accumulating else running
    # firing values, per kind (entry_names order: see Parts._values)
    on_values = parts._values(
        panes_s, F.lit("ON_TIME"), F.lit(parts.lateness == 0), F.lit(False),
        finite(OT_W), finite(OT_P), on_results, F.col(BSTAR),
        F.lit(PHASE_TIMERS_WM), F.lit(0), F.col(WS) + F.lit(parts.size - 1), F.lit(1))
    late_values = parts.element_values(panes_s + ot01 + j, F.lit("LATE"), F.lit(False),
                                       results(now), rorder=1)
    choices = [(window_row, on_values)]
    fires = F.when(window_row, ot)     # whether the row's firing (or retraction) is output
    if parts.retracting:
        previous = [{name: F.when(j == F.lit(0), t[name]).otherwise(acc[name]) for name in t}
                    for t, acc in zip(totals, combined(totals, prev_running))]
        prev_results = [F.when((j == F.lit(0)) & ~ot, F.col(last_column(c.name)))
                        .otherwise(r) for c, r in zip(compiled, results(previous))]
        prev_timing = (F.when(j > F.lit(0), F.lit("LATE")).when(ot, F.lit("ON_TIME"))
                       .otherwise(F.col(S_LAST_TIMING)))
        ret_values = parts.element_values(panes_s + ot01 + j - F.lit(1), prev_timing,
                                          F.lit(True), prev_results, rorder=0)
        is_ret = role == F.lit(RETRACTION)
        choices.append((is_ret, ret_values))
        fires = fires.when(is_ret, (j > F.lit(0)) | ot | (panes_s > F.lit(0)))
    fires = fires.otherwise(F.lit(True))
    keeps = window_row & _alive(parts)

    def pick(k: int) -> Any:
        out = None
        for cond, vals in choices:
            out = F.when(cond, vals[k]) if out is None else out.when(cond, vals[k])
        return out.otherwise(late_values[k])

    entry = {name: pick(k) for k, name in enumerate(parts.entry_names())}
    firing = _firing(parts, key_cols, entry)

    # state values: the window after this run
    any_late = k0 > F.lit(0)
    after = (combined(totals, late_all) if parts.accumulating else None)
    # (name, value) of the state struct's fields: the names are known here, so only the
    # early branch (which needs the struct's type) asks Spark for the schema
    state_cols = [*[(c, user_col(c)) for c in key_cols], (S_WS, F.col(WS)),
                  (S_ON_N, on_total.cast("long")), (S_FIRED, fired_s | F.col(DECIDED)),
                  (S_PANES, panes_s + ot01 + k0)]
    for i, (t, since) in enumerate(zip(totals, since_last)):
        for name in t:
            if parts.accumulating:
                value = F.when(any_late, after[i][name]).otherwise(t[name])
            else:     # every firing purges the pane
                value = F.when(ot | any_late, F.lit(None)).otherwise(since[name])
            state_cols.append((acc_column(i, name), value.cast(acc_types[acc_column(i, name)])))
    if parts.retracting:
        state_cols.append((S_LAST_TIMING, F.when(any_late, F.lit("LATE"))
                           .when(ot, F.lit("ON_TIME")).otherwise(F.col(S_LAST_TIMING))))
        for c, last_after, on_r in zip(compiled, results(after), on_results):
            state_cols.append((last_column(c.name), F.when(any_late, last_after)
                               .when(ot, on_r).otherwise(F.col(last_column(c.name)))
                               .cast(c.dtype)))
    state_cols.append((S_FORMAT, F.lit(NATIVE_STATE_FORMAT)))

    out = rows.select(fires.alias(FIRES), keeps.alias(KEEPS),
                      F.when(fires, F.struct(*firing)).alias(FIRING),
                      F.when(keeps, F.struct(*[v.alias(n) for n, v in state_cols])).alias(STATE)
                      ).filter(F.col(FIRES) | F.col(KEEPS))
    if early is not None:
        state_type = out.schema[STATE].dataType
        values = parts.element_values(early.pane, F.lit("EARLY"), F.lit(False), early.results,
                                      rorder=1)
        early_entry = dict(zip(parts.entry_names(), values))
        out = out.unionByName(early.rows.select(
            F.lit(True).alias(FIRES), F.lit(False).alias(KEEPS),
            F.struct(*_firing(parts, key_cols, early_entry)).alias(FIRING),
            F.lit(None).cast(state_type).alias(STATE)))
    return out, tuple(n for n, _ in state_cols)


def _firing(parts: Parts, key_cols: list[str], entry: dict[str, Any]) -> list:
    """A firing's internal values (window bounds and clocks in ms; ``outputs.render`` makes
    them public columns) from its ``entry`` (``Parts.entry_names`` → column)."""
    from pyspark.sql import functions as F

    return [*[user_col(c) for c in key_cols], F.col(WS).alias("window_start"),
            (F.col(WS) + F.lit(parts.size)).alias("window_end"),
            entry["pane_index"].alias("pane_index"), entry["timing"].alias("timing"),
            entry["is_final"].alias("is_final"),
            *([entry["retract"].alias("retract")] if parts.retracting else []),
            entry["watermark"].alias("watermark"),
            entry["processing_time"].alias("processing_time"),
            *[entry[c.name].alias(c.name) for c in parts.compiled]]


def _alive(parts: Parts) -> Any:
    """The window outlives this run: its cleanup time (``max_timestamp + allowed_lateness``,
    saturating) lies beyond the run's last watermark."""
    from pyspark.sql import functions as F

    clocks, last = (parts.W, len(parts.W) - 1) if parts.W else (parts.W_before, 0)
    cleanup = plus_saturating(F.col(WS) + F.lit(parts.size - 1), parts.lateness)
    return cleanup > F.expr(clock_sql(clocks, last))
