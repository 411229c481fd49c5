"""A small hourly incremental run's fixed cost, pinned structurally: the number of Spark jobs it
launches (each job pays Spark's scheduling latency; a count, unlike a timing, does not depend on
the machine's load). A warm native run — state from earlier runs, one new hourly partition —
plans its bundle from the Parquet footers the source reads anyway, and reads the state, runs
the pipeline and writes every staged output in one pass: at most 4 jobs."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable

import pytest
from clicks_lake import T0, hour_value, locations, write_partition

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.jobs import compiled_classes, spark_jobs
from windowlib.engines.spark.session import LOCAL_CONF
from windowlib.runs.incremental import open_checkpoint, run_incremental
from windowlib.runs.tables import spark_names
from windowlib.state.gc import collect

pytestmark = pytest.mark.spark

MAX_JOBS = 4


def native_pipeline(name: str = "clicks_jobs") -> wl.Pipeline:
    return (wl.Pipeline(name, timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
            .allowed_lateness(wl.Time.hours(3))
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def hour_rows(rng: random.Random, hour: int, n: int = 200) -> list[tuple]:
    start = T0 + dt.timedelta(hours=hour)
    return [(f"k{rng.randint(0, 40)}", start + dt.timedelta(minutes=rng.randint(-150, 59)),
             rng.randint(1, 9)) for _ in range(n)]


def test_a_warm_small_native_run_launches_at_most_four_spark_jobs(spark, tmp_path):
    rng = random.Random(16)
    for hour in range(3):
        write_partition(tmp_path / "events", hour, hour_rows(rng, hour))
    where = locations(tmp_path, "jobs")
    summaries, counts = [], []
    for hour in range(3):
        value = hour_value(hour)
        with spark_jobs(spark) as jobs:
            summaries.append(run_incremental(
                native_pipeline(), partitions=(value, value), spark=spark, path="native",
                watermark=wl.BoundedOutOfOrderness("10 minutes"), **where))
        counts.append(jobs)
    warm = summaries[-1]
    assert [s.status for s in summaries] == ["published"] * 3
    assert warm.path == "native" and warm.inputs == 200 and warm.state_rows > 0
    assert counts[-1].jobs is not None
    assert counts[-1].jobs <= MAX_JOBS, counts[-1].stages


def test_a_small_run_reads_and_writes_with_one_task_per_core_at_most(spark, tmp_path):
    """A small run's outputs are a few thousand rows: every writer task pays a Python worker
    round trip and writes a file per output, so a small run writes each output with at most
    one task per core (``defaultParallelism``). Its new rows stay in the tasks that read them
    (a shuffle spreading one file over more tasks first costs more than it spreads). Before:
    4 writer tasks (twice the cores) and the hour's file shuffled over 4 tasks. The state
    stays one file, so that the next run's job stays at three stages."""
    from windowlib.runs.protocol import CommitDetails

    rng = random.Random(61)
    for hour in range(3):
        write_partition(tmp_path / "events", hour, [
            (f"k{rng.randint(0, 400)}", T0 + dt.timedelta(hours=hour,
                                                          minutes=rng.randint(-150, 59)),
             rng.randint(1, 9)) for _ in range(800)])
    where = locations(tmp_path, "tasks")
    cores, partitions = spark.sparkContext.defaultParallelism, 4     # the local default
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))  # (the tests' session: 1)
    try:
        for hour in range(3):
            value = hour_value(hour)
            with spark_jobs(spark) as jobs:
                summary = run_incremental(
                    native_pipeline("clicks_tasks"), partitions=(value, value), spark=spark,
                    path="native", watermark=wl.BoundedOutOfOrderness("10 minutes"), **where)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert summary.status == "published" and summary.inputs == 800
    frames = CommitDetails.of(open_checkpoint(native_pipeline("clicks_tasks"),
                                              where["checkpoint"]).latest().extra).frames
    written = {name: len(frames[name]["files"]) for name in ("firings", "state")}
    assert summary.firings > 100 and summary.state_rows > 100
    assert 1 <= max(written.values()) <= cores, written
    # the run's one job: its last stage (the writer) has one task per core at most, and no
    # stage spreads the hour's one file over more tasks first (before: tasks [1, 4, 4, 1, 4,
    # 4]); the bound leaves room for two shuffle stages by window
    assert jobs.jobs == 1, jobs.stages
    assert jobs.tasks[0][-1] <= cores, jobs.tasks
    assert sum(jobs.tasks[0]) <= 2 + 2 * partitions + cores, jobs.tasks
    # the state is written as one file, as the hour's input is one: each is one partition,
    # so the next run joins them without an exchange, in three stages (``small_writer_tasks``:
    # a state of two files gave five, tasks [2, 1, 4, 1, 2], and every later run paid them)
    assert len(jobs.stages[0]) == 3, (jobs.stages, jobs.tasks)
    assert written["state"] == 1, written


