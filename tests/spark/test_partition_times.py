"""One rule for a partition value's time interval: ``Pipeline.run(df, arrival=...)`` and
``run_incremental`` give a bundle the same processing time (the end of the value's interval,
UTC offsets honoured), so they fire the same panes at the same times.

The two entry points once had a rule each (precision guessed from the string's length in the
one-shot path): ``2013-01`` had no time, ``2013-01-01T05+02:00`` a one-second interval from the
wrong instant, ``2013-01-01T05:00Z`` none at all."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.partitions import partition_interval
from windowlib.runs.incremental import run_incremental
from windowlib.runs.outputs import read_firings
from windowlib.runs.source import PartitionedSource

pytestmark = pytest.mark.spark

OFFSETS = {"no offset": "", "Z": "Z", "+02:00": "+02:00"}
STEPS = {  # name -> (partition column, three values without offset, window size)
    "hourly": ("arrival_hour", ["2013-01-01T05", "2013-01-01T06", "2013-01-01T07"],
               wl.Time.minutes(30)),
    "daily": ("arrival_date", ["2013-01-01", "2013-01-02", "2013-01-03"], wl.Time.hours(12)),
    "monthly": ("arrival_month", ["2013-01", "2013-02", "2013-03"], wl.Time.days(10)),
}


def pipeline(size: int) -> wl.Pipeline:
    # a processing-time guard on top of event time: the bundle's processing time decides
    # which rows are quarantined as "future", and every firing reports it
    return (wl.Pipeline("partition_times", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(size))
            .max_future_skew(wl.Time.minutes(10))
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def rows_of(values: list[str], column: str) -> list[dict]:
    """Rows spread over each partition's interval, and one 20 minutes beyond its end: a future
    row under the 10-minute skew (SPEC §1), quarantined only if the bundle's processing time is
    the interval's end."""
    out = []
    for i, value in enumerate(values):
        start_ms, end_ms = partition_interval(value, column)
        length = end_ms - start_ms
        times = [start_ms + int(length * f) for f in (0.1, 0.5, 0.9)] + [end_ms + 1_200_000]
        for j, ts in enumerate(times):
            out.append({"key": "ab"[j % 2], "value": 10 * i + j, column: value,
                        "ts": dt.datetime.fromtimestamp(ts / 1000, dt.UTC)})
    return out


def sorted_rows(frame) -> list[tuple]:
    return sorted(tuple(r) for r in frame.drop("run_id").collect())


@pytest.mark.parametrize("offset", list(OFFSETS.values()), ids=list(OFFSETS))
@pytest.mark.parametrize("step", list(STEPS))
def test_one_shot_and_incremental_runs_give_bundles_the_same_times(spark, tmp_path, step,
                                                                   offset):
    column, plain, size = STEPS[step]
    values = [v + offset for v in plain]
    rows = rows_of(values, column)
    p = pipeline(size)
    schema = pa.schema([("key", pa.string()), ("ts", pa.timestamp("us", tz="UTC")),
                        ("value", pa.int64())])
    for value in values:
        folder = tmp_path / "events" / f"{column}={value}"
        folder.mkdir(parents=True)
        part = [{k: r[k] for k in ("key", "ts", "value")} for r in rows if r[column] == value]
        pq.write_table(pa.Table.from_pylist(part, schema=schema), folder / "part-0.parquet")

    df = spark.createDataFrame(rows, f"key string, value long, {column} string, ts timestamp")
    one_shot = p.run(df, arrival=column, order_by=["ts", "key"])
    expected = sorted_rows(one_shot.firings)
    expected_rejects = sorted(tuple(r) for r in one_shot.rejects.select(
        "key", "ts", "value", "reason").collect())

    output = f"file://{tmp_path}/windows"
    summary = run_incremental(p, PartitionedSource(f"file://{tmp_path}/events", partition=column),
                              f"file://{tmp_path}/checkpoints", output, spark=spark)
    assert summary.status == "published"
    assert sorted_rows(read_firings(output, spark=spark)) == expected
    assert expected, "the data should fire windows"
    # the future guard depends on the processing time too: the same rows are quarantined
    rejects = wl.read_rejects(output, spark=spark).select("key", "ts", "value", "reason")
    assert sorted(tuple(r) for r in rejects.collect()) == expected_rejects
    assert [r[-1] for r in expected_rejects] == ["future_timestamp"] * len(values)


@pytest.mark.parametrize("value, start, end", [
    ("2013-01-01T05", "2013-01-01T05:00:00+00:00", "2013-01-01T06:00:00+00:00"),
    ("2013-01-01T05Z", "2013-01-01T05:00:00+00:00", "2013-01-01T06:00:00+00:00"),
    ("2013-01-01T05+02:00", "2013-01-01T03:00:00+00:00", "2013-01-01T04:00:00+00:00"),
    ("2013-01-01T05:00Z", "2013-01-01T05:00:00+00:00", "2013-01-01T05:01:00+00:00"),
    ("2013-01-02", "2013-01-02T00:00:00+00:00", "2013-01-03T00:00:00+00:00"),
    ("2013-01", "2013-01-01T00:00:00+00:00", "2013-02-01T00:00:00+00:00"),
    ("2013-12-01T23-01:30", "2013-12-02T00:30:00+00:00", "2013-12-02T01:30:00+00:00"),
])
def test_a_partition_value_covers_its_precision_from_its_offset(value, start, end):
    got = partition_interval(value)
    assert got == (int(dt.datetime.fromisoformat(start).timestamp() * 1000),
                   int(dt.datetime.fromisoformat(end).timestamp() * 1000))
