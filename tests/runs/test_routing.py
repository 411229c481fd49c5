"""The routing writer (``windowlib.runs.routing``): one Spark job writes several outputs, each
row to the files of the output it is routed to, and the counts it returns are the rows a reader
reads back; a run's outputs have exactly the columns of the engine's public frames."""

from __future__ import annotations

import collections

import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import StateError
from windowlib.engines.spark.errors import windowlib_error
from windowlib.runs.frames import read_frame
from windowlib.runs.routing import OUT, OutputSpec, output_schemas, route_columns, write_routed

pytestmark = pytest.mark.spark


def jobs_of(spark, group: str, action):
    """Run ``action`` in a Spark job group; return (its result, the number of Spark jobs), or
    ``None`` jobs over Spark Connect (no status tracker there)."""
    try:
        sc = spark.sparkContext
    except Exception:
        return action(), None
    sc.setJobGroup(group, group)
    try:
        result = action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


def routed_frame(spark, n: int):
    """Rows 0..n-1 routed three ways by ``id % 3``: ``tens``, ``words`` and ``tally``."""
    from pyspark.sql import functions as F

    i = F.col("id")
    route = (F.when(i % 3 == 0, F.lit("tens")).when(i % 3 == 1, F.lit("words"))
             .otherwise(F.lit("tally")))
    return spark.range(0, n, 1, 3).select(
        route.alias(OUT),
        *route_columns("tens", [("id", i), ("tens", (i / 10).cast("long")),
                                ("parity", (i % 2).cast("string"))]),
        *route_columns("words", [("id", i), ("word", F.concat(F.lit("w"), i.cast("string")))]),
        *route_columns("tally", [("weight", i)]))


def test_one_job_routes_each_row_to_its_outputs_files_and_counts_what_it_wrote(spark,
                                                                               tmp_path):
    n = 200
    frame = routed_frame(spark, n)
    schema_tens = frame.select(frame["`tens::id`"].alias("id"),
                               frame["`tens::tens`"].alias("tens")).schema
    schema_words = frame.select(frame["`words::id`"].alias("id"),
                                frame["`words::word`"].alias("word")).schema
    specs = {"tens": OutputSpec(f"file://{tmp_path}/tens", ("id", "tens"),
                                count_by=("parity",)),
             "words": OutputSpec(f"file://{tmp_path}/words", ("id", "word")),
             "tally": OutputSpec(None, total="weight")}
    done, jobs = jobs_of(spark, "routing-test", lambda: write_routed(
        frame, specs, token="t0ken", max_rows_per_file=20))
    assert jobs in (1, None)
    # each output's schema is its routed columns' schema, recorded in its FrameInfo
    assert done.schemas["tens"] == schema_tens and done.schemas["words"] == schema_words
    assert done.frames["tens"].schema_json == schema_tens.json()

    ids = list(range(n))
    want_tens = sorted((i, i // 10) for i in ids if i % 3 == 0)
    want_words = sorted((i, f"w{i}") for i in ids if i % 3 == 1)
    got_tens = sorted(map(tuple, read_frame(spark, done.frames["tens"], schema_tens).collect()))
    got_words = sorted(map(tuple, read_frame(spark, done.frames["words"],
                                             schema_words).collect()))
    assert got_tens == want_tens and got_words == want_words
    # every file under its own output's location, none larger than max_rows_per_file
    for name, want in (("tens", want_tens), ("words", want_words)):
        info = done.frames[name]
        assert all(f.path.startswith(f"file://{tmp_path}/{name}/part-") for f in info.files)
        assert all("t0ken" in f.path and 0 < f.rows <= 20 for f in info.files)
        assert info.rows == len(want) == done.rows(name)
        on_disk = sorted(p.name for p in (tmp_path / name).iterdir())
        assert on_disk == sorted(f.path.rsplit("/", 1)[1] for f in info.files)
    assert "tally" not in done.frames            # counted, not written
    assert done.rows("tally") == sum(1 for i in ids if i % 3 == 2)
    assert done.total("tally") == sum(i for i in ids if i % 3 == 2)
    parity = collections.Counter(str(i % 2) for i in ids if i % 3 == 0)
    assert {g[0]: c for g, (c, _) in done.counts["tens"].items()} == dict(parity)


def test_a_row_routed_to_an_undeclared_output_fails_the_write(spark, tmp_path):
    frame = routed_frame(spark, 10)
    specs = {"tens": OutputSpec(f"file://{tmp_path}/tens", ("id",)),
             "words": OutputSpec(f"file://{tmp_path}/words", ("id",))}   # no "tally"
    with pytest.raises(Exception) as info:
        write_routed(frame, specs)
    err = windowlib_error(info.value)
    assert err is not None and err.code == "OUTPUT_UNKNOWN" and "tally" in str(err)


def test_a_location_that_holds_files_is_refused(spark, tmp_path):
    (tmp_path / "tens").mkdir()
    (tmp_path / "tens" / "old.parquet").write_bytes(b"x")
    with pytest.raises(StateError) as info:
        write_routed(routed_frame(spark, 10), {
            "tens": OutputSpec(f"file://{tmp_path}/tens", ("id",)),
            "words": OutputSpec(None), "tally": OutputSpec(None)})
    assert info.value.code == "FRAME_EXISTS"


def test_run_outputs_have_the_columns_of_the_public_frames(spark):
    from windowlib.engines.spark.general import run_general
    from windowlib.runs.run_outputs import routed_frame
    from windowlib.runs.source import CORRUPT_COLUMN, ERROR_COLUMN, FILE_COLUMN, ROW_COLUMN

    p = (wl.Pipeline("routing_cols", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
         .allowed_lateness(wl.Time.minutes(5))
         .aggregate(agg.sum("value").alias("total"), agg.count()))
    df = spark.createDataFrame(
        [("a", 1_000, 1, 0, "f", 0, None, None)],
        f"key string, ts long, value long, arrival long, {FILE_COLUMN} string, "
        f"{ROW_COLUMN} long, {ERROR_COLUMN} string, {CORRUPT_COLUMN} string")
    run = run_general(p, df.drop(ERROR_COLUMN, CORRUPT_COLUMN), "arrival", emit_state=True,
                      persist=False)
    outputs = run.outputs("r1")
    routed, written = routed_frame(outputs, df, "ts")
    schemas = output_schemas(routed.schema, {n: OutputSpec(None, tuple(c))
                                             for n, c in written.items()})
    for name in ("firings", "late", "rejects", "side_outputs", "state"):
        frame = outputs.frame(name)
        assert written[name] == frame.columns, name
        assert [f.dataType for f in schemas[name].fields] == [
            f.dataType for f in frame.schema.fields], name


def test_a_nullable_output_records_every_column_nullable(spark, tmp_path):
    frame = routed_frame(spark, 9)
    assert not frame.schema["tens::id"].nullable        # spark.range's id is never null
    done = write_routed(frame, {"tens": OutputSpec(f"file://{tmp_path}/tens", ("id",),
                                                   nullable=True),
                                "words": OutputSpec(f"file://{tmp_path}/words", ("id",)),
                                "tally": OutputSpec(None)})
    assert done.schemas["tens"]["id"].nullable
    assert not done.schemas["words"]["id"].nullable

