"""Event times outside the accepted range (``core.time.EVENT_TIME_MIN_MS`` to
``EVENT_TIME_END_MS``: years 2 to 9998) are rejects with reason ``timestamp_out_of_range``, on
every engine and path, so that every output stays readable: a late row with a year-1 timestamp
used to make ``read_late(...).collect()`` fail in PySpark (``year 0 is out of range``). In the
rejects output such a value of a timestamp column is null (PySpark cannot represent it); the
reason says why."""

from __future__ import annotations

import contextlib
import datetime as dt
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.time import EVENT_TIME_END_MS, EVENT_TIME_MIN_MS, timestamp_ms
from windowlib.engines.spark.testing import run_bundles_on_spark
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark

with contextlib.suppress(ValueError):      # Spark tasks unpickle Count by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

UTC = dt.UTC
ARROW = pa.schema([("seq", pa.int64()), ("key", pa.string()),
                   ("ts", pa.timestamp("us", tz="UTC")), ("value", pa.int64())])
YEAR_1 = dt.datetime(1, 1, 1, 6, tzinfo=UTC)
YEAR_9999 = dt.datetime(9999, 12, 31, 12, tzinfo=UTC)


class Count:
    """A Python window function: the general (per-key walker) path."""

    result_schema = "n long"

    def process(self, key, context, elements):
        yield {"n": len(list(elements))}


def pipeline(path: str) -> wl.Pipeline:
    p = (wl.Pipeline(f"range_{path}", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10))))
    return p.aggregate(agg.sum("value").alias("total")) if path == "native" \
        else p.process(Count())


def test_the_range_is_years_2_to_9998():
    assert timestamp_ms(dt.datetime(2, 1, 1, tzinfo=UTC)) == EVENT_TIME_MIN_MS
    assert timestamp_ms(dt.datetime(9999, 1, 1, tzinfo=UTC)) == EVENT_TIME_END_MS


def test_out_of_range_event_times_are_rejects_on_every_engine(spark):
    bundles = [Bundle([{"key": "a", "ts": 5, "value": 1},
                       {"key": "a", "ts": EVENT_TIME_MIN_MS - 1, "value": 2},
                       {"key": "a", "ts": EVENT_TIME_MIN_MS, "value": 3},
                       {"key": "b", "ts": EVENT_TIME_END_MS, "value": 4},
                       {"key": "b", "ts": EVENT_TIME_END_MS - 1, "value": 5}]),
               Bundle([], watermark=EVENT_TIME_END_MS - 1)]
    for path in ("native", "general"):
        firings, rejects = run_bundles(pipeline(path), bundles, with_rejects=True)
        assert [(r["ts"], r["reason"]) for r in rejects] == [
            (EVENT_TIME_MIN_MS - 1, "timestamp_out_of_range"),
            (EVENT_TIME_END_MS, "timestamp_out_of_range")], path
        assert len(firings) == 3, path               # the windows of 5, MIN and END - 1
        got = run_bundles_on_spark(pipeline(path), bundles, path=path)
        assert got[0] == firings, path
        assert [(r["ts"], r["reason"]) for r in got[2]] == [(r["ts"], r["reason"])
                                                            for r in rejects], path


def test_a_year_1_datetime_is_a_reject_on_the_reference_engine():
    bundles = [Bundle([{"key": "a", "ts": dt.datetime(1, 1, 1), "value": 1},
                       {"key": "a", "ts": "9999-12-31T00:00:00Z", "value": 1},
                       {"key": "a", "ts": dt.datetime(2024, 3, 1), "value": 1}])]
    _, rejects = run_bundles(pipeline("native"), bundles, with_rejects=True)
    assert [r["reason"] for r in rejects] == ["timestamp_out_of_range"] * 2


def write(folder, rows: list[tuple]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([dict(zip(ARROW.names, r, strict=True)) for r in rows],
                                 schema=ARROW)
    pq.write_table(table, folder / "part-0.parquet")


@pytest.mark.parametrize("path", ["native", "general"])
def test_a_late_year_1_row_leaves_every_output_readable(spark, tmp_path, path):
    events = tmp_path / "events"
    write(events / "arrival_hour=2024-03-01T00",
          [(0, "a", dt.datetime(2024, 3, 1, 0, 1, tzinfo=UTC), 1),
           (1, "a", dt.datetime(2024, 3, 1, 0, 40, tzinfo=UTC), 1)])
    write(events / "arrival_hour=2024-03-01T01",
          [(2, "a", YEAR_1, 1),                                   # behind the watermark
           (3, "b", YEAR_9999, 1),                                # past the range's end
           (4, "a", dt.datetime(2024, 3, 1, 0, 2, tzinfo=UTC), 1),  # late
           (5, "a", dt.datetime(2024, 3, 1, 1, 5, tzinfo=UTC), 1)])
    source = wl.PartitionedSource(f"file://{events}",
                                  schema="seq long, key string, ts timestamp, value long",
                                  order_by=["seq"])
    where = (source, f"file://{tmp_path}/cp", f"file://{tmp_path}/out")
    for hour in ("2024-03-01T00", "2024-03-01T01"):
        summary = wl.run_incremental(pipeline(path), *where, partitions=(hour, hour),
                                     spark=spark)
        assert summary.inputs == summary.processed + summary.late + summary.rejects
    output = where[2]
    late = wl.read_late(output, spark=spark).collect()          # used to raise ValueError
    rejects = wl.read_rejects(output, spark=spark).collect()
    firings = wl.read_firings(output, spark=spark).collect()
    assert [(r["seq"], r["reason"]) for r in late] == [(4, "too_late")]
    assert sorted((r["seq"], r["key"], r["ts"], r["reason"]) for r in rejects) == [
        (2, "a", None, "timestamp_out_of_range"), (3, "b", None, "timestamp_out_of_range")]
    assert {r["window_start"].year for r in firings} == {2024}
    assert (summary.inputs, summary.processed, summary.late, summary.rejects) == (4, 1, 1, 2)
