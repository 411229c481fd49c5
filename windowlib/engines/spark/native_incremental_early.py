"""Early count firings in native incremental runs (``native_incremental.py``): an
``after_end_of_window()`` trigger with an early ``CountTrigger`` (``at_least(n)`` or
``of(n)``), accumulating or discarding, whose count and pane since the last firing span runs.

Why it equals the reference engine continuing from its snapshot (``native_counts.py`` states
the rule for one run): the early count restarts after each firing, so the on-time elements of
a window, numbered ``r = 1, 2, …`` in arrival order over ALL runs, fire EARLY exactly where
``r % n == 0``. The saved window state carries ``N0`` (on-time elements of earlier runs),
the firings so far and the pane's accumulators (accumulating: every element; discarding: the
elements since the last firing, ``N0 % n`` of them). An on-time element of this run with rank
``R`` among this run's on-time elements of its window (arrival order: bundle, order columns,
sub-row) has ``r = N0 + R``, and when it fires:

- pane index = saved firings + ``floor(r/n) - floor(N0/n)`` - 1 (early firings happen only
  before the window's ON_TIME pane, so every saved firing precedes it);
- accumulating: the saved accumulators combined with this run's on-time elements up to ``R``;
- discarding: the last ``n`` elements, a frame of this run's rows ``R-n+1 … R``; the first
  firing of this run (``R <= n``) also takes the saved elements when ``N0 % n > 0``.

The window's ON_TIME pane then holds (discarding) what arrived since the last early firing:
with an early firing in this run, this run's on-time elements with ``R > M - (N0 + M) % n``
(``M`` of them in all), else the saved elements and all of this run's; it fires only when
that is not empty (``(N0 + M) % n != 0``), and the window's state after the run keeps the
same elements when nothing else fires.

Cost: a window function over this run's on-time rows (a sort by key, window and arrival), as
the one-shot native path pays for early firings, and a join with the saved windows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from windowlib.engines.spark.native_parts import MX, SUB, WP, B, Parts
from windowlib.engines.spark.native_window_state import IN_S, S_ON_N, S_PANES

R, M, REST_N = "__wl_early_r", "__wl_early_m", "__wl_rest_n"


@dataclass
class EarlyBranch:
    """``rows``: this run's EARLY firings, one row per firing element (the kept row's keys,
    window and clocks) with ``pane`` and ``results``, expressions over it; ``rest``
    (discarding only, else ``None``): per window, ``__wl_rest_n`` and the accumulators
    ``rest_accs`` of the on-time elements after this run's last early firing."""

    rows: Any
    pane: Any
    results: list
    rest: Any
    rest_accs: list[dict] | None


def early_branch(parts: Parts, saved: Any, every: int, saved_accs: list[dict]
                 ) -> EarlyBranch:
    """The early firings of this run's on-time rows of ``parts``, continuing the saved windows
    (``native_window_state.saved_windows``, whose accumulators ``saved_accs`` refer to); see
    the module docstring."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_window = Window.partitionBy(*parts.group)
    by_arrival = by_window.orderBy(F.col(B), *parts.order, F.col(SUB))
    start = Window.unboundedPreceding if parts.accumulating else -(every - 1)
    run_exprs, running = parts.accumulators(
        "__wl_e", window=by_arrival.rowsBetween(start, Window.currentRow))
    on_rows = parts.kept.filter(F.col(WP) < F.col(MX))
    # every kept column stays: the discarding rest's accumulators read the element values
    ranked = on_rows.select("*", F.row_number().over(by_arrival).alias(R),
                            F.count(F.lit(1)).over(by_window).alias(M), *run_exprs)
    prior = saved.select(*parts.key_names, S_ON_N, S_PANES, IN_S,
                         *[c for acc in saved_accs for c in acc.values()])
    ranked = ranked.join(prior.hint("shuffle_hash"), on=parts.key_names, how="left")
    n0 = F.coalesce(F.col(S_ON_N), F.lit(0))
    n, r = F.lit(every), n0 + F.col(R)
    in_s = F.coalesce(F.col(IN_S), F.lit(False))
    if parts.accumulating:
        takes_saved = in_s
    else:     # the run's first early firing also holds the elements saved since the last one
        takes_saved = in_s & (F.col(R) <= n) & (F.pmod(n0, n) > F.lit(0))
    values = []
    for c, s_acc, e_acc in zip(parts.compiled, saved_accs, running):
        merged = c.combine(s_acc, e_acc)
        values.append({name: F.when(takes_saved, merged[name]).otherwise(e_acc[name])
                       for name in e_acc})
    pane = F.coalesce(F.col(S_PANES), F.lit(0)) + F.floor(r / n) - F.floor(n0 / n) - F.lit(1)
    rows = ranked.filter(F.pmod(r, n) == F.lit(0))
    results = [c.result(acc) for c, acc in zip(parts.compiled, values)]
    rest = rest_accs = None
    if not parts.accumulating:
        after_last = F.col(R) > F.col(M) - F.pmod(n0 + F.col(M), n)
        rest_exprs, rest_accs = parts.accumulators("__wl_z", mask=after_last)
        rest = ranked.groupBy(*parts.key_names).agg(
            F.count(F.when(after_last, F.lit(1))).alias(REST_N), *rest_exprs)
    return EarlyBranch(rows, pane, results, rest, rest_accs)