def test_a_small_runs_writer_takes_its_rows_in_large_arrow_batches(spark, tmp_path):
    """The routed writer handles each Arrow batch at a cost (routes, counts, one Parquet row
    group per output file); Spark's batches of 10,000 rows made a warm hourly run's writer
    take ~90k rows in nine rounds. A small run's Python tasks take batches of up to
    ``SMALL_RUN_ARROW_ROWS``: a state file of 24,000 rows is one row group, not three."""
    import pyarrow.parquet as pq

    from windowlib.runs.protocol import CommitDetails
    from windowlib.runs.run_outputs import SMALL_RUN_ARROW_ROWS

    keys = 24_000
    assert 10_000 < keys <= SMALL_RUN_ARROW_ROWS
    write_partition(tmp_path / "events", 0, [
        (f"k{i}", T0 + dt.timedelta(minutes=i % 60), 1) for i in range(keys)])
    where, value = locations(tmp_path, "batches"), hour_value(0)
    summary = run_incremental(native_pipeline("clicks_batches"), partitions=(value, value),
                              spark=spark, path="native",
                              watermark=wl.BoundedOutOfOrderness("2 hours"), **where)
    assert summary.status == "published" and summary.state_rows == keys
    frames = CommitDetails.of(open_checkpoint(native_pipeline("clicks_batches"),
                                              where["checkpoint"]).latest().extra).frames
    files = [f["path"] for f in frames["state"]["files"]]
    rows_and_groups = [(pq.ParquetFile(p.removeprefix("file://")).metadata.num_rows,
                        pq.ParquetFile(p.removeprefix("file://")).metadata.num_row_groups)
                       for p in files]
    assert sum(rows for rows, _ in rows_and_groups) == keys
    big = [(rows, groups) for rows, groups in rows_and_groups if rows > 10_000]
    assert big and all(groups == 1 for _, groups in big), rows_and_groups


LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def _table_rows(rows) -> list[tuple]:
    return sorted((tuple(sorted(r.asDict().items())) for r in rows), key=repr)


def _delta_rows(output: str, name: str, version: int) -> list[tuple]:
    table = wl.open_table(output, name)
    table.load_as_version(version)
    rows = table.to_pyarrow_dataset().to_table().to_pylist()
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def test_a_late_run_launches_no_more_jobs_than_an_early_one(spark, tmp_path):
    """Per-run cost flat over history, structurally. Every publish names the output tables in
    Spark's catalog, and Spark lists a location of more files than its parallel listing
    threshold with a Spark job; here the threshold is 6 (default 32), so that growth would
    show within a few runs (firings: 1 file per run, late: 2). Publishes compact the tables'
    small files instead (one job, every few runs), and the tables keep showing exactly the
    current version's rows; time travel to a version before a compaction reads its rows."""
    rng = random.Random(48)
    hours = 8
    for hour in range(hours):
        late = [("k1", T0 + dt.timedelta(hours=hour - 5), 1)] * 3 if hour > 2 else []
        write_partition(tmp_path / "events", hour, [*hour_rows(rng, hour, 60), *late])
    where = locations(tmp_path, "flat")
    pipeline = native_pipeline("clicks_flat")
    before = spark.conf.get(LISTING_THRESHOLD)
    spark.conf.set(LISTING_THRESHOLD, "6")
    counts, files, at_3 = [], [], None
    try:
        for hour in range(hours):
            value = hour_value(hour)
            with spark_jobs(spark) as jobs:
                done = run_incremental(pipeline, partitions=(value, value), spark=spark,
                                       path="native",
                                       watermark=wl.BoundedOutOfOrderness("10 minutes"),
                                       **where)
            assert done.status == "published"
            counts.append(jobs.jobs)
            files.append({name: len(wl.open_table(where["output"], name).file_uris())
                          for name in ("firings", "late")})
            if done.version == 3:
                at_3 = _table_rows(wl.read_firings(where["output"], spark=spark).collect())
    finally:
        spark.conf.set(LISTING_THRESHOLD, before)
    # without compaction: [1, 1, 1, 1, 1, 1, 4, 5] (firings 8 files, late 9 at the end)
    assert max(counts[-3:]) <= max(counts[1:4]) <= 2, (counts, files)
    assert max(f["firings"] for f in files) <= 3 and max(f["late"] for f in files) <= 4, files
    # housekeeping keeps the merged files (they lie in a committed run's staging prefix)
    collect(open_checkpoint(pipeline, where["checkpoint"]), grace_seconds=0)
    names = spark_names(pipeline.name)
    for name, reader in (("firings", wl.read_firings), ("late", wl.read_late)):
        want = _table_rows(reader(where["output"], spark=spark).collect())
        assert want and _table_rows(spark.table(names[name]).collect()) == want
        compactions = [h["version"] for h in wl.open_table(where["output"], name).history()
                       if "windowlib.compacted" in h]
        assert compactions
        for version in compactions:     # each shows the rows of the version it replaced
            assert _delta_rows(where["output"], name, version) \
                == _delta_rows(where["output"], name, version - 1)
    latest = _table_rows(wl.read_latest(where["output"], spark=spark).collect())
    assert _table_rows(spark.table(names["latest"]).collect()) == latest
    assert at_3 and _table_rows(wl.read_table(where["output"], "firings", version=3,
                                              spark=spark).collect()) == at_3


