"""Split-run equivalence through ``wl.run_incremental`` (SPEC §8: "processing partitions 1..N in
one run or in N runs yields the same firings").

48 hourly partitions of a few rows each (out-of-order rows, rows late within the allowed
lateness, rows beyond it, a reject) are processed once in ONE run (the baseline, computed once
per test process), and in groupings whose cut points Hypothesis draws — on the native path,
which the planner picks for this pipeline (early count firings) — and once in 48 runs (one per
partition) on the general path. Every way must give the same committed firings
(``wl.read_firings``, without ``run_id``), late rows and rejects, and the same final
checkpoint: watermark, processing time, largest event time and (on one path) the pane state of
every window.

Cost: one ``run_incremental`` costs a few Spark jobs (seconds on a loaded 2-core machine), so
the 48-run case runs once (marked ``slow``) and Hypothesis draws at most 5 cut points per
example with few examples: every example still covers all 48 partitions, with runs of 1 to 48
partitions each.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.runs.incremental import open_checkpoint

pytestmark = pytest.mark.spark

HOURS = 48
T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
SCHEMA = pa.schema([("seq", pa.int64()), ("key", pa.string()),
                    ("ts", pa.timestamp("ms", tz="UTC")), ("value", pa.int64())])
WATERMARK = wl.BoundedOutOfOrderness("10 minutes")


def pipeline() -> wl.Pipeline:
    return (wl.Pipeline("split_runs", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(2)))
            .allowed_lateness(wl.Time.hours(2))
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def part(hour: int) -> str:
    return (T0 + dt.timedelta(hours=hour)).strftime("%Y-%m-%dT%H")


def hour_rows(rng: random.Random, hour: int) -> list[dict]:
    """3-4 rows arriving in ``hour``: mostly on time but out of order, some late within the
    2 h lateness, some beyond it (once the watermark has moved), now and then a null key."""
    start = T0 + dt.timedelta(hours=hour)
    rows = []
    for _ in range(rng.randint(3, 4)):
        u = rng.random()
        if u < 0.6:
            minutes = rng.randint(-5, 59)          # on time, out of order
        elif u < 0.85:
            minutes = rng.randint(-110, -20)       # late, within allowed lateness
        else:
            minutes = rng.randint(-300, -160)      # beyond it
        rows.append({"key": rng.choice("ab"), "ts": start + dt.timedelta(minutes=minutes),
                     "value": rng.randint(1, 9)})
    if hour % 11 == 5:
        rows.append({"key": None, "ts": start, "value": 1})     # a reject
    return rows


@pytest.fixture(scope="session")   # once per worker: the two tests may be scheduled apart
def lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("splits")
    rng = random.Random(48)
    seq = 0
    for hour in range(HOURS):
        rows = hour_rows(rng, hour)
        for r in rows:
            r["seq"], seq = seq, seq + 1
        folder = root / "events" / f"arrival_hour={part(hour)}"
        folder.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / "part-0.parquet")
    return root


def run_grouped(spark, lake, tag: str, cuts: list[int], path: str = "auto") -> dict:
    """Process the 48 partitions in runs split before each hour in ``cuts`` (on ``path``: the
    planner picks the native path, whose window state carries the early count); return what
    a consumer and the next run see."""
    loc = {"source": wl.PartitionedSource(f"file://{lake}/events", partition="arrival_hour",
                                          order_by=["seq"]),
           "checkpoint": f"file://{lake}/{tag}/checkpoints",
           "output": f"file://{lake}/{tag}/windows"}
    bounds = [0, *sorted(set(cuts)), HOURS]
    inputs = 0
    for first, nxt in itertools.pairwise(bounds):
        summary = wl.run_incremental(pipeline(), partitions=(part(first), part(nxt - 1)),
                                     watermark=WATERMARK, spark=spark, path=path, **loc)
        assert summary.status == "published", summary
        assert summary.path == ("native" if path == "auto" else path)
        assert summary.inputs == summary.processed + summary.late + summary.rejects
        inputs += summary.inputs
    return {"inputs": inputs, **observed(spark, pipeline(), loc)}


def observed(spark, p: wl.Pipeline, loc: dict) -> dict:
    def rows(frame) -> list:
        return sorted((tuple(r) for r in frame.drop("run_id").collect()), key=repr)

    out = loc["output"]
    head = open_checkpoint(p, loc["checkpoint"]).latest()
    state_info = head.extra["frames"]["state"]
    from pyspark.sql.types import StructType

    from windowlib.runs.frames import FrameInfo, read_frame
    state = read_frame(spark, FrameInfo.from_dict(state_info),
                       StructType.fromJson(head.extra["state_schema"]))
    return {"firings": rows(wl.read_firings(out, spark=spark)),
            "late": rows(wl.read_late(out, spark=spark)),
            "rejects": rows(wl.read_rejects(out, spark=spark)),
            "clock": (head.watermark_ms, head.processing_time_ms, head.max_event_time_ms),
            "state": sorted((tuple(_canonical(k, v) for k, v in r.asDict().items())
                             for r in state.collect()), key=repr)}


def _canonical(column: str, value):
    """The general path's per-key snapshot is JSON: compared as data, not as text."""
    return json.dumps(json.loads(value), sort_keys=True) if column == "state" else value


@pytest.fixture(scope="session")
def one_run(spark, lake):
    result = run_grouped(spark, lake, "one", [])
    # the data exercises what the property is about
    firings = wl.read_firings(f"file://{lake}/one/windows", spark=spark)
    timings = {r["timing"] for r in firings.select("timing").collect()}
    assert timings == {"EARLY", "ON_TIME", "LATE"}
    assert result["late"] and result["rejects"] and result["state"]
    written = sum(pq.read_metadata(f).num_rows for f in (lake / "events").rglob("*.parquet"))
    assert result["inputs"] == written
    return result


@pytest.mark.slow
def test_forty_eight_hourly_runs_equal_one_run(spark, lake, one_run):
    """On the general path (the core's per-key snapshot carried through 48 generations; a
    tiny run costs less there than on the native path, whose state the cut points below
    check): the outputs and the clock of the native path's one run."""
    hourly = run_grouped(spark, lake, "hourly", list(range(1, HOURS)), path="general")
    for name in ("inputs", "firings", "late", "rejects", "clock"):
        assert hourly[name] == one_run[name], name
    assert hourly["state"], "the general path's per-key state"


_counter = iter(range(10_000))


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(1, HOURS - 1), min_size=1, max_size=5, unique=True))
def test_any_grouping_of_partitions_into_runs_equals_one_run(spark, lake, one_run, cuts):
    assert run_grouped(spark, lake, f"cut{next(_counter)}", cuts) == one_run
