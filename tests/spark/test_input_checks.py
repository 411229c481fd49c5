"""Typos and wrong types in a pipeline's columns are errors before any data is read — never a
run that rejects every row, yields nulls, or silently takes another path."""

from __future__ import annotations

import datetime as dt
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_session import ship_by_value

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import InputError
from windowlib.runs.incremental import open_checkpoint, run_incremental

pytestmark = pytest.mark.spark
ship_by_value(sys.modules[__name__])     # SumOdd runs in the Python workers
T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)


def frame(spark, ts_type: str = "timestamp"):
    value = T0 if ts_type == "timestamp" else 1_000.0
    return spark.createDataFrame([("a", value, 1, "x", "2024-03-01T00")],
                                 f"key string, ts {ts_type}, value long, label string, "
                                 "arrival_hour string")


def p(timestamp: str = "ts", *aggs):
    return (wl.Pipeline("checks", timestamp=timestamp).key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
            .aggregate(*(aggs or (agg.sum("value").alias("total"),))))


@pytest.mark.parametrize("pipeline, code, words", [
    (p("tss"), "COLUMN_MISSING", ["'tss' (timestamp)", "did you mean 'ts'", "label"]),
    (p("ts", agg.sum("nope")), "COLUMN_MISSING", ["'nope'", "sum('nope')"]),
    (p("ts", agg.mean("label")), "AGGREGATE_TYPE_INVALID", ["mean('label')", "string"]),
], ids=["timestamp typo", "aggregate over a missing column", "mean of a string"])
def test_definition_mistakes_fail_before_any_data_is_read(spark, pipeline, code, words):
    with pytest.raises(InputError) as err:
        pipeline.run(frame(spark), arrival="arrival_hour")
    assert err.value.code == code
    for word in words:
        assert word in str(err.value)


def test_a_double_timestamp_column_is_a_type_error_not_rows_of_rejects(spark):
    with pytest.raises(InputError) as err:
        p().run(frame(spark, "double"), arrival="arrival_hour")
    assert err.value.code == "TIMESTAMP_TYPE_INVALID" and "double" in str(err.value)


def test_an_incremental_run_checks_the_columns_before_it_publishes_anything(spark, tmp_path):
    folder = tmp_path / "events" / "arrival_hour=2024-03-01T00"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"key": ["a"], "ts": pa.array([T0], pa.timestamp("us", tz="UTC")),
                             "value": [1]}), folder / "part-0.parquet")
    pipeline = p("tss")
    with pytest.raises(InputError) as err:
        run_incremental(pipeline, wl.PartitionedSource(f"file://{tmp_path}/events"),
                        f"file://{tmp_path}/cp", f"file://{tmp_path}/out", spark=spark)
    assert err.value.code == "COLUMN_MISSING" and "did you mean 'ts'" in str(err.value)
    assert open_checkpoint(pipeline, f"file://{tmp_path}/cp").latest() is None


class SumOdd(wl.ProcessWindowFunction):
    """Reads the columns whose names Spark SQL needs quoted."""

    def process(self, key, context, elements):
        yield {"total": sum(e["v`al"] for e in elements), "dots": elements[0]["a.b"]}


@pytest.mark.parametrize("path", ["native", "general", "panes"])
def test_columns_named_with_backquotes_and_dots_run_on_every_spark_path(spark, path):
    """A value column may be named anything Spark allows: quoted as a SQL identifier
    (backquotes doubled), never a raw ``INVALID_ATTRIBUTE_NAME_SYNTAX``."""
    from windowlib.engines.spark import run_dataframe

    rows = [("a", 1, 5, "x", 0), ("a", 2, 7, "y", 0), ("a", None, 1, "z", 0),
            ("a", 3, 100, "late", 1)]
    df = spark.createDataFrame(rows, "key string, ts long, `v``al` long, `a.b` string, hour int")
    base = (wl.Pipeline("odd", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)))
    pipeline = base.process(SumOdd()) if path == "panes" else \
        base.aggregate(agg.sum("v`al").alias("total"), agg.first("a.b").alias("dots"))
    result = run_dataframe(pipeline, df, "hour", finalize=True, path=path,
                           bundles={0: {"processing_time": 0, "watermark": 50},
                                    1: {"processing_time": 1, "watermark": 60}},
                           result_schema="total long, dots string" if path == "panes" else None)
    assert [(r["key"], r["total"], r["dots"]) for r in result.firings.collect()] == \
        [("a", 12, "x")]
    assert [(r["v`al"], r["a.b"], r["reason"]) for r in result.late.collect()] == \
        [(100, "late", "too_late")]
    assert [(r["v`al"], r["a.b"]) for r in result.rejects.collect()] == [(1, "z")]
    result.unpersist()


@pytest.mark.parametrize("native", [True, False], ids=["native", "general"])
def test_an_incremental_run_reads_and_publishes_columns_with_backquotes_and_dots(
        spark, tmp_path, native):
    """The same names through a checkpointed run: source read, engine, routed output files,
    and the committed outputs read back."""
    hour = tmp_path / "events" / "arrival_hour=2024-03-01T00"
    hour.mkdir(parents=True)
    # b's element moves the watermark past a's window; b's own window stays open
    times = [T0, T0 + dt.timedelta(minutes=1), None, T0 + dt.timedelta(minutes=10)]
    pq.write_table(pa.table({"key": ["a", "a", "a", "b"],
                             "ts": pa.array(times, pa.timestamp("us", tz="UTC")),
                             "v`al": [5, 7, 1, 0], "a.b": ["x", "y", "z", "w"]}),
                   hour / "part-0.parquet")
    pipeline = (wl.Pipeline("odd_inc", timestamp="ts").key_by("key")
                .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
                .aggregate(agg.sum("v`al").alias("total"), agg.count().alias("n")))
    if not native:      # a Python function takes the general path
        pipeline = pipeline.trigger(wl.EventTimeTrigger.after_end_of_window()
                                    .with_early_trigger(wl.CountTrigger.at_least(100)))
    out = f"file://{tmp_path}/out"
    summary = run_incremental(pipeline, wl.PartitionedSource(f"file://{tmp_path}/events"),
                              f"file://{tmp_path}/cp", out, spark=spark,
                              watermark=wl.BoundedOutOfOrderness(0))
    assert summary.rejects == 1
    firings = wl.read_firings(out, spark=spark)
    assert [(r["key"], r["total"], r["n"]) for r in firings.collect()] == [("a", 12, 2)]
    assert [(r["v`al"], r["a.b"], r["reason"]) for r in wl.read_rejects(out, spark=spark)
            .collect()] == [(1, "z", "null_timestamp")]
