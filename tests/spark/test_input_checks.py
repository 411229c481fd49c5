"""Typos and wrong types in a pipeline's columns are errors before any data is read — never a
run that rejects every row, yields nulls, or silently takes another path."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import InputError
from windowlib.runs.incremental import open_checkpoint, run_incremental

pytestmark = pytest.mark.spark
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
