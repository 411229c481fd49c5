"""Bad input through ``wl.run_incremental`` never crashes a run and never vanishes (SPEC §7):
null and unparseable timestamps, missing keys (a null value, or a file without the key
column), wrong types, corrupt and truncated files, timestamps beyond ``max_future_skew`` become
rejects with reasons; ``inputs = processed + late + rejects`` is in the summary and in the
commit record. A source with no key column at all is a clear user error, and publishes nothing.

(``tests/spark/test_source.py`` covers how the reader reports bad files and rows;
``tests/spark/test_incremental.py`` null keys through a run.)
"""

from __future__ import annotations

import collections

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import InputError, StateError
from windowlib.runs.incremental import open_checkpoint

pytestmark = pytest.mark.spark

P00, P01 = "arrival_hour=2024-03-01T00", "arrival_hour=2024-03-01T01"
SCHEMA = "seq long, key string, ts string, value long"   # ts: ISO strings, parsed by windowlib


def pipeline() -> wl.Pipeline:
    return (wl.Pipeline("bad_input", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10)))
            .max_future_skew("1 day")
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def write(folder, name: str, rows: list[dict], schema: pa.Schema | None = None) -> bytes:
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema or pa.schema(
        [("seq", pa.int64()), ("key", pa.string()), ("ts", pa.string()), ("value", pa.int64())]))
    pq.write_table(table, folder / name)
    return (folder / name).read_bytes()


def row(seq: int, key: str | None, ts: str | None, value: int = 1) -> dict:
    return {"seq": seq, "key": key, "ts": ts, "value": value}


