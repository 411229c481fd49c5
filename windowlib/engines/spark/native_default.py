"""Firings of the default trigger on the native path (see ``native.py`` for why they equal
the reference engine): ONE ``groupBy(key, window)`` per run, no join, no window function.

Invariant: per window, the ON_TIME pane aggregates exactly the on-time elements (masked
aggregates) and each kept late element yields one LATE firing in arrival order, folded from
the window's sorted list of late elements.

Why one aggregate (``LATE_BRANCH = "one_pass"``) and not two: the ``collect_list`` of late
elements turns Spark's hash aggregate into the object hash aggregate, which falls back to
sorting after 128 groups per task. The alternative (``"split"``: fixed-width accumulators in a
plain hash aggregate, the late elements — ~2 % — in a second, filtered aggregate, joined back
by window with a shuffled hash join) avoids that sort but reads the input a second time and
adds a join. Measured alternately in one process (``benchmarks/spark_native_path.py
--late-branch one_pass,split``, 1M events, 100k keys, tumbling 5 min, load 15-29 on 2 cores):
medians 66 s one-pass against 109 s split (hand SQL 20 s); single rounds went both ways
(66/46, 66/109, 120/114 s), so the split form is no clear win and one pass stays the default
(it also keeps the plan to one scan). Both forms pass the differential tests.
"""

from __future__ import annotations

from typing import Any

from windowlib.engines.spark.bundles import TS
from windowlib.engines.spark.native_parts import (
    ENTRY,
    LATE_LIST,
    MX,
    ON_N,
    SUB,
    WP,
    WS,
    B,
    Parts,
    nullable,
)

# how the late elements reach their window's row: "one_pass" (one aggregate with a
# collect_list) or "split" (see ``default_firings``); the benchmark measures both
LATE_BRANCH = "one_pass"


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
    if LATE_BRANCH == "split":
        # the fixed-width accumulators in a hash aggregate; the late elements of the few
        # windows that have some in a second, filtered aggregate, joined back by window
        main = kept.groupBy(*parts.group).agg(
            F.count(F.when(on, F.lit(1))).alias(ON_N), *agg_exprs)
        lists = kept.filter(~on).groupBy(*parts.group).agg(
            F.collect_list(element).alias(LATE_LIST))
        agg = main.join(lists.hint("shuffle_hash"), on=[*parts.key_names], how="left")
        list_type = lists.schema[LATE_LIST].dataType
        agg = agg.withColumn(LATE_LIST, F.coalesce(F.col(LATE_LIST),
                                                   F.array().cast(list_type)))
    else:
        agg = kept.groupBy(*parts.group).agg(
            F.count(F.when(on, F.lit(1))).alias(ON_N), *agg_exprs,
            F.collect_list(F.when(~on, element)).alias(LATE_LIST))
    types = {f.name: nullable(f.dataType) for f in agg.schema.fields}
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
