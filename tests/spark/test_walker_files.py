"""A one-shot run's walker output as Parquet files its Python tasks write
(``engines/spark/walker_files.py``).

- The outputs read from the files equal those read from Spark's cache
  (``spark.windowlib.walkerOutput=cache``), schema and rows, on the pane and general paths,
  for timestamps (with and without a time zone), decimals, arrays, maps, structs, column
  names with spaces and dots, typed and untyped side outputs, late and rejected rows.
- ``unpersist()`` deletes the files; a failing user function is its coded error and leaves
  no directory behind.
- Each kind of row (firings, late, rejects, side outputs) is kept in files of its own, so an
  output reads only its own files: the late and rejects outputs do not scan the firings.
- A retried task replaces its partition's files; a failed walk leaves no file.
- Types Parquet does not keep exactly (intervals) keep the cache.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import sys

import pytest
from spark_session import ship_by_value

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.columns import KIND
from windowlib.engines.spark.session import scoped_conf
from windowlib.engines.spark.walker_files import WALKER_OUTPUT_CONF, _file_writer, _keeps

pytestmark = pytest.mark.spark

ship_by_value(sys.modules[__name__])

BIG = wl.OutputTag("big", schema="key string, n long, at timestamp")
AUDIT = wl.OutputTag("audit")


class Everything(wl.ProcessWindowFunction):
    """Typed results from every kind of input column, and both kinds of side output."""

    result_schema = ("n long, total decimal(12,2), tags array<string>, "
                     "attrs map<string,long>, first_at timestamp, inner struct<x:long>")
    big, audit = BIG, AUDIT

    def process(self, key, context, elements):
        if len(elements) > 1:
            context.output(BIG, {"key": key, "n": len(elements),
                                 "at": elements[0]["at"]})
        context.output(AUDIT, {"key": key, "pane": context.pane.index})
        yield {"n": len(elements), "total": sum(e["v.x"] for e in elements),
               "tags": [t for e in elements for t in e["tags"]],
               "attrs": {k: v for e in elements for k, v in dict(e["a b"]).items()},
               "first_at": elements[0]["at"], "inner": {"x": elements[-1]["s"]["x"]}}


class Untyped(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"n": len(elements), "pane": context.pane.index}


class Typed(Untyped):
    result_schema = "n long, pane long"


class Fails(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        raise ValueError("no")


def _frame(spark):
    def at(minute):
        return None if minute is None else dt.datetime(2024, 3, 1, 0, minute, tzinfo=dt.UTC)

    rows = [(k, at(m), decimal.Decimal(f"{m}.25"), [f"t{m}"], {f"k{m % 3}": m},
             {"x": m}, h)
            for h, minutes in enumerate([range(0, 30, 4), range(30, 60, 5)])
            for k in ("a", "b") for m in minutes]
    rows += [("a", at(1), decimal.Decimal("1.00"), [], {}, {"x": 1}, 2),     # too late
             ("b", None, decimal.Decimal("2.00"), None, None, None, 2),      # no event time
             (None, at(50), decimal.Decimal("3.00"), ["z"], {"z": 1}, {"x": 2}, 2)]  # no key
    # an explicit arrival order: the default one hashes whole rows, which Spark refuses for
    # maps
    local = dt.datetime(2024, 3, 1, 12, 30)     # a local time (no time zone)
    return spark.createDataFrame(
        [(*r, i, local + dt.timedelta(seconds=i)) for i, r in enumerate(rows)],
        "key string, at timestamp, `v.x` decimal(10,2), tags array<string>, "
        "`a b` map<string,long>, s struct<x:long>, hour int, seq long, "
        "wall timestamp_ntz")


def _pipeline(function) -> wl.Pipeline:
    return (wl.Pipeline("files", timestamp="at").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10)))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(2)))
            .process(function))


def _outputs(result) -> dict:
    frames = {"firings": result.firings.drop("run_id"), "late": result.late,
              "rejects": result.rejects, "big": result.side_output(BIG),
              "audit": result.side_output(AUDIT)}
    return {name: (frame.schema, sorted((tuple(r) for r in frame.collect()), key=repr))
            for name, frame in frames.items()}


@pytest.mark.parametrize("path", ["panes", "general"])
def test_outputs_read_from_the_walkers_files_equal_the_cached_ones(spark, path):
    df = _frame(spark)
    runs = {}
    for mode in ("files", "cache"):
        with scoped_conf(spark, {WALKER_OUTPUT_CONF: mode}):
            result = run_dataframe(_pipeline(Everything()), df, "hour", finalize=True,
                                   path=path, order_by="seq")
        assert result.path == path
        assert (result.run.detail.files is not None) == (mode == "files")
        assert result.run.detail.persisted == (mode == "cache")
        runs[mode] = _outputs(result)
        result.unpersist()
    assert runs["files"] == runs["cache"]
    got = runs["files"]
    assert {r[4] for r in got["firings"][1]} == {"EARLY", "ON_TIME"}    # timing
    assert len(got["late"][1]) == 1 and len(got["rejects"][1]) == 2
    assert got["big"][1] and got["audit"][1]


@pytest.mark.parametrize("path", ["panes", "general"])
def test_each_output_reads_only_the_files_of_its_own_rows(spark, path):
    import shutil

    result = run_dataframe(_pipeline(Everything()), _frame(spark), "hour", finalize=True,
                           path=path, order_by="seq")
    expected = {name: sorted(map(tuple, getattr(result, name).collect()), key=repr)
                for name in ("late", "rejects")}
    assert len(expected["late"]) == 1 and len(expected["rejects"]) == 2
    directory = result.run.detail.files.directory
    kinds = set(os.listdir(directory))     # (the general path also keeps its statistics)
    assert {f"{KIND}={k}" for k in ("firing", "late", "reject", "side")} <= kinds
    # without the firings' files, the element outputs still read (they never open them) ...
    shutil.rmtree(os.path.join(directory, f"{KIND}=firing"))
    for name, rows in expected.items():
        assert sorted(map(tuple, getattr(result, name).collect()), key=repr) == rows
    # ... and the firings do not
    with pytest.raises(Exception, match=r"(?i)not exist|FileNotFound"):
        result.firings.collect()
    result.unpersist()


def test_unpersist_deletes_the_files(spark):
    result = run_dataframe(_pipeline(Untyped()), _frame(spark), "hour", finalize=True,
                           order_by="seq")
    directory = result.run.detail.files.directory
    assert os.listdir(directory)
    assert result.firings.count() > 0
    result.unpersist()
    assert not os.path.exists(directory)
    result.unpersist()      # twice: nothing left to do


def _walker_dirs(spark) -> set[str]:
    from pyspark import SparkFiles

    root = SparkFiles.getRootDirectory()
    return {d for d in os.listdir(root) if d.startswith("windowlib-walker-")}


@pytest.mark.parametrize("path", ["panes", "general"])
def test_a_failing_function_is_function_failed_and_leaves_no_files(spark, path):
    before = _walker_dirs(spark)
    with pytest.raises(wl.ExecutionError) as info:
        run_dataframe(_pipeline(Fails()), _frame(spark), "hour", finalize=True, path=path,
                      order_by="seq")
    assert info.value.code == "FUNCTION_FAILED"
    assert "ValueError: no" in str(info.value)
    assert _walker_dirs(spark) == before


def _walk(batches):
    yield from batches


def test_a_retried_partition_replaces_its_file_and_a_failed_walk_leaves_none(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("n", LongType(), True)])
    write = _file_writer(_walk, str(tmp_path), schema.json(), False)

    def batch(values):
        return pa.RecordBatch.from_pydict({"n": pa.array(values, pa.int64())})

    assert list(write(iter([batch([1, 2]), batch([3])]))) == []
    assert list(write(iter([batch([4])]))) == []     # the same partition again
    assert os.listdir(tmp_path) == ["part-00000.parquet"]
    assert pq.read_table(tmp_path / "part-00000.parquet").column("n").to_pylist() == [4]

    # with a kind column: one file per kind; a retry that no longer yields a kind removes
    # the first attempt's file of it
    kinds = tmp_path / "kinds"
    os.makedirs(kinds)
    tagged = StructType([StructField(KIND, StringType(), False),
                         StructField("n", LongType(), True)])
    write = _file_writer(_walk, str(kinds), tagged.json(), False)

    def rows(pairs):
        return pa.RecordBatch.from_pydict({KIND: pa.array([k for k, _ in pairs]),
                                           "n": pa.array([n for _, n in pairs], pa.int64())})

    assert list(write(iter([rows([("firing", 1), ("late", 2), ("firing", 3)]),
                            rows([("late", 4)])]))) == []
    read = {d: pq.read_table(kinds / d / "part-00000.parquet").column("n").to_pylist()
            for d in sorted(os.listdir(kinds))}
    assert read == {f"{KIND}=firing": [1, 3], f"{KIND}=late": [2, 4]}
    assert list(write(iter([rows([("firing", 5)])]))) == []      # the retry: no late rows
    assert [sorted(os.listdir(kinds / d)) for d in sorted(os.listdir(kinds))] == [
        ["part-00000.parquet"], []]
    assert pq.read_table(kinds / f"{KIND}=firing").column("n").to_pylist() == [5]

    def broken(batches):
        yield from batches
        raise RuntimeError("walk failed")

    fails = _file_writer(broken, str(tmp_path / "other"), schema.json(), False)
    os.makedirs(tmp_path / "other")
    with pytest.raises(RuntimeError):
        list(fails(iter([batch([5])])))
    assert os.listdir(tmp_path / "other") == []


def test_types_parquet_does_not_keep_exactly_keep_the_cache(spark):
    from pyspark.sql import types as T

    assert _keeps(T.StructType([T.StructField("a", T.ArrayType(T.MapType(
        T.StringType(), T.DecimalType(10, 2)))), T.StructField("b", T.TimestampNTZType())]))
    assert not _keeps(T.StructType([T.StructField("d", T.DayTimeIntervalType())]))
    assert not _keeps(T.StructType([T.StructField("s", T.StructType([
        T.StructField("x", T.LongType()), T.StructField("X", T.LongType())]))]))

    df = spark.createDataFrame([("a", 1, dt.timedelta(seconds=3), 0),
                                ("a", 2, dt.timedelta(seconds=4), 0)],
                               "key string, ts long, d interval day to second, hour int")
    p = (wl.Pipeline("interval", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(Typed()))
    result = run_dataframe(p, df, "hour", finalize=True)
    assert result.path == "panes" and result.run.detail.files is None
    assert [(r["n"], r["pane"]) for r in result.firings.collect()] == [(2, 0)]
    result.unpersist()
