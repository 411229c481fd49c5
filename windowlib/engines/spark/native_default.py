"""Firings of the default trigger on the native path (see ``native.py`` for why they equal
the reference engine): a plain ``groupBy(key, window)`` for the on-time part, window functions
over the few late elements only, one join by window.

Invariant: per window, the ON_TIME pane aggregates exactly the on-time elements (masked
aggregates) and each kept late element yields one LATE firing in arrival order whose
accumulator is the on-time accumulator combined with the running accumulator of the late
elements so far (accumulating), or the element's own (discarding); retractions repeat the
previous firing.

Shape:

- ``main``: ``groupBy(key, window)`` of every kept row with accumulators masked to the on-time
  rows — for fixed-width accumulators Spark's plain hash aggregate with partial aggregation,
  as in a hand-written ``groupBy(key, window(ts)).agg(...)`` — plus the window's ON_TIME
  clocks;
- ``late``: the late rows only (a few percent), numbered and with running accumulators by a
  window function in arrival order (a sort of those rows alone), each expanded into its
  output roles: the window's ON_TIME marker (first late element only), the retraction of the
  previous firing (retracting mode) and its LATE firing;
- ``main`` left-joined with ``late`` by window (shuffled hash join: ``late`` builds the hash
  table, ``main`` is already partitioned by window and is neither shuffled again nor
  sorted): a window without late elements yields its one ON_TIME row; a window with ``k``
  late elements yields its rows from the roles. Every value is a plain compiled expression —
  no higher-order functions, no generator over the main rows.

Measured on 10M events, 100k keys, tumbling 5 min, 2 idle cores (``benchmarks/
spark_native_path.py``): a ``collect_list`` of late elements inside the main aggregate turns
it into Spark's object hash aggregate, which falls back to sorting after 128 groups per task
(19.4 s against 13.4 s for the plain aggregate), and folding per-window lists with
higher-order functions cost another ~1.5 s; this shape reads the input twice and costs the
late branch and the join on top of the plain aggregate.

**The shared scan** (``Parts.shared_scan``; chosen by ``prefers_shared_scan``): when partial
aggregation would keep most rows anyway (about one element per key and window, as in a
clickstream), the kept rows are shuffled ONCE by (key, window) and both branches read that
exchange (Spark reuses it: one scan of the input); the main aggregate then needs no exchange
of its own, the late rows' window functions only a sort, and the join none. Each branch is an
``opaque_filter`` over the shared frame, so that the optimizer neither pushes the late
condition below the exchange nor prunes the branches' columns differently (either would make
two exchanges, so two scans, again). On dense data (many elements per window) it would
shuffle every row where the plain aggregate shuffles one partial row per window and task:
measured 2.10 s against 1.60 s at 3M events and 200 keys, and 3.12 s against 4.18 s at 50k
keys (``docs/performance.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.bundles import ARRIVAL, TREASON, TS
from windowlib.engines.spark.columns import user_col
from windowlib.engines.spark.native_parts import (
    MX,
    ON_N,
    PB,
    REASON,
    SUB,
    WP,
    WS,
    B,
    J,
    Parts,
    at_sql,
)
from windowlib.engines.spark.session import conf_value

ROLE, K = "__wl_role", "__wl_k"
ON_TIME_MARK, RETRACTION, LATE_FIRING = 0, 1, 2

SHARED_SCAN_CONF = "spark.windowlib.native.sharedScan"   # auto (default) | true | false
SHARED_SCAN_RATIO = 0.5   # estimated groups per row (after partial aggregation) to share


def prefers_shared_scan(setting: str, counts: Sequence[int], keys: Sequence[int | None],
                        processing_times: Sequence[int], size_ms: int, slide_ms: int) -> bool:
    """Whether the default trigger's firings should use the shared scan (module docstring).
    ``setting``: the ``SHARED_SCAN_CONF`` value ("true"/"false" force it; anything else is
    "auto"); per bundle: its rows, its estimated distinct keys (``bundle_stats.BundleStats.
    keys``; ``None``: unknown) and its processing time ``P_b``.

    Auto: shared iff partial aggregation is estimated to keep at least ``SHARED_SCAN_RATIO``
    of the (element, window) rows: per bundle, a key meets about ``span / slide + size /
    slide`` windows (``span``: the gap to the neighbouring bundle's ``P_b``), so the groups
    are at most ``keys x windows`` and at most the rows. Unknown keys, one bundle (no span)
    or no rows: the plain shape, as before this choice existed."""
    choice = setting.strip().lower()
    if choice in ("true", "false"):
        return choice == "true"
    n = len(counts)
    if n < 2 or any(k is None for k in keys) or size_ms <= 0 or slide_ms <= 0:
        return False
    per_element = -(-size_ms // slide_ms)
    rows = groups = 0
    for b in range(n):
        span = processing_times[b] - processing_times[b - 1] if b else \
            processing_times[1] - processing_times[0]
        windows = max(span, 0) / slide_ms + per_element
        expanded = counts[b] * per_element
        rows += expanded
        groups += min(expanded, keys[b] * windows)
    return rows > 0 and groups >= SHARED_SCAN_RATIO * rows


def shared_scan_setting(spark: Any) -> str:
    """The session's ``SHARED_SCAN_CONF`` (``auto`` when unset)."""
    return conf_value(spark, SHARED_SCAN_CONF) or "auto"


def bundle_keys(stats: Mapping[Any, Any] | None, arrivals: Sequence[Any]) -> list[int | None]:
    """Per bundle of ``arrivals``, the estimated distinct keys of ``stats`` (``None``:
    unknown)."""
    stats = stats or {}
    return [getattr(stats.get(a), "keys", None) for a in arrivals]


def opaque_filter(frame: Any, condition: str) -> Any:
    """``frame`` filtered by the SQL ``condition`` in a form the optimizer keeps where it is
    and that names every column of ``frame``: ``CASE WHEN spark_partition_id() >= 0 THEN
    (condition) ELSE to_json(struct(<every column>)) = '' END``. ``spark_partition_id()``
    is nondeterministic to the optimizer, so the one conjunct is not pushed below an exchange
    under ``frame``, and the never-taken branch keeps every column referenced, so column
    pruning leaves ``frame`` whole; two such filters over one exchange leave the exchange
    identical in both plans, and Spark runs it once (``ReusedExchange``)."""
    from pyspark.sql import functions as F

    columns = ", ".join(sql_identifier(c) for c in frame.columns)
    return frame.filter(F.expr(f"CASE WHEN spark_partition_id() >= 0 THEN ({condition}) "
                               f"ELSE to_json(struct({columns})) = '' END"))


@dataclass
class LateBranch:
    """This run's kept late rows (one per output role: ``__wl_role``) with their rank
    ``__wl_j`` (1-based, arrival order within the window) and accumulator columns:
    ``running`` (through this row; discarding: the row alone), ``previous`` (the rows before
    it; retracting mode only), ``totals`` (every late row of the window, with their count
    ``__wl_k``; only when asked for)."""

    rows: Any
    running: list[dict]
    previous: list[dict] | None = None
    totals: list[dict] | None = None


def late_branch(parts: Parts, totals: bool = False, late_rows: Any = None) -> LateBranch:
    """The late rows of ``parts`` (``WP >= MX``; ``late_rows``: those rows, filtered by the
    caller), ranked by a window function in arrival order — a sort of those rows alone — and
    expanded into their output roles: the window's ON_TIME marker (first late row only), the
    retraction of the previous firing (retracting mode) and the row's LATE firing."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    compiled = parts.compiled
    by_window = Window.partitionBy(*parts.group)
    by_arrival = by_window.orderBy(F.col(B), *parts.order, F.col(SUB))
    cols = [F.row_number().over(by_arrival).alias(J)]
    previous = late_totals = None
    if totals:
        cols.append(F.count(F.lit(1)).over(by_window).alias(K))
    if parts.accumulating:
        run_exprs, running = parts.accumulators(
            "__wl_r", window=by_arrival.rowsBetween(Window.unboundedPreceding,
                                                    Window.currentRow))
        cols += run_exprs
        if totals:
            total_exprs, late_totals = parts.accumulators("__wl_k", window=by_window)
            cols += total_exprs
        if parts.retracting:     # the previous firing's late part: the rows before this one
            prev_exprs, previous = parts.accumulators(
                "__wl_q", window=by_arrival.rowsBetween(Window.unboundedPreceding, -1))
            cols += prev_exprs
    else:     # discarding: a LATE firing holds its element alone
        values = {c.column: user_col(c.column) for c in compiled if c.column is not None}
        single = [c.element(values, F.col(TS), parts.ctx.order_struct(with_ts=False))
                  for c in compiled]
        names = [[f"__wl_r{i}_{name}" for name in acc] for i, acc in enumerate(single)]
        cols += [col.alias(name) for acc, ns in zip(single, names)
                 for col, name in zip(acc.values(), ns)]
        running = [{name: F.col(n) for name, n in zip(acc, ns)}
                   for acc, ns in zip(single, names)]
    roles = [ON_TIME_MARK, *([RETRACTION] if parts.retracting else []), LATE_FIRING]
    first, rest = (f"array({', '.join(map(str, r))})" for r in (roles, roles[1:]))
    if late_rows is None:
        late_rows = parts.kept.filter(F.expr(f"{WP} >= {MX}"))
    rows = (late_rows
            .select(*parts.keys, WS, B, PB, WP, SUB, *cols)
            .withColumn(ROLE, F.expr(f"explode(CASE WHEN ({J} = 1) THEN {first} "
                                     f"ELSE {rest} END)")))
    return LateBranch(rows, running, previous, late_totals)


def shared_scan(parts: Parts) -> tuple[Any, Any]:
    """``(kept, late rows)`` of the shared-scan shape: both read ONE exchange of the kept rows
    by (key, window) (module docstring). The exchange carries only what the run's clock
    arrays cannot restore: the clocks ``W_{b-1}``, ``P_b`` and the window's ``max`` are
    looked up again from the bundle index and the window start after it."""
    from pyspark.sql import functions as F

    shared = parts.kept.drop(ARRIVAL, TREASON, REASON, WP, PB, MX).repartition(*parts.group)
    wp_sql = at_sql(parts.W_before, B)

    def clocks(frame: Any) -> Any:
        return frame.withColumns({WP: F.expr(wp_sql), MX: F.expr(parts.max_sql),
                                  PB: F.expr(at_sql(parts.P, B))})

    # the clocks once, above the exchange, for both: one analysed projection, not two
    both = clocks(shared)
    return opaque_filter(both, "true"), opaque_filter(both, f"{WP} >= {MX}")


def default_firings(parts: Parts) -> Any:
    """The default trigger's firings (and retractions) of the windows in ``parts``; see the
    module docstring. The ``retract`` column exists in retracting mode only."""
    from pyspark.sql import functions as F

    compiled, kept, late_rows = parts.compiled, parts.kept, None
    if parts.shared_scan:
        kept, late_rows = shared_scan(parts)
    on = F.col(WP) < F.col(MX)
    agg_exprs, on_accs = parts.accumulators("__wl_a", mask=on)
    main = parts.with_on_time_clocks(kept.groupBy(*parts.group).agg(
        F.count(F.when(on, F.lit(1))).alias(ON_N), *agg_exprs))

    branch = late_branch(parts, late_rows=late_rows)
    late, run_accs, prev_accs = branch.rows, branch.running, branch.previous

    # --- one row per firing ------------------------------------------------------------------
    rows = main.join(late.hint("shuffle_hash"), on=[*parts.key_names], how="left")
    had = F.col(ON_N) > F.lit(0)
    had01 = F.when(had, F.lit(1)).otherwise(F.lit(0))
    j = F.col(J) - F.lit(1)
    on_results = [c.result(acc) for c, acc in zip(compiled, on_accs)]
    on_values, on_emit = parts.on_time_values(on_results, had)
    now = ([c.combine(o, r) for c, o, r in zip(compiled, on_accs, run_accs)]
           if parts.accumulating else run_accs)
    late_values = parts.element_values(
        j + had01, F.lit("LATE"), F.lit(False), [c.result(a) for c, a in zip(compiled, now)],
        rorder=1)
    role = F.col(ROLE)
    is_on = role.isNull() | (role == F.lit(ON_TIME_MARK))
    emit = F.when(is_on, on_emit).otherwise(F.lit(True))
    values = [(is_on, on_values)]
    if parts.retracting:
        # the previous firing: ON_TIME (on-time part alone) before the first late element
        combined = [c.combine(o, q) for c, o, q in zip(compiled, on_accs, prev_accs)]
        before = [{name: F.when(j == F.lit(0), o[name]).otherwise(acc[name]) for name in o}
                  for o, acc in zip(on_accs, combined)]
        ret_values = parts.element_values(
            j + had01 - F.lit(1), F.when(j == F.lit(0), F.lit("ON_TIME"))
            .otherwise(F.lit("LATE")), F.lit(True),
            [c.result(a) for c, a in zip(compiled, before)], rorder=0)
        is_ret = role == F.lit(RETRACTION)
        values.append((is_ret, ret_values))
        emit = F.when(is_on, on_emit).when(is_ret, (j > F.lit(0)) | had).otherwise(F.lit(True))

    def pick(k: int) -> Any:
        out = None
        for cond, vals in values:
            out = F.when(cond, vals[k]) if out is None else out.when(cond, vals[k])
        return out.otherwise(late_values[k])

    return rows.filter(emit).select(
        *parts.window_bounds(),
        *[pick(k).alias(name) for k, name in enumerate(parts.entry_names())
          if parts.retracting or name != "retract"])
