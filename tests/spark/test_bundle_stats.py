"""The bundle plan from Parquet footers equals the plan from the aggregate job.

Files are written with pyarrow into Hive-style partition directories (so statistics, row
groups, nulls and types are under the test's control) and read back with Spark; each case
compares ``plan_bundles`` fed by ``footer_stats`` with ``plan_bundles`` over the data, and
checks that inputs whose statistics cannot be exact fall back (with a reason) instead."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.bundle_stats import footer_stats, is_plain_parquet_scan
from windowlib.engines.spark.bundles import plan_bundles
from windowlib.engines.spark.general import prepare_input
from windowlib.engines.spark.native import run_native

pytestmark = pytest.mark.spark

UTC = dt.UTC


def write(root, arrival, value, columns, types, *, row_group_size=None, statistics=True):
    """One Parquet file under ``root/arrival=value/`` (``value`` as it appears in the path)."""
    folder = root / f"{arrival}={value}"
    folder.mkdir(parents=True, exist_ok=True)
    n = len(next(iter(columns.values())))
    table = pa.table({c: pa.array(v, types[c]) for c, v in columns.items()})
    pq.write_table(table, folder / f"part-{len(list(folder.iterdir()))}.parquet",
                   row_group_size=row_group_size or max(n, 1), write_statistics=statistics)


def pipeline(keyed=True):
    p = wl.Pipeline("stats_t", timestamp="ts")
    assigner = wl.TumblingEventTimeWindows.of(wl.Time.minutes(5))
    p = p.key_by("k").window(assigner) if keyed else p.window_all(assigner)
    return p.aggregate(agg.count())


def both_plans(df, p, **kwargs):
    """``(footer stats or None, reason, plan from stats, plan from the aggregate)``."""
    logic = p.compile()
    stats, how = footer_stats(df, arrival="arrival", timestamp="ts",
                              key_columns=logic.key_columns)
    prepared, kind = prepare_input(df, p, "arrival")
    common = dict(kind=kind, key_columns=logic.key_columns,
                  strategy=wl.BoundedOutOfOrderness(1000),
                  max_future_skew_ms=logic.max_future_skew_ms, **kwargs)
    from_stats = plan_bundles(prepared, stats=stats, **common) if stats is not None else None
    return stats, how, from_stats, plan_bundles(prepared, **common)


def same(a, b):
    assert (a.arrivals, a.processing_times, a.watermarks, a.counts, a.max_event_ts) == \
        (b.arrivals, b.processing_times, b.watermarks, b.counts, b.max_event_ts)


def ts(*args):
    return dt.datetime(*args, tzinfo=UTC)


TS_TYPES = {"k": pa.string(), "ts": pa.timestamp("us", tz="UTC"), "v": pa.int64()}


def test_timestamps_with_nulls_negatives_row_groups_and_a_future_row(spark, tmp_path):
    root = tmp_path / "in"
    # before 1970 (negative ms, sub-ms micros that floor), null event times, 3 row groups
    write(root, "arrival", "1969-12-31T23",
          {"k": ["a", "b", "c", "d", "e"],
           "ts": [ts(1969, 12, 31, 23, 59, 59, 999_001), None, ts(1969, 12, 31, 22, 1),
                  None, ts(1969, 12, 31, 23, 0, 0, 1)], "v": [1, 2, 3, 4, 5]},
          TS_TYPES, row_group_size=2)
    # a row group whose event times are all null
    write(root, "arrival", "2024-03-01T05", {"k": ["a", "b"], "ts": [None, None], "v": [1, 2]},
          TS_TYPES)
    write(root, "arrival", "2024-03-01T05", {"k": ["a"], "ts": [ts(2024, 3, 1, 4, 59)],
                                             "v": [1]}, TS_TYPES)
    # a future timestamp beyond P_b + max_future_skew (1 day): rejected, must not count
    write(root, "arrival", "2024-03-01T06",
          {"k": ["a", "b"], "ts": [ts(2024, 3, 1, 5, 58), ts(2024, 3, 9)], "v": [1, 2]},
          TS_TYPES)
    df = spark.read.parquet(str(root))
    stats, how, from_stats, from_aggregate = both_plans(df, pipeline())
    assert stats is not None, how
    same(from_stats, from_aggregate)
    assert from_aggregate.counts == [5, 3, 2]
    assert from_aggregate.max_event_ts[0] < 0


def test_integer_ms_event_times_and_integer_partitions(spark, tmp_path):
    root = tmp_path / "in"
    types = {"k": pa.string(), "ts": pa.int64(), "v": pa.int32()}
    for part, values in ((-3, [-7_200_001, -5, None]), (0, [0, 59_999]), (12, [None])):
        write(root, "arrival", str(part), {"k": ["x"] * len(values), "ts": values,
                                           "v": list(range(len(values)))}, types)
    write(root, "arrival", "5", {"k": [], "ts": [], "v": []}, types)   # no rows: no bundle
    df = spark.read.parquet(str(root))
    assert type(df.schema["arrival"].dataType).__name__ == "IntegerType"
    stats, how, from_stats, from_aggregate = both_plans(df, pipeline(),
                                                        processing_time=10**9)
    assert stats is not None, how
    same(from_stats, from_aggregate)
    assert from_aggregate.arrivals == [-3, 0, 12]


def test_escaped_string_partitions_and_window_all(spark, tmp_path):
    root = tmp_path / "in"
    types = {"ts": pa.timestamp("ms", tz="UTC"), "v": pa.int64()}
    for value in ("b%3A1", "a b", "a%2Fz", "c%25d", "e%3", "%C3%A9"):   # Spark's escapes
        write(root, "arrival", value, {"ts": [ts(2024, 1, 1), ts(2024, 1, 2)], "v": [1, 2]},
              types)
    df = spark.read.parquet(str(root))
    stats, how, from_stats, from_aggregate = both_plans(df, pipeline(keyed=False),
                                                        processing_time=ts(2024, 2, 1))
    assert stats is not None, how
    same(from_stats, from_aggregate)
    assert sorted(stats) == sorted(["a b", "a/z", "b:1", "c%d", "e%3", "\xc3\xa9"])


@pytest.mark.parametrize("case", ["null key", "no statistics", "filter", "computed column",
                                  "int96", "out of range"])
def test_inputs_without_exact_statistics_fall_back(spark, tmp_path, case):
    root = tmp_path / "in"
    columns = {"k": ["a", None if case == "null key" else "b"],
               "ts": [ts(2024, 3, 1, 5), ts(9999, 6, 1) if case == "out of range"
                      else ts(2024, 3, 1, 5, 30)], "v": [1, 2]}
    write(root, "arrival", "2024-03-01T05", columns, TS_TYPES,
          statistics=case != "no statistics")
    df = spark.read.parquet(str(root))
    if case == "filter":
        df = df.filter("v > 1")
    elif case == "computed column":
        df = df.withColumn("ts", df["ts"] + dt.timedelta(hours=1))
    elif case == "int96":                 # Spark's default timestamp encoding: no min/max
        df.write.parquet(str(tmp_path / "spark"), partitionBy="arrival")
        df = spark.read.parquet(str(tmp_path / "spark"))
    stats, how, _, _ = both_plans(df, pipeline())
    assert stats is None
    expected = {"null key": "key", "no statistics": "missing", "filter": "plain Parquet",
                "computed column": "plain Parquet", "int96": "INT96",
                "out of range": "accepted range"}[case]
    assert expected in how


def test_plain_scan_detection_accepts_only_a_relation_or_a_plain_projection():
    relation = "Relation [key#0,ts#1,value#2L,arrival_hour#3] parquet"
    assert is_plain_parquet_scan(relation)
    assert is_plain_parquet_scan(f"Project [key#0, ts#1, arrival_hour#3]\n+- {relation}")
    assert not is_plain_parquet_scan(f"Project [key#0, (ts#1 + 1) AS ts#9]\n+- {relation}")
    assert not is_plain_parquet_scan(f"Filter (v#2L > 1)\n+- {relation}")
    assert not is_plain_parquet_scan(relation.replace("parquet", "csv"))


def test_native_run_from_footers_equals_the_run_from_the_aggregate(spark, tmp_path):
    root = tmp_path / "in"
    for hour, minutes in ((5, [1, 3, 58, 59]), (6, [2, 61, 4]), (7, [-90, 10])):
        write(root, "arrival", f"2024-03-01T{hour:02d}",
              {"k": [f"k{m % 2}" for m in minutes],
               "ts": [ts(2024, 3, 1, hour) + dt.timedelta(minutes=m) for m in minutes],
               "v": minutes}, TS_TYPES)
    df = spark.read.parquet(str(root))
    p = (wl.Pipeline("stats_e2e", timestamp="ts").key_by("k")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
         .allowed_lateness(wl.Time.hours(2))
         .aggregate(agg.sum("v").alias("total"), agg.count()))
    runs = [run_native(p, df, "arrival", watermark=wl.BoundedOutOfOrderness(60_000),
                       finalize=True, footer_stats=flag) for flag in (True, False)]
    assert runs[0].plan_source == "parquet footers"
    assert runs[1].plan_source == "aggregate job"
    outputs = [[sorted(map(tuple, run.outputs("r").frame(name).collect()))
                for name in ("firings", "late", "rejects")] for run in runs]
    assert outputs[0] == outputs[1]
    assert any(row[4] == "LATE" for row in outputs[0][0])     # timing column


def test_date_partitions(spark, tmp_path):
    root = tmp_path / "in"
    for day, values in (("2024-02-29", [ts(2024, 2, 28, 23), ts(2024, 2, 29, 1)]),
                        ("1969-12-30", [ts(1969, 12, 30, 5)])):
        write(root, "arrival", day, {"k": ["a"] * len(values), "ts": values,
                                     "v": [1] * len(values)}, TS_TYPES)
    df = spark.read.parquet(str(root))
    assert type(df.schema["arrival"].dataType).__name__ == "DateType"
    stats, how, from_stats, from_aggregate = both_plans(df, pipeline())
    assert stats is not None, how
    same(from_stats, from_aggregate)
    assert from_aggregate.arrivals[0] == -2


def test_the_file_list_costs_a_few_py4j_round_trips_not_one_per_file(spark, tmp_path):
    """PySpark's ``inputFiles`` converts the Java array element by element (a py4j round
    trip per file: 99 for the benchmark's 48 hourly partitions); ``input_files`` joins it on
    the JVM. Counted by wrapping py4j's ``send_command`` (a count, not a timing): this
    thread's commands only, without object releases (``m``), which py4j sends whenever the
    garbage collector frees a proxy of an earlier object, and other threads' commands."""
    import threading

    import py4j.clientserver as cs

    from windowlib.engines.spark.bundle_stats import input_files

    for hour in range(12):
        write(tmp_path, "arrival", f"2024-03-01T{hour:02d}",
              {"k": ["a"], "ts": [ts(2024, 3, 1, hour)], "v": [1]}, TS_TYPES)
    df = spark.read.parquet(str(tmp_path))
    send, calls, me = cs.ClientServerConnection.send_command, [], threading.get_ident()

    def counting(self, command):
        if threading.get_ident() == me and not command.startswith("m\n"):
            calls.append(command.split("\n", 3)[:3])
        return send(self, command)

    cs.ClientServerConnection.send_command = counting
    try:
        files = input_files(df)
    finally:
        cs.ClientServerConnection.send_command = send
    assert files == df.inputFiles() and len(files) == 12
    assert len(calls) <= 8, calls