def test_scoped_settings_are_restored_by_the_last_holder(spark):
    """``session.scoped_conf``: nested or concurrent holders share one scope; the first sets,
    the last restores (an unset setting is unset again)."""
    from windowlib.engines.spark.session import scoped_conf

    key, unset = "spark.sql.adaptive.enabled", "spark.windowlib.test.scoped"
    before = spark.conf.get(key)
    with scoped_conf(spark, {key: "false", unset: "x"}) as outer:
        with scoped_conf(spark, {key: "false", unset: "x"}) as inner:
            assert outer and inner and spark.conf.get(key) == "false"
        assert spark.conf.get(key) == "false" and spark.conf.get(unset) == "x"
    assert spark.conf.get(key) == before
    assert spark.conf.get(unset, None) is None


def _classes_compiled_per_run(spark, tmp_path, pipeline: wl.Pipeline, *, hours: int, seed: int,
                              before_run: Callable[[int], None] | None = None) -> list[int]:
    """Write ``hours`` hourly partitions, run ``pipeline`` natively once per hour (calling
    ``before_run(hour)`` first), and return how many generated classes each run compiled."""
    if compiled_classes(spark) is None:
        pytest.skip("codegen metrics: classic sessions only")
    rng = random.Random(seed)
    for hour in range(hours):
        write_partition(tmp_path / "events", hour, hour_rows(rng, hour))
    where = locations(tmp_path, "codegen")
    compiled = []
    for hour in range(hours):
        if before_run is not None:
            before_run(hour)
        value = hour_value(hour)
        with spark_jobs(spark) as count:
            done = run_incremental(pipeline, partitions=(value, value), spark=spark,
                                   path="native",
                                   watermark=wl.BoundedOutOfOrderness("10 minutes"), **where)
        assert done.status == "published" and done.inputs == 200
        compiled.append(count.compiled)
    return compiled


def test_a_warm_tiny_run_compiles_no_generated_code(spark, tmp_path, monkeypatch):
    """A tiny run (``run_outputs.INTERPRETED_RUN_ROWS``) evaluates its plan interpreted: a
    process's first runs compiled 20-50 classes (0.5-1 s on this machine; before the clocks
    left the generated code, every run did) for a few hundred rows. The same run above the
    threshold generates code: its classes were never compiled in the tiny runs before."""
    from windowlib.runs import run_outputs

    def before_run(hour: int) -> None:
        if hour == 3:       # the same pipeline, its run no longer tiny
            monkeypatch.setattr(run_outputs, "INTERPRETED_RUN_ROWS", 0)

    compiled = _classes_compiled_per_run(spark, tmp_path, native_pipeline("clicks_interpreted"),
                                         hours=4, seed=27, before_run=before_run)
    assert compiled[2] == 0 and compiled[3] > 0, compiled


@pytest.mark.parametrize("trigger", ["default", "early_count"])
def test_warm_runs_that_generate_code_reuse_the_classes_compiled_before(
        spark, tmp_path, monkeypatch, trigger):
    """A run above ``INTERPRETED_RUN_ROWS`` generates code, and Spark caches generated classes
    by their source text: the run's clocks (watermarks, processing times) reach the plan as
    data (a one-row subquery), not as literals written into the generated source, so a warm
    run of the same pipeline compiles nothing new (before: about twenty classes, 0.4-0.5 s,
    every run). The cache must hold a run's ~100 classes: Spark's default of 100, four LRU
    segments of 25, made every warm run of this test recompile 28 classes in a CI run (one
    segment overflowed), so windowlib's sessions keep 400 (``session.LOCAL_CONF``); a warm run
    may still recompile a few classes now and then (a segment's eviction is its own)."""
    from windowlib.runs import run_outputs

    assert spark.conf.get("spark.sql.codegen.cache.maxEntries") == \
        LOCAL_CONF["spark.sql.codegen.cache.maxEntries"]
    monkeypatch.setattr(run_outputs, "INTERPRETED_RUN_ROWS", -1)
    pipeline = native_pipeline(f"clicks_codegen_{trigger}")
    if trigger == "early_count":
        pipeline = pipeline.trigger(wl.EventTimeTrigger.after_end_of_window()
                                    .with_early_trigger(wl.CountTrigger.at_least(3)))
    compiled = _classes_compiled_per_run(spark, tmp_path, pipeline, hours=6, seed=28)
    assert compiled[0] > 0 and min(compiled[3:]) == 0 and max(compiled[3:]) < 10, compiled
