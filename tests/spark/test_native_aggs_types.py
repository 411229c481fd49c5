"""The accumulator types the native path knows on the client (``CompiledAggregate
.accumulator_types``) equal what Spark's analysis gives the same accumulator expressions, for
every aggregate kind over every atomic input type, masked as the incremental native path
masks them; and a run's accumulator types equal Spark's for a real pipeline."""

from __future__ import annotations

import pytest

from windowlib.engines.spark.native_aggs import AggContext, CompiledAggregate

pytestmark = pytest.mark.spark

KINDS = ("count", "sum", "min", "max", "mean", "first", "last", "collect_list",
         "approx_count_distinct")
INPUT_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "string",
               "boolean", "date", "timestamp", "timestamp_ntz", "decimal(10,2)")
NUMERIC = INPUT_TYPES[:6]
ORDERED = INPUT_TYPES[:11]


def test_client_side_accumulator_types_equal_sparks_analysis(spark):
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    columns = {ddl: f"v{i}" for i, ddl in enumerate(INPUT_TYPES)}
    frame = spark.createDataFrame(
        [], ", ".join([f"{c} {ddl}" for ddl, c in columns.items()] + ["ts long", "b long"]))
    types = {f.name: f.dataType for f in frame.schema.fields}
    ctx = AggContext(ts=F.col("ts"), order=[F.col("b"), F.col("ts")], mask=F.col("b") < 3)
    local, analysed = {}, {}
    for kind in KINDS:
        for ddl, column in columns.items():
            agg = CompiledAggregate(kind, column, "r", None, types[column])
            local[(kind, ddl)] = agg.accumulator_types()
            exprs = [e.alias(n) for n, e in agg.accumulators(ctx).items()]
            try:      # Spark refuses some pairs (sum of a date); the native path never has them
                fields = frame.groupBy().agg(*exprs).schema.fields
            except AnalysisException:
                continue
            analysed[(kind, ddl)] = {f.name: f.dataType for f in fields}
    known = {key for key, t in local.items() if t is not None}
    for key in known:
        assert local[key] == analysed.get(key), key
    # the common aggregates need no analysis; the rest fall back to it
    assert known == ({("count", d) for d in INPUT_TYPES}
                     | {(k, d) for k in ("sum", "mean") for d in NUMERIC}
                     | {(k, d) for k in ("min", "max") for d in ORDERED})


def test_a_native_runs_accumulator_types_equal_the_analysed_ones(spark):
    import datetime as dt

    from pyspark.sql import functions as F

    import windowlib as wl
    from windowlib.engines.spark.native import prepare_native
    from windowlib.engines.spark.native_incremental import accumulator_types
    from windowlib.engines.spark.native_window_state import acc_column

    pipeline = (wl.Pipeline("acc_types", timestamp="ts").key_by("key")
                .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
                .aggregate(wl.aggregates.sum("n").alias("total"), wl.aggregates.count(),
                           wl.aggregates.max("ts").alias("latest"),
                           wl.aggregates.mean("x").alias("avg_x"),
                           wl.aggregates.min("n").alias("least")))
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    df = spark.createDataFrame([("a", t0, 1, 0.5, 0)], "key string, ts timestamp, n int, "
                                                      "x double, arrival long")
    inputs = prepare_native(pipeline, df, "arrival", watermark=None)
    parts = inputs.parts
    exprs, run_accs = parts.accumulators("__wl_a", mask=F.lit(True))
    main = parts.kept.groupBy(*parts.group).agg(*exprs)
    local = accumulator_types(parts, main, run_accs, "__wl_a")
    assert len(local) == 6                  # sum, count, max, mean (s, n), min
    parts.compiled.append(CompiledAggregate("first", "n", "f", None, None))  # not known
    exprs, run_accs = parts.accumulators("__wl_a", mask=F.lit(True))
    main = parts.kept.groupBy(*parts.group).agg(*exprs)
    analysed = accumulator_types(parts, main, run_accs, "__wl_a")
    assert {n: t for n, t in analysed.items() if n != acc_column(5, "v")
            and n != acc_column(5, "t")} == local
