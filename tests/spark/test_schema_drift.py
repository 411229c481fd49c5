"""The input schema is part of the checkpoint: a new file whose types drift is read as the
recorded type, widened safely (and the change recorded, every committed output still readable
together), or refused with ``SCHEMA_MISMATCH`` naming the file and the column — before anything
is staged. (Once, an ``int`` hour and a ``double`` hour committed, and ``read_firings`` failed
with ``PARQUET_COLUMN_DATA_TYPE_MISMATCH`` forever.)"""

from __future__ import annotations

import datetime as dt
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import InputError
from windowlib.runs.incremental import open_checkpoint, run_incremental
from windowlib.runs.outputs import read_firings, read_rejects

pytestmark = pytest.mark.spark
T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)


def pipeline(key_type: str = "string") -> wl.Pipeline:
    return (wl.Pipeline(f"drift_{key_type}", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def write_hour(root, hour: int, columns: dict, minutes: list[int] | None = None) -> None:
    """One file in ``arrival_hour`` ``hour``: events at the given minutes after its start
    (default 0, 40, 45, ...: each hour closes its first 30-minute window)."""
    folder = root / "events" / f"arrival_hour={(T0 + dt.timedelta(hours=hour)):%Y-%m-%dT%H}"
    folder.mkdir(parents=True)
    n = len(columns["value"]) if "value" in columns else len(columns["key"])
    minutes = minutes or [0, 40, 45, 50, 55][:n]
    times = [T0 + dt.timedelta(hours=hour, minutes=m) for m in minutes]
    table = pa.table({"ts": pa.array(times, pa.timestamp("us", tz="UTC")), **columns})
    pq.write_table(table, folder / "part-0.parquet")


def run(spark, root, p):
    return run_incremental(p, wl.PartitionedSource(f"file://{root}/events"),
                           f"file://{root}/cp", f"file://{root}/out", spark=spark)


def test_int_then_double_values_widen_and_every_output_stays_readable(spark, tmp_path):
    p = pipeline()
    # run 1 fires [00:00, 00:30) with a bigint total; run 2 fires [00:30, 01:00) (the 00:40
    # element) and [01:00, 01:30) with double totals
    write_hour(tmp_path, 0, {"key": ["a", "a"], "value": pa.array([1, 2], pa.int64())})
    assert run(spark, tmp_path, p).status == "published"
    write_hour(tmp_path, 1, {"key": ["a", "a", "a", "a"],
                             "value": pa.array([0.5, math.nan, math.inf, 1.5], pa.float64())},
               minutes=[0, 10, 20, 40])
    second = run(spark, tmp_path, p)
    assert second.status == "published"
    assert second.schema_changes and "value: bigint -> double" in second.schema_changes[0]
    rows = read_firings(f"file://{tmp_path}/out", spark=spark).collect()   # readable together
    assert sorted((r["window_start"].strftime("%H:%M"), r["total"]) for r in rows) == [
        ("00:00", 1.0), ("00:30", 2.0), ("01:00", 0.5)]
    rejects = read_rejects(f"file://{tmp_path}/out", spark=spark).collect()
    assert sorted(r["reason"] for r in rejects) == ["non_finite", "non_finite"]


def test_double_then_int_values_read_as_the_recorded_double(spark, tmp_path):
    p = pipeline()
    write_hour(tmp_path, 0, {"key": ["a", "a"], "value": pa.array([0.25, 1.0], pa.float64())})
    run(spark, tmp_path, p)
    write_hour(tmp_path, 1, {"key": ["a", "a"], "value": pa.array([3, 4], pa.int32())})
    assert run(spark, tmp_path, p).schema_changes == []
    rows = read_firings(f"file://{tmp_path}/out", spark=spark).collect()
    assert sorted(r["total"] for r in rows) == [0.25, 1.0, 3.0]


@pytest.mark.parametrize("second, column, words", [
    ({"key": ["a"], "value": ["3"]}, "value", ["string", "has been double"]),
    ({"key": ["a"], "other": [1]}, "value", ["lacks column 'value'", "sum('value')"]),
], ids=["changed type", "missing column the pipeline reads"])
def test_a_file_that_does_not_fit_is_schema_mismatch_before_anything_is_staged(
        spark, tmp_path, second, column, words):
    p = pipeline()
    write_hour(tmp_path, 0, {"key": ["a"], "value": pa.array([0.25], pa.float64())})
    run(spark, tmp_path, p)
    write_hour(tmp_path, 1, second)
    with pytest.raises(InputError) as err:
        run(spark, tmp_path, p)
    assert err.value.code == "SCHEMA_MISMATCH" and "arrival_hour=2024-03-01T01" in str(err.value)
    for word in words:
        assert word in str(err.value)
    assert open_checkpoint(p, f"file://{tmp_path}/cp").latest().version == 1


def test_a_key_column_never_widens(spark, tmp_path):
    p = pipeline("int")
    write_hour(tmp_path, 0, {"key": pa.array([1], pa.int32()), "value": [1.0]})
    run(spark, tmp_path, p)
    write_hour(tmp_path, 1, {"key": pa.array([1], pa.int64()), "value": [1.0]})
    with pytest.raises(InputError) as err:
        run(spark, tmp_path, p)
    assert err.value.code == "SCHEMA_MISMATCH" and "key column" in str(err.value)


def test_a_column_the_pipeline_does_not_read_may_come_and_go(spark, tmp_path):
    p = pipeline()
    write_hour(tmp_path, 0, {"key": ["a"], "value": [1.0], "note": ["x"]})
    run(spark, tmp_path, p)
    write_hour(tmp_path, 1, {"key": ["a"], "value": [2.0], "extra": [7]})
    summary = run(spark, tmp_path, p)
    assert summary.status == "published" and summary.rejects == 0
    assert any(c.startswith("extra: added") for c in summary.schema_changes)
