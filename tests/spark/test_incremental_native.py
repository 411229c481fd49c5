"""Incremental runs on the native path (``engines/spark/native_incremental.py``): window state
in Spark SQL between runs must give exactly what the general path (the semantic core per key)
gives — firings, late rows, rejects, run figures and the final clock — for every
accumulation mode, tumbling and sliding windows, keyed and ``window_all``, over hourly runs,
a two-run grouping and a file that lands late in an old partition. And the path a checkpoint
was written with is kept: a first run picks it (the planner), later runs follow it, a
mismatch is refused with a clear code."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from clicks_lake import T0, arriving_rows, hour_value, write_arrivals

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import StateError
from windowlib.runs.incremental import open_checkpoint, run_incremental
from windowlib.runs.outputs import read_firings, read_late, read_rejects
from windowlib.runs.source import PartitionedSource

pytestmark = pytest.mark.spark

HOURS = 6
WATERMARK = wl.BoundedOutOfOrderness("10 minutes")
AGGS = (agg.sum("value").alias("total"), agg.count(), agg.max("value").alias("peak"),
        agg.min("value").alias("low"), agg.mean("value").alias("avg"),
        agg.first("value").alias("first_v"), agg.last("value").alias("last_v"),
        agg.approx_count_distinct("value").alias("distinct_v"))


def pipelines() -> dict[str, wl.Pipeline]:
    def base(name: str, keyed: bool = True) -> wl.Pipeline:
        p = wl.Pipeline(name, timestamp="ts")
        return p.key_by("key") if keyed else p

    return {
        "tumbling_accumulating": base("nat_tumbling").window(
            wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
        .allowed_lateness(wl.Time.hours(2)).aggregate(*AGGS),
        "sliding_retracting": base("nat_sliding").window(
            wl.SlidingEventTimeWindows.of(wl.Time.minutes(60), wl.Time.minutes(20)))
        .trigger(wl.EventTimeTrigger.after_end_of_window())
        .allowed_lateness(wl.Time.hours(1)).accumulation("accumulating_and_retracting")
        .aggregate(agg.sum("value").alias("total"), agg.count()),
        "tumbling_discarding_no_lateness": base("nat_discarding").window(
            wl.TumblingEventTimeWindows.of(wl.Time.minutes(20)))
        .accumulation("discarding").aggregate(agg.sum("value").alias("total"), agg.count(),
                                             agg.last("value").alias("last_v")),
        "window_all_discarding": base("nat_all", keyed=False).window_all(
            wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
        .allowed_lateness(wl.Time.hours(3)).accumulation("discarding")
        .aggregate(agg.sum("value").alias("total"), agg.count()),
        # early count firings: the count and the pane since the last firing span runs
        "tumbling_early_accumulating": base("nat_early_acc").window(
            wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
        .trigger(wl.EventTimeTrigger.after_end_of_window()
                 .with_early_trigger(wl.CountTrigger.at_least(3)))
        .allowed_lateness(wl.Time.hours(2)).aggregate(*AGGS),
        "sliding_early_discarding": base("nat_early_disc").window(
            wl.SlidingEventTimeWindows.of(wl.Time.minutes(60), wl.Time.minutes(20)))
        .trigger(wl.EventTimeTrigger.after_end_of_window()
                 .with_early_trigger(wl.CountTrigger.of(2)))
        .allowed_lateness(wl.Time.hours(1)).accumulation("discarding")
        .aggregate(agg.sum("value").alias("total"), agg.count(),
                   agg.first("value").alias("first_v"), agg.last("value").alias("last_v")),
    }


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """Six hourly partitions: out-of-order rows, rows late within and beyond the lateness,
    equal timestamps, a null key now and then; ``seq`` is the arrival order."""
    root = tmp_path_factory.mktemp("native_incremental")
    rng = random.Random(7)
    seq = 0
    for hour in range(HOURS):
        start = T0 + dt.timedelta(hours=hour)
        rows = arriving_rows(rng, start, seq, rng.randint(8, 12), "abc", on_time=0.6,
                             within=0.85, late=(-110, -20), beyond=(-300, -150))
        seq += len(rows)
        rows.append({"seq": seq, "key": rows[-1]["key"], "ts": rows[-1]["ts"], "value": 5})
        seq += 1
        if hour % 3 == 1:
            rows.append({"seq": seq, "key": None, "ts": start, "value": 1})
            seq += 1
        write_arrivals(root / "events", hour, rows)
    return root


def _hours(first: int, last: int) -> tuple[str, str]:
    return hour_value(first), hour_value(last)


def _late_file(lake, tag: str) -> None:
    """A correction lands in hour 4's partition: near the watermark (LATE firings) and far
    behind it (the late output)."""
    start = T0 + dt.timedelta(hours=4)
    rows = [{"seq": 10_000 + i, "key": "ab"[i % 2], "ts": start + dt.timedelta(minutes=m),
             "value": 3} for i, m in enumerate((10, 25, 40, -200))]
    write_arrivals(lake / "events", 4, rows, f"late-{tag}")


def _outputs(spark, output: str) -> dict:
    def rows(df):
        return sorted((tuple(r) for r in df.collect()), key=repr)

    return {"firings": rows(read_firings(output, spark=spark).drop("run_id")),
            "late": rows(read_late(output, spark=spark)),
            "rejects": rows(read_rejects(output, spark=spark))}


FIGURES = ("inputs", "processed", "late", "rejects", "firings", "firings_by_timing",
           "retractions", "watermark", "processing_time", "files_consumed")


def _runs(spark, lake, p, tag: str, path: str, groups) -> tuple[list, str, str]:
    src = PartitionedSource(f"file://{lake}/events", partition="arrival_hour",
                            order_by=["seq"])
    ck, out = f"file://{lake}/{tag}/ck", f"file://{lake}/{tag}/out"
    summaries = [run_incremental(p, src, ck, out, partitions=_hours(*g) if g else None,
                                 watermark=WATERMARK, spark=spark, path=path)
                 for g in groups]
    assert all(s.status == "published" and s.path == path for s in summaries), summaries
    return summaries, ck, out


@pytest.mark.parametrize("name", list(pipelines()))
def test_native_incremental_runs_equal_the_general_path(spark, lake, name):
    p = pipelines()[name]
    hourly = [(h, h) for h in range(HOURS)]
    got = {}
    for path in ("native", "general"):
        summaries, ck, out = _runs(spark, lake, p, f"{name}-{path}", path, hourly)
        _late_file(lake, f"{name}-{path}")            # lands after the hourly runs
        summaries.append(run_incremental(
            p, PartitionedSource(f"file://{lake}/events", partition="arrival_hour",
                                 order_by=["seq"]), ck, out, watermark=WATERMARK,
            spark=spark, path=path))
        (lake / "events" / f"arrival_hour={hour_value(4)}"
         / f"late-{name}-{path}.parquet").unlink()
        head = open_checkpoint(p, ck).latest()
        got[path] = (_outputs(spark, out),
                     [{k: s.to_dict()[k] for k in FIGURES} for s in summaries],
                     (head.watermark_ms, head.processing_time_ms, head.max_event_time_ms),
                     head.extra["state_kind"])
    native, general = got["native"], got["general"]
    assert native[0] == general[0]                    # every output, row for row
    assert native[1] == general[1]                    # every run's figures
    assert native[2] == general[2]                    # the final clock
    assert (native[3], general[3]) == ("native-windows", "general-keys")
    firings = native[0]["firings"]
    timings = {r[4] if not name.startswith("window_all") else r[3] for r in firings}
    assert "ON_TIME" in timings, timings
    if "early" in name:
        assert "EARLY" in timings, timings
    if name != "tumbling_discarding_no_lateness":     # no lateness, no LATE firing
        assert "LATE" in timings, timings
    assert native[0]["late"]                          # late rows beyond the lateness
    if not name.startswith("window_all"):
        assert native[0]["rejects"]                   # null keys
    assert all(s["inputs"] == s["processed"] + s["late"] + s["rejects"] for s in native[1])


def test_native_two_run_grouping_equals_hourly_runs(spark, lake):
    p = pipelines()["sliding_retracting"]     # early firings: test_incremental_native_early
    _, _, hourly = _runs(spark, lake, p, "group-hourly", "native",
                         [(h, h) for h in range(HOURS)])
    _, _, two = _runs(spark, lake, p, "group-two", "native", [(0, 2), (3, HOURS - 1)])
    assert _outputs(spark, two) == _outputs(spark, hourly)


def test_a_checkpoint_keeps_the_path_it_was_written_with(spark, lake):
    native_ok = pipelines()["tumbling_accumulating"]
    src = PartitionedSource(f"file://{lake}/events", partition="arrival_hour")
    # auto: the planner picks the native path for a first run ...
    fresh = run_incremental(native_ok, src, f"file://{lake}/auto/ck",
                            f"file://{lake}/auto/out", partitions=_hours(0, 0),
                            watermark=WATERMARK, spark=spark)
    assert fresh.path == "native"
    # ... a checkpoint written by the general path stays on it under auto
    _runs(spark, lake, native_ok, "keep", "general", [(0, 0)])
    ck2, out2 = f"file://{lake}/keep/ck", f"file://{lake}/keep/out"
    later = run_incremental(native_ok, src, ck2, out2, partitions=_hours(1, 1),
                            watermark=WATERMARK, spark=spark)
    assert later.path == "general"
    # insisting on the other path is refused, naming the way out
    with pytest.raises(StateError) as info:
        run_incremental(native_ok, src, ck2, out2, partitions=_hours(2, 2),
                        watermark=WATERMARK, spark=spark, path="native")
    assert info.value.code == "STATE_SCHEMA_MISMATCH" and "--rebuild" in str(info.value)
    # ... and the way out works as suggested: a rebuild on the insisted path
    assert "run_incremental(..., rebuild=True)` with path='native'" in str(info.value)
    switched = run_incremental(native_ok, src, ck2, out2, watermark=WATERMARK, spark=spark,
                               path="native", rebuild=True)
    assert switched.status == "rebuild published" and switched.path == "native"
    # a pipeline outside the native incremental subset (a late count trigger) runs generally
    counted = (wl.Pipeline("nat_counted", timestamp="ts").key_by("key")
               .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
               .trigger(wl.EventTimeTrigger.after_end_of_window()
                        .with_late_trigger(wl.CountTrigger.at_least(2)))
               .aggregate(agg.count()))
    s = run_incremental(counted, src, f"file://{lake}/counted/ck",
                        f"file://{lake}/counted/out", partitions=_hours(0, 0),
                        watermark=WATERMARK, spark=spark)
    assert s.path == "general"
