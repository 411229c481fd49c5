"""The frames a suite runs on, derived from the staged outputs, and the real unexpected counts.

Invariants:

* Derived frames are lazy Spark plans over the caller's firings (DataFrame API only, nothing
  collected but one row of counts per frame).
* Counts are exact: computed with Spark aggregates over the whole frame, never from GX's 20-row
  ``partial_unexpected_*`` samples. They follow GX's definitions: map expectations skip nulls
  (nulls are counted by the not-null checks), ``pane_unique`` counts every row whose pane tuple
  is shared with another row, ``on_time_at_most_once`` counts windows.
"""

from __future__ import annotations

from typing import Any

from windowlib.engines.spark.columns import user_col
from windowlib.quality.suites import (
    ON_TIME_ROWS,
    TIMINGS,
    WINDOW_LENGTH,
    SuitePlan,
)


def _c(name: str) -> Any:

    return user_col(name)


def prepare_firings(plan: SuitePlan, firings: Any) -> Any:
    """``firings`` plus ``window_length_ms`` when the assigner has a size."""
    from pyspark.sql import functions as F

    if plan.window_size_ms is None:
        return firings
    length = F.unix_millis(_c("window_end")) - F.unix_millis(_c("window_start"))
    return firings.withColumn(WINDOW_LENGTH, length)


def windows_frame(plan: SuitePlan, firings: Any) -> Any:
    """One row per window with ``on_time_rows`` (non-retraction ON_TIME firings)."""
    from pyspark.sql import functions as F

    on_time = _c("timing") == F.lit("ON_TIME")
    if plan.retracting:
        on_time = on_time & ~F.coalesce(_c("retract"), F.lit(False))
    rows = F.sum(F.when(on_time, 1).otherwise(0)).cast("long").alias(ON_TIME_ROWS)
    return firings.groupBy(*[_c(c) for c in plan.window_columns]).agg(rows)


def firings_counts(plan: SuitePlan, firings: Any) -> dict[str, int]:
    """Exact unexpected counts of the built-in firings checks, plus ``__rows__``."""
    from pyspark.sql import functions as F

    def count_if(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0)).cast("long")

    present = set(firings.columns)
    exprs = {"__rows__": F.count(F.lit(1))}
    for check in plan.checks_for("firings"):
        if not check.builtin or (check.column and check.column not in present):
            continue
        name = check.name
        if name.startswith("not_null:"):
            exprs[name] = count_if(_c(check.column).isNull())
        elif name == "timing_allowed":
            exprs[name] = count_if(_c("timing").isNotNull() & ~_c("timing").isin(*TIMINGS))
        elif name == "pane_index_non_negative":
            exprs[name] = count_if(_c("pane_index") < 0)
        elif name == "window_length":
            exprs[name] = count_if(_c(WINDOW_LENGTH) != F.lit(plan.window_size_ms))
    names = list(exprs)
    row = firings.agg(*[exprs[n].alias(f"c{i}") for i, n in enumerate(names)]).first()
    counts = {n: int(row[i] or 0) for i, n in enumerate(names)}
    if plan.unique_panes and set(plan.pane_tuple) <= present:
        dup = (firings.groupBy(*[_c(c) for c in plan.pane_tuple]).count()
               .filter(F.col("count") > 1).agg(F.sum("count")).first())
        counts["pane_unique"] = int(dup[0] or 0)
    return counts


def windows_counts(windows: Any) -> dict[str, int]:
    """Exact counts for the windows frame: windows with more than one ON_TIME firing."""
    from pyspark.sql import functions as F

    row = windows.agg(F.count(F.lit(1)),
                      F.sum(F.when(_c(ON_TIME_ROWS) > 1, 1).otherwise(0))).first()
    return {"__rows__": int(row[0] or 0), "on_time_at_most_once": int(row[1] or 0)}



__all__ = [
    "firings_counts",
    "prepare_firings",
    "windows_counts",
    "windows_frame",
]
