"""Pane state in and out as a DataFrame (general path): splitting bundles into runs that hand
their state and clock to each other gives exactly the outputs of one run; idle keys pass
through unparsed; bad state fails with a code instead of being used."""

from __future__ import annotations

import random
import sys

import pytest
from pyspark import cloudpickle

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import StateError
from windowlib.core.loop import RunClock
from windowlib.engines.base import BundleTimes
from windowlib.engines.spark.errors import reraise
from windowlib.engines.spark.general import run_general
from windowlib.engines.spark.state import STATE_FORMAT_VERSION

pytestmark = pytest.mark.spark
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SCHEMA = "key string, ts long, value long, b long"
TAG = wl.OutputTag("big")


class Legs(wl.ProcessWindowFunction):
    """Uses every kind of state a checkpoint must carry: per-window, per-key, side outputs."""

    def process(self, key, context, elements):
        seen = context.global_state(wl.ValueStateDescriptor("seen", default=0))
        seen.update(seen.value() + len(elements))
        fired = context.window_state(wl.ValueStateDescriptor("fired", default=0))
        fired.update(fired.value() + 1)
        for e in elements:
            if e["value"] > 8:
                context.output(TAG, {"key": key, "value": e["value"]})
        yield {"n": len(elements), "seen": seen.value(), "fired": fired.value(),
               "pane": context.pane.index, "pane_timing": str(context.pane.timing)}


def pipelines() -> dict[str, wl.Pipeline]:
    base = wl.Pipeline("state_frames", timestamp="ts").key_by("key")
    early = (wl.EventTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.CountTrigger.at_least(2)))
    return {
        "tumbling_early_retracting": base.window(wl.TumblingEventTimeWindows.of(10_000))
        .trigger(early).allowed_lateness(20_000).accumulation("accumulating_and_retracting")
        .aggregate(agg.sum("value").alias("total"), agg.count()),
        "sessions_process_state": base.window(wl.EventTimeSessionWindows.with_gap(4_000))
        .allowed_lateness(15_000).process(Legs()),
        "sliding_default": base.window(wl.SlidingEventTimeWindows.of(10_000, 5_000))
        .allowed_lateness(5_000).aggregate(agg.max("value").alias("top"), agg.count()),
        "count_window_evictor": base.count_window(3, 2).process(Legs()),
        "processing_time": base.window(wl.TumblingProcessingTimeWindows.of(15_000))
        .aggregate(agg.sum("value").alias("total")),
    }


def rows_and_bundles(seed: int, n_bundles: int = 8) -> tuple[list[dict], dict]:
    rng = random.Random(seed)
    rows, times = [], {}
    for b in range(n_bundles):
        p = (b + 1) * 7_000
        times[b] = BundleTimes(processing_time=p, watermark=None)
        for _ in range(rng.randint(0, 7)):
            ts = p - rng.randint(-2_000, 25_000)
            rows.append({"key": rng.choice("abcd"), "ts": ts, "value": rng.randint(0, 10),
                         "b": b})
    rows.append({"key": None, "ts": 5, "value": 1, "b": 2})          # rejected: no key
    rows.append({"key": "z", "ts": None, "value": 1, "b": 3})        # rejected: no timestamp
    return rows, times


def run(spark, pipeline, rows, times, bundles, *, state=None, clock=None, emit_state=True,
        finalize=False):
    subset = [r for r in rows if r["b"] in bundles]
    df = spark.createDataFrame(subset, SCHEMA)
    overrides = {b: times[b] for b in bundles}
    general = run_general(pipeline, df, "b", overrides=overrides, state=state, clock=clock,
                          emit_state=emit_state, finalize=finalize, order_by="value",
                          watermark=wl.BoundedOutOfOrderness(3_000))
    return general


def outputs(general) -> tuple[list, list, list, list]:
    from pyspark.sql import functions as F

    tagged = general.tagged
    firings = tagged.filter(F.col("__wl_kind") == "firing").drop(
        "__wl_b", "__wl_phase", "__wl_sub", "__wl_n").collect()
    late = tagged.filter(F.col("__wl_kind") == "late").select(
        "__wl_element", "__wl_reason", "watermark").collect()
    rejects = tagged.filter(F.col("__wl_kind") == "reject").select(
        "__wl_element", "__wl_reason").collect()
    side = general.outputs(None).frame("side_outputs").collect()
    return tuple(_sorted(tuple(r) for r in rows) for rows in (firings, late, rejects, side))


def _sorted(rows) -> list:
    return sorted(rows, key=repr)


def materialize(spark, frame, tmp_path, name):
    """Cut the lineage the way a checkpoint does: write Parquet, read it back."""
    path = str(tmp_path / name)
    frame.write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def clock_after(general) -> RunClock:
    return general.plan.clock_after()


def state_of(general):
    return general.outputs(None).frame("state")


