"""Native firings for ``EventTimeTrigger.after_end_of_window()`` with count-based early and/or
late triggers (``CountTrigger.at_least(n)`` or ``CountTrigger.of(n)``, which fire alike as DSL
children).

Why it equals the reference engine (``core/triggers/dsl.py``; see ``native.py`` for on-time
and late elements): per window, in arrival order,

- early phase (on-time elements ``e_1..e_N``): the early count restarts after each firing, so
  EARLY firings happen at ``e_r`` with ``r % n == 0`` (pane ``r/n - 1``; clocks of ``e_r``'s
  bundle); accumulating: aggregate of ``e_1..e_r``; discarding: of ``e_{r-n+1}..e_r``;
- ON_TIME (when the watermark reaches ``max``, as in ``native.py``) fires when the pane has
  contents: always in accumulating modes (``N > 0``), in discarding mode only if elements
  arrived since the last early firing (``N % n != 0``; they are its contents); pane
  ``floor(N/n)``; (``fire_empty_on_time`` with discarding and an early trigger stays on the
  general path);
- late phase (late elements ``l_1..l_M``): every ``m``-th fires (``m = 1`` without a late
  trigger), pane = early firings + (ON_TIME fired) + ``j/m - 1``; accumulating: on-time
  accumulator combined with ``l_1..l_j``; discarding: ``l_{j-m+1}..l_j`` (every earlier
  firing purged the pane). Unfired trailing elements are cleaned up without firing, as in the
  reference (cleanup never fires);
- accumulating_and_retracting: the firings of a window are numbered by pane index, so the
  retraction before firing ``k > 0`` is firing ``k - 1`` again (``lag`` over pane index) with
  ``retract=True``, ``is_final=False`` and firing ``k``'s clocks.

Cost: unlike the default trigger, early firings need a window function over every on-time
element (a sort by key, window and arrival), not only over the late part.
"""

from __future__ import annotations

from typing import Any

from windowlib.engines.spark.columns import user_col
from windowlib.engines.spark.native_parts import (
    MX,
    ORDER_N,
    PB,
    PHASE,
    RORDER,
    SUB,
    WP,
    WS,
    B,
    J,
    Parts,
)

R, NW, TOT = "__wl_r", "__wl_nw", "__wl_tot"


def _results(parts: Parts, accs: list[dict]) -> list:
    return [c.result(acc).alias(c.name) for c, acc in zip(parts.compiled, accs)]


def count_firings(parts: Parts, early: int | None, late_every: int | None) -> Any:
    """All firings (and retractions) of the windows in ``parts``; see the module docstring."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    m = late_every or 1
    group, key_names = parts.group, parts.key_names
    kept = parts.kept
    by_arrival = Window.partitionBy(*group).orderBy(F.col(B), *parts.order)

    def running(every: int) -> Any:
        start = Window.unboundedPreceding if parts.accumulating else -(every - 1)
        return by_arrival.rowsBetween(start, Window.currentRow)

    on_el = kept.filter(F.col(WP) < F.col(MX))
    stat_exprs, stat_accs = parts.accumulators("__wl_a")
    stats = on_el.groupBy(*group).agg(F.count(F.lit(1)).alias(TOT), *stat_exprs)
    pieces = []
    if early is None:
        pieces.append(parts.on_time_rows(stats, _results(parts, stat_accs), F.lit(0)))
        early_count = F.lit(0)
        on_fired = F.col(TOT).isNotNull()
    else:
        e_exprs, e_accs = parts.accumulators("__wl_e", running(early))
        ranked = on_el.select(
            "*", F.row_number().over(by_arrival).alias(R),
            F.count(F.lit(1)).over(Window.partitionBy(*group)).alias(NW), *e_exprs)
        fired = ranked.filter(F.pmod(F.col(R), F.lit(early)) == F.lit(0))
        pieces.append(parts.element_rows(
            fired, "EARLY", F.floor(F.col(R) / F.lit(early)) - F.lit(1),
            _results(parts, e_accs)))
        if parts.accumulating:
            pieces.append(parts.on_time_rows(
                stats, _results(parts, stat_accs), F.floor(F.col(TOT) / F.lit(early))))
            on_fired = F.col(TOT).isNotNull()
        else:
            d_exprs, d_accs = parts.accumulators("__wl_d")
            rest = (ranked.filter(F.col(R) > F.col(NW) - F.pmod(F.col(NW), F.lit(early)))
                    .groupBy(*group).agg(F.max(NW).alias(TOT), *d_exprs))
            pieces.append(parts.on_time_rows(
                rest, _results(parts, d_accs), F.floor(F.col(TOT) / F.lit(early))))
            on_fired = F.col(TOT).isNotNull() & (F.pmod(F.col(TOT), F.lit(early)) != F.lit(0))
        early_count = F.floor(F.coalesce(F.col(TOT), F.lit(0)) / F.lit(early))

    r_exprs, r_accs = parts.accumulators("__wl_r", running(m))
    late_rows = (kept.filter(F.col(WP) >= F.col(MX))
                 .select(*parts.keys, F.col(WS), F.col(B), F.col(PB), F.col(WP), F.col(SUB),
                         F.row_number().over(by_arrival).alias(J), *r_exprs)
                 .filter(F.pmod(F.col(J), F.lit(m)) == F.lit(0)))
    stat_cols = [TOT] + [f"__wl_a{i}_{name}" for i, acc in enumerate(stat_accs)
                         for name in acc]
    joined = late_rows.join(stats.select(*key_names, *stat_cols), on=key_names, how="left")
    accs = ([c.combine(on, run) for c, on, run in zip(parts.compiled, stat_accs, r_accs)]
            if parts.accumulating else r_accs)
    pane = (early_count + F.when(on_fired, F.lit(1)).otherwise(F.lit(0))
            + F.floor(F.col(J) / F.lit(m)) - F.lit(1))
    pieces.append(parts.element_rows(joined, "LATE", pane, _results(parts, accs)))
    firings = pieces[0]
    for piece in pieces[1:]:
        firings = firings.unionByName(piece)
    if parts.retracting:
        firings = firings.unionByName(_retractions(parts, firings))
    return firings


def _retractions(parts: Parts, firings: Any) -> Any:
    """Before firing ``k > 0`` of a window: firing ``k - 1`` again, retracted."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = [user_col(c) for c in parts.key_names[:-1]]
    w = Window.partitionBy(*keys, F.col("window_start")).orderBy(F.col("pane_index"))
    names = [c.name for c in parts.compiled]
    prev = firings.select(
        "*", F.lag(F.col("timing")).over(w).alias("__wl_prev_timing"),
        *[F.lag(user_col(n)).over(w).alias(f"__wl_prev_{n}") for n in names])
    return prev.filter(F.col("pane_index") > F.lit(0)).select(
        *keys, F.col("window_start"), F.col("window_end"),
        (F.col("pane_index") - F.lit(1)).alias("pane_index"),
        F.col("__wl_prev_timing").alias("timing"), F.lit(False).alias("is_final"),
        F.lit(True).alias("retract"), F.col("watermark"), F.col("processing_time"),
        *[F.col(f"__wl_prev_{n}").alias(n) for n in names],
        F.col(B), F.col(PHASE), F.col(SUB), F.col(ORDER_N), F.lit(0).alias(RORDER))