@pytest.fixture
def lake(tmp_path):
    events = tmp_path / "events"
    write(events / P00, "part-0.parquet", [
        row(0, "a", "2024-03-01T00:01:00Z", 1),            # processed
        row(1, "b", "2024-03-01T00:12:00+00:00", 2),       # processed
        row(2, "a", None),                                  # null_timestamp
        row(3, "a", "yesterday"),                           # invalid_timestamp
        row(4, None, "2024-03-01T00:20:00Z"),               # missing_key
        row(5, "b", "2024-03-09T00:00:00Z"),               # future_timestamp (8 days ahead)
        row(6, "a", "2024-03-01T00:40:00Z", 3),            # processed
    ])
    no_key = pa.schema([("seq", pa.int64()), ("ts", pa.string()), ("value", pa.int64())])
    write(events / P00, "part-1-no-key.parquet",            # 2 x missing_key
          [{"seq": 7, "ts": "2024-03-01T00:30:00Z", "value": 1},
           {"seq": 8, "ts": "2024-03-01T00:31:00Z", "value": 1}], no_key)
    good = write(events / P01, "part-0.parquet", [
        row(9, "a", "2024-03-01T01:30:00Z", 4),            # processed
        row(10, "b", "2024-03-01T00:05:00Z", 5),           # too late: its window is gone
    ])
    strings = pa.schema([("seq", pa.int64()), ("key", pa.string()), ("ts", pa.string()),
                         ("value", pa.string())])
    write(events / P01, "part-1-wrong-type.parquet",        # value "abc": unreadable file
          [{"seq": 11, "key": "a", "ts": "2024-03-01T01:31:00Z", "value": "abc"}], strings)
    (events / P01 / "part-2-corrupt.parquet").write_bytes(b"this is not parquet" * 20)
    (events / P01 / "part-3-truncated.parquet").write_bytes(good[: len(good) * 2 // 3])
    return tmp_path


def test_every_bad_row_and_file_is_a_reject_with_a_reason(spark, lake):
    out = f"file://{lake}/windows"
    source = wl.PartitionedSource(f"file://{lake}/events", schema=SCHEMA, order_by=["seq"])
    summary = wl.run_incremental(pipeline(), source, f"file://{lake}/checkpoints", out,
                                 watermark=wl.BoundedOutOfOrderness("5 minutes"), spark=spark)
    assert summary.status == "published"
    # rows: the wrong-type file's footer tells its one row; the corrupt and the truncated file
    # have no readable footer, so they count as files with an unknown row count
    assert (summary.inputs, summary.processed, summary.late, summary.rejects) == (12, 4, 1, 7)
    assert summary.files_consumed == 6
    assert sorted((b["path"].rsplit("/", 1)[1], b["rows"]) for b in summary.bad_files) == [
        ("part-1-wrong-type.parquet", 1), ("part-2-corrupt.parquet", None),
        ("part-3-truncated.parquet", None)]
    assert "3 unreadable: 1 rows rejected, 2 with an unknown row count" in \
        "\n".join(summary.lines())
    # the future row did not drag the watermark 8 days ahead
    assert summary.watermark.startswith("2024-03-01T01:24:59")

    rejects = wl.read_rejects(out, spark=spark).collect()
    reasons = collections.Counter(r["reason"].split(":", 1)[0] for r in rejects)
    assert reasons == {"missing_key": 3, "unreadable_file": 3, "null_timestamp": 1,
                       "invalid_timestamp": 1, "future_timestamp": 1}
    assert {r["seq"] for r in rejects if r["seq"] is not None} == {2, 3, 4, 5, 7, 8}
    unreadable = [r["reason"] for r in rejects if r["reason"].startswith("unreadable_file")]
    assert all("file://" in reason and ".parquet" in reason for reason in unreadable)
    late = wl.read_late(out, spark=spark).collect()
    assert [(r["seq"], r["reason"]) for r in late] == [(10, "too_late")]
    firings = wl.read_firings(out, spark=spark).collect()
    assert sum(r["count"] for r in firings) == 3          # closed windows: seq 0, 1, 6
    # recorded in the commit record too, with the same balance
    stats = open_checkpoint(pipeline(), f"file://{lake}/checkpoints").latest().stats
    assert (stats["inputs"], stats["processed"], stats["late"], stats["rejects"]) == (
        12, 4, 1, 7)
    assert len(stats["bad_files"]) == 3


def test_a_source_without_the_key_column_is_a_clear_error_and_publishes_nothing(spark, lake):
    source = wl.PartitionedSource(f"file://{lake}/events", schema="seq long, ts string",
                                  order_by=["seq"])
    with pytest.raises(InputError) as info:
        wl.run_incremental(pipeline(), source, f"file://{lake}/checkpoints",
                           f"file://{lake}/windows", spark=spark)
    assert info.value.code == "COLUMN_MISSING" and "key" in str(info.value)
    assert open_checkpoint(pipeline(), f"file://{lake}/checkpoints").latest() is None
    with pytest.raises(StateError) as missing:
        wl.read_firings(f"file://{lake}/windows", spark=spark)
    assert missing.value.code == "OUTPUT_NOT_FOUND"


def test_a_damaged_file_with_a_readable_footer_counts_its_rows(spark, tmp_path):
    """12 rows in a file whose data pages are damaged, next to a good file of 3 rows: 15 input
    rows, 12 of them rejected (once: 4 inputs, 3 processed, 1 reject)."""
    folder = tmp_path / "events" / P00
    folder.mkdir(parents=True)
    good = pa.table({"seq": [0, 1, 2], "key": ["a"] * 3, "value": [1, 2, 3],
                     "ts": ["2024-03-01T00:00:01Z"] * 3})
    pq.write_table(good, folder / "part-0.parquet")
    twelve = pa.table({"seq": list(range(10, 22)), "key": ["b"] * 12, "value": list(range(12)),
                       "ts": ["2024-03-01T00:00:02Z"] * 12})
    pq.write_table(twelve, folder / "part-1.parquet")
    data = bytearray((folder / "part-1.parquet").read_bytes())
    data[8:40] = bytes(32)                    # a page header, not the footer
    (folder / "part-1.parquet").write_bytes(bytes(data))
    source = wl.PartitionedSource(f"file://{tmp_path}/events", schema=SCHEMA, order_by=["seq"])
    summary = wl.run_incremental(pipeline(), source, f"file://{tmp_path}/cp",
                                 f"file://{tmp_path}/out", spark=spark)
    assert (summary.inputs, summary.processed, summary.late, summary.rejects) == (15, 3, 0, 12)
    assert [b["rows"] for b in summary.bad_files] == [12]


def test_a_run_that_accepted_no_event_records_no_clock_sentinels(spark, tmp_path):
    """Only rejected rows: no watermark and no event time yet. The commit says ``None`` (never
    the -inf integer sentinel), and the next run starts from there."""
    events = tmp_path / "events"
    write(events / P00, "part-0.parquet", [row(0, "a", None), row(1, None, "2024-03-01T00:01Z")])
    source = wl.PartitionedSource(f"file://{tmp_path}/events", schema=SCHEMA, order_by=["seq"])
    where = (source, f"file://{tmp_path}/checkpoints", f"file://{tmp_path}/windows")
    first = wl.run_incremental(pipeline(), *where, spark=spark)
    assert first.status == "published" and first.rejects == 2 and first.watermark is None
    head = open_checkpoint(pipeline(), where[1]).latest()
    assert head.watermark_ms is None and head.max_event_time_ms is None
    assert head.processing_time_ms == 1_709_254_800_000          # the partition's end
    write(events / P01, "part-0.parquet", [row(2, "a", "2024-03-01T01:05:00Z")])
    second = wl.run_incremental(pipeline(), *where, spark=spark)
    assert second.processed == 1
    assert open_checkpoint(pipeline(), where[1]).latest().max_event_time_ms == 1_709_255_100_000


def test_a_damaged_file_whose_footer_plans_the_run_is_left_out_of_the_plan(spark, tmp_path):
    """Timestamps stored as INT64 UTC: the run plans its bundle from the footers
    (``runs/footer_plan.py``). A file whose footer reads but whose data does not is a reject,
    so its footer's later event times must not move the watermark: the run equals a run
    without that file, plus the file's 12 rejected rows."""
    stamp = pa.schema([("seq", pa.int64()), ("key", pa.string()),
                       ("ts", pa.timestamp("us", tz="UTC")), ("value", pa.int64())])
    t0 = pa.scalar(1_709_251_201_000_000, pa.timestamp("us", tz="UTC")).as_py()  # 00:00:01

    def lake(root, damaged: bool) -> wl.PartitionedSource:
        folder = root / "events" / P00
        write(folder, "part-0.parquet", [{"seq": i, "key": "a", "ts": t0, "value": i}
                                         for i in range(3)], stamp)
        if damaged:
            late = t0.replace(minute=50)
            write(folder, "part-1.parquet", [{"seq": 10 + i, "key": "b", "ts": late,
                                              "value": i} for i in range(12)], stamp)
            data = bytearray((folder / "part-1.parquet").read_bytes())
            data[8:40] = bytes(32)                # a page header, not the footer
            (folder / "part-1.parquet").write_bytes(bytes(data))
        return wl.PartitionedSource(f"file://{root}/events", order_by=["seq"])

    runs = {}
    for damaged in (False, True):
        root = tmp_path / str(damaged)
        runs[damaged] = wl.run_incremental(pipeline(), lake(root, damaged), f"file://{root}/cp",
                                           f"file://{root}/out", spark=spark)
    summary, clean = runs[True], runs[False]
    assert [b["rows"] for b in summary.bad_files] == [12]
    assert (summary.inputs, summary.processed, summary.rejects) == (15, 3, 12)
    assert (summary.watermark, summary.firings) == (clean.watermark, clean.firings)