CASES = [(name, False) for name in sorted(pipelines())] + [
    ("sessions_process_state", True), ("count_window_evictor", True)]


@pytest.mark.parametrize(("name", "finalize"), CASES)
def test_runs_split_at_any_bundle_equal_one_run(spark, tmp_path, name, finalize):
    pipeline = pipelines()[name]
    rows, times = rows_and_bundles(seed=len(name))
    whole = run(spark, pipeline, rows, times, range(8), emit_state=False, finalize=finalize)
    expected = outputs(whole)
    assert expected[0], "the scenario must produce firings"
    rng = random.Random(name)
    cuts = sorted(rng.sample(range(1, 8), 2))
    state, clock, got = None, None, ([], [], [], [])
    for i, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, 8])):
        last = hi == 8
        part = run(spark, pipeline, rows, times, range(lo, hi), state=state, clock=clock,
                   finalize=finalize and last)
        got = tuple(_sorted(a + b) for a, b in zip(got, outputs(part)))
        state = materialize(spark, state_of(part), tmp_path, f"state{i}")
        clock = clock_after(part)
    assert got == expected


def test_counts_conserve_inputs_and_state_rows_match_live_keys(spark):
    pipeline = pipelines()["tumbling_early_retracting"]
    rows, times = rows_and_bundles(seed=3)
    general = run(spark, pipeline, rows, times, range(8))
    out = general.outputs(None)
    processed = out.frame("stats").groupBy().sum("processed").first()[0]
    late, rejects = out.frame("late").count(), out.frame("rejects").count()
    assert sum(general.plan.counts) == len(rows)
    assert processed + late + rejects == len(rows)
    assert rejects == 2
    state = out.frame("state").collect()
    assert len(state) > 0
    assert {r["format_version"] for r in state} == {STATE_FORMAT_VERSION}
    assert all(r["entries"] > 0 for r in state)


def test_idle_key_state_passes_through_unparsed(spark, tmp_path):
    pipeline = pipelines()["sessions_process_state"]
    rows = [{"key": "idle", "ts": 1_000, "value": 1, "b": 0},
            {"key": "busy", "ts": 1_000, "value": 1, "b": 0},
            {"key": "busy", "ts": 1_500, "value": 2, "b": 1}]
    times = {0: BundleTimes(1_000, 0), 1: BundleTimes(2_000, 100)}
    first = run(spark, pipeline, rows, times, [0])
    state = materialize(spark, state_of(first), tmp_path, "s0")
    before = {r["key"]: r["state"] for r in state.collect()}
    # the idle key's text is replaced by garbage: passing it through must not parse it
    from pyspark.sql import functions as F
    tampered = state.withColumn("state", F.when(F.col("key") == "idle", F.lit("not json"))
                                .otherwise(F.col("state")))
    second = run(spark, pipeline, rows, times, [1], state=tampered, clock=clock_after(first))
    after = {r["key"]: r["state"] for r in state_of(second).collect()}
    assert after["idle"] == "not json"
    assert after["busy"] != before["busy"]


def test_corrupt_state_of_a_key_with_work_fails_with_a_code(spark, tmp_path):
    from pyspark.sql import functions as F

    pipeline = pipelines()["sessions_process_state"]
    rows = [{"key": "a", "ts": 1_000, "value": 1, "b": 0},
            {"key": "a", "ts": 1_500, "value": 2, "b": 1}]
    times = {0: BundleTimes(1_000, 0), 1: BundleTimes(2_000, 100)}
    first = run(spark, pipeline, rows, times, [0])
    state = materialize(spark, state_of(first), tmp_path, "s0")
    for column, value, code in (("state", F.lit("{truncated"), "CHECKPOINT_CORRUPT"),
                                ("format_version", F.lit(99), "CHECKPOINT_FORMAT_UNSUPPORTED")):
        bad = state.withColumn(column, value.cast(state.schema[column].dataType))
        with pytest.raises(StateError) as info:
            try:       # the walk runs when its output is written (or the cache counted)
                run(spark, pipeline, rows, times, [1], state=bad,
                    clock=clock_after(first)).tagged.count()
            except Exception as exc:  # Spark task failure carrying the windowlib error
                reraise(exc)
        assert info.value.code == code


def test_state_with_other_key_types_is_refused_before_running(spark, tmp_path):
    pipeline = pipelines()["tumbling_early_retracting"]
    state = spark.createDataFrame(
        [], "key long, state string, next_event_timer long, next_processing_timer long, "
            "entries long, format_version int")
    rows, times = rows_and_bundles(seed=1)
    with pytest.raises(StateError) as info:
        run(spark, pipeline, rows, times, [0], state=state)
    assert info.value.code == "STATE_SCHEMA_MISMATCH"
    with pytest.raises(StateError) as info:
        run(spark, pipeline, rows, times, [0], state=state.drop("entries"))
    assert info.value.code == "CHECKPOINT_CORRUPT"
