"""A small hourly incremental run's fixed cost, pinned structurally: the number of Spark jobs it
launches (each job pays Spark's scheduling latency; a count, unlike a timing, does not depend on
the machine's load). A warm native run — state from earlier runs, one new hourly partition —
plans its bundle from the Parquet footers the source reads anyway, and reads the state, runs
the pipeline and writes every staged output in one pass: at most 4 jobs."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from clicks_lake import T0, locations, write_partition

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.jobs import spark_jobs
from windowlib.runs.incremental import run_incremental

pytestmark = pytest.mark.spark

MAX_JOBS = 4


def native_pipeline() -> wl.Pipeline:
    return (wl.Pipeline("clicks_jobs", timestamp="ts").key_by("key")
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
        value = (T0 + dt.timedelta(hours=hour)).strftime("%Y-%m-%dT%H")
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
