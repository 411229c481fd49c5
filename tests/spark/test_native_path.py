"""The native Spark SQL path equals the reference engine and the general path.

Differential tests over random bundles with out-of-order, late, dropped and rejected data
(firings per key and window in order, late records and rejects), targeted cases for negative
timestamps and offsets, sliding windows, each aggregate and each accumulation mode, the public
frames of ``run_dataframe`` on both paths (same schema and rows), the planner (every
fallback reason), and both shapes of the default trigger's firings (``native_default``: the
plain aggregate plus a late-only scan, and the shared scan)."""

from __future__ import annotations

import os
import random
import re
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.jobs import spark_jobs
from windowlib.engines.spark.native import prepare_native
from windowlib.engines.spark.native_default import SHARED_SCAN_CONF
from windowlib.engines.spark.planner import plan_path
from windowlib.engines.spark.session import scoped_conf
from windowlib.engines.spark.testing import run_bundles_on_spark
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark

ALL_AGGS = (agg.count(), agg.count("v").alias("nv"), agg.sum("v").alias("s"),
            agg.min("v").alias("lo"), agg.max("v").alias("hi"), agg.mean("v").alias("avg"),
            agg.first("v").alias("fst"), agg.last("v").alias("lst"),
            agg.collect_list("v").alias("vals"), agg.approx_count_distinct("v").alias("nd"))
MODES = ("accumulating", "discarding", "accumulating_and_retracting")


def pipeline(assigner, lateness=0, mode=None, aggs=ALL_AGGS, keyed=True, trigger=None):
    p = wl.Pipeline("native_t", timestamp="ts")
    p = p.key_by("k").window(assigner) if keyed else p.window_all(assigner)
    if trigger is not None:
        p = p.trigger(trigger)
    p = p.allowed_lateness(lateness)
    if mode is not None:
        p = p.accumulation(mode)
    return p.aggregate(*aggs)


def by_window(firings):
    groups = defaultdict(list)
    for f in firings:
        groups[(f.get("k"), f["window_start"], f["window_end"])].append(f)
    return dict(groups)


def assert_same(p, bundles, finalize=False, watermark=None, general=False):
    want, want_late, want_rejects = run_bundles(p, bundles, engine="reference",
                                                finalize=finalize, watermark=watermark,
                                                with_late=True, with_rejects=True)
    paths = ("native", "general") if general else ("native",)
    for path in paths:
        got, late, rejects = run_bundles_on_spark(p, bundles, finalize=finalize,
                                                  watermark=watermark, path=path)
        assert by_window(got) == by_window(want), path
        key = repr
        assert sorted(late, key=key) == sorted(want_late, key=key), path
        assert rejects == want_rejects, path
    return want


# --- random bundles ---------------------------------------------------------------------------

def random_bundles(rng: random.Random, n_bundles: int, explicit_watermarks: bool) -> list:
    bundles, wm = [], -100
    for b in range(n_bundles):
        # one typed value up front, so every column has a type the aggregates accept
        elements = [] if b else [{"k": "a", "ts": rng.randint(-60, 120), "v": rng.randint(0, 9)}]
        for _ in range(rng.randint(0, 6)):
            roll = rng.random()
            ts = rng.randint(-60, 120)
            el = {"k": rng.choice(["a", "b"]), "ts": ts,
                  "v": None if roll < 0.1 else rng.randint(-5, 9)}
            if roll > 0.95:
                el["k"] = None                      # missing_key
            elif 0.9 < roll <= 0.95:
                el["ts"] = None                     # null_timestamp
            elements.append(el)
        wm += rng.randint(0, 50)
        bundles.append(Bundle(elements=elements, processing_time=1000 * (b + 1),
                              watermark=wm if explicit_watermarks else None))
    return bundles


ASSIGNERS = [wl.TumblingEventTimeWindows.of(20), wl.TumblingEventTimeWindows.of(30, -7),
             wl.SlidingEventTimeWindows.of(30, 10), wl.SlidingEventTimeWindows.of(30, 20, 3)]
EXAMPLES = int(os.environ.get("WINDOWLIB_NATIVE_EXAMPLES", "5"))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), assigner=st.sampled_from(ASSIGNERS),
       lateness=st.sampled_from([0, 15, 40]), mode=st.sampled_from(MODES),
       finalize=st.booleans(), explicit=st.booleans(), n_bundles=st.integers(1, 4),
       shared=st.booleans())
def test_native_equals_reference_on_random_bundles(spark, seed, assigner, lateness, mode,
                                                    finalize, explicit, n_bundles, shared):
    p = pipeline(assigner, lateness, mode)
    bundles = random_bundles(random.Random(seed), n_bundles, explicit)
    strategy = None if explicit else wl.BoundedOutOfOrderness(10)
    with shape(spark, shared):
        assert_same(p, bundles, finalize=finalize, watermark=strategy)


def shape(spark, shared: bool):
    """The block runs the default trigger's firings in the shared-scan shape or the plain
    one (forced: small test frames carry no footer estimate, so "auto" picks the plain)."""
    return scoped_conf(spark, {SHARED_SCAN_CONF: "true" if shared else "false"})


@pytest.mark.parametrize("shared", [False, True], ids=["plain", "shared_scan"])
def test_native_equals_general_and_reference_with_late_firings(spark, shared):
    rng = random.Random(7)
    bundles = random_bundles(rng, 5, explicit_watermarks=True)
    bundles.append(Bundle(elements=[{"k": "a", "ts": t, "v": t % 4} for t in (1, 5, 33, 2)],
                          watermark=400))
    for mode in MODES:
        p = pipeline(wl.SlidingEventTimeWindows.of(30, 10), 200, mode)
        with shape(spark, shared):
            want = assert_same(p, bundles, finalize=True, general=not shared)
        assert any(f["timing"] == "LATE" for f in want)


# --- targeted cases ---------------------------------------------------------------------------

def test_negative_timestamps_and_offsets_align_like_flink(spark):
    els = [{"k": "a", "ts": t, "v": t} for t in (-25, -21, -20, -1, 0, 3, 9, 10)]
    for assigner in (wl.TumblingEventTimeWindows.of(10, -3), wl.TumblingEventTimeWindows.of(7),
                     wl.SlidingEventTimeWindows.of(10, 4, -1)):
        want = assert_same(pipeline(assigner), [Bundle(elements=els)], finalize=True)
        assert any(f["window_start"] < 0 for f in want)


@pytest.mark.parametrize("shared", [False, True], ids=["plain", "shared_scan"])
def test_each_aggregate_in_each_mode_with_late_elements(spark, shared):
    bundles = [Bundle(elements=[{"k": "a", "ts": 5, "v": 3}, {"k": "a", "ts": 2, "v": 3},
                                {"k": "b", "ts": 7, "v": None}], watermark=30),
               Bundle(elements=[{"k": "a", "ts": 2, "v": 8}, {"k": "a", "ts": 9, "v": -1},
                                {"k": "b", "ts": 1, "v": 4}, {"k": "a", "ts": 5, "v": 3}],
                      watermark=35),
               Bundle(elements=[{"k": "a", "ts": 0, "v": 2}], watermark=60)]
    for mode in MODES:   # ALL_AGGS: every aggregate, compared column by column
        p = pipeline(wl.TumblingEventTimeWindows.of(10), 40, mode)
        with shape(spark, shared):
            want = assert_same(p, bundles)
        assert [f["timing"] for f in want if f["k"] == "a" and not f.get("retract")] == \
            ["ON_TIME", "LATE", "LATE", "LATE", "LATE"]


COUNT_TRIGGERS = [
    wl.EventTimeTrigger.after_end_of_window().with_early_trigger(wl.CountTrigger.at_least(2)),
    wl.EventTimeTrigger.after_end_of_window().with_late_trigger(wl.CountTrigger.at_least(2)),
    wl.EventTimeTrigger.after_end_of_window().with_early_trigger(wl.CountTrigger.of(3))
    .with_late_trigger(wl.CountTrigger.at_least(2)),
]


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), assigner=st.sampled_from(ASSIGNERS),
       trigger=st.sampled_from(COUNT_TRIGGERS), lateness=st.sampled_from([0, 30, 60]),
       mode=st.sampled_from(MODES), finalize=st.booleans())
def test_count_early_and_late_triggers_equal_reference(spark, seed, assigner, trigger,
                                                       lateness, mode, finalize):
    p = pipeline(assigner, lateness, mode, trigger=trigger)
    bundles = random_bundles(random.Random(seed), 4, explicit_watermarks=True)
    assert_same(p, bundles, finalize=finalize)


def test_count_triggers_in_every_mode_equal_general_and_reference(spark):
    bundles = [Bundle(elements=[{"k": "a", "ts": t, "v": t} for t in (1, 4, 2, 8, 3)],
                      watermark=5),
               Bundle(elements=[{"k": "a", "ts": t, "v": t} for t in (6, 0, 9)], watermark=12),
               Bundle(elements=[{"k": "a", "ts": t, "v": -t} for t in (7, 5, 1, 2, 3)],
                      watermark=14)]
    for trigger in COUNT_TRIGGERS:
        for mode in MODES:
            p = pipeline(wl.TumblingEventTimeWindows.of(10), 20, mode, trigger=trigger)
            want = assert_same(p, bundles, finalize=True, general=mode == MODES[2])
            assert {"EARLY", "LATE"} & {f["timing"] for f in want}


@pytest.mark.parametrize("shared", [False, True], ids=["plain", "shared_scan"])
def test_window_all_and_the_dsl_end_of_window_trigger(spark, shared):
    bundles = random_bundles(random.Random(3), 4, explicit_watermarks=True)
    with shape(spark, shared):
        assert_same(pipeline(wl.TumblingEventTimeWindows.of(20), 30, keyed=False), bundles,
                    finalize=True)
    assert_same(pipeline(wl.TumblingEventTimeWindows.of(20), 30,
                         trigger=wl.EventTimeTrigger.after_end_of_window()), bundles)


def test_future_timestamps_are_rejected_like_the_reference(spark):
    p = pipeline(wl.TumblingEventTimeWindows.of(10)).max_future_skew(100)
    bundles = [Bundle(elements=[{"k": "a", "ts": 50, "v": 1}, {"k": "a", "ts": 5000, "v": 2},
                                {"k": None, "ts": 1, "v": 3}], processing_time=1000),
               Bundle(elements=[{"k": "a", "ts": 1200, "v": 1}], processing_time=1000)]
    assert_same(p, bundles, finalize=True, watermark=wl.BoundedOutOfOrderness(0))


def test_public_frames_match_the_general_path(spark):
    p = pipeline(wl.SlidingEventTimeWindows.of(30, 10), 40, "accumulating_and_retracting")
    rows = []
    rng = random.Random(11)
    for i in range(60):
        rows.append((rng.choice(["a", "b", None]), rng.randint(-50, 150) if i % 17 else None,
                     rng.randint(0, 5), i // 12, i))
    df = spark.createDataFrame(rows, "k string, ts long, v long, arrival long, seq long")
    out = {}
    for path in ("native", "general"):
        result = run_dataframe(p, df, arrival="arrival", watermark=wl.BoundedOutOfOrderness(20),
                               finalize=True, order_by="seq", run_id="r1", path=path)
        assert result.path == path
        out[path] = result
    native, general = out["native"], out["general"]
    for name in ("firings", "late", "rejects"):
        a, b = getattr(native, name), getattr(general, name)
        assert [(f.name, f.dataType) for f in a.schema] == [(f.name, f.dataType)
                                                             for f in b.schema], name
        assert sorted(map(repr, a.collect())) == sorted(map(repr, b.collect())), name
    assert native.late.count() > 0 and native.rejects.count() > 0
    native.unpersist()
    general.unpersist()


@pytest.mark.parametrize("arrivals", [
    ["it's", "a\\b", "x\\'y -- z"],                 # quotes, backslashes, SQL comment text
    [-(2 ** 63), -1, 2 ** 63 - 1],                     # integer arrivals at the long limits
], ids=["odd_strings", "long_limits"])
def test_bundle_table_keeps_every_arrival_value_exactly(spark, arrivals):
    """The native path joins rows to an inline bundle table written as SQL text: arrival
    values that need escaping, and integers at the long limits, still find their bundle."""
    p = pipeline(wl.TumblingEventTimeWindows.of(20), 30, aggs=(agg.sum("v").alias("total"),
                                                               agg.count()))
    kind = "string" if isinstance(arrivals[0], str) else "long"
    rows = [("a", 5 * i, i, arrivals[i % 3], i) for i in range(30)]
    df = spark.createDataFrame(rows, f"k string, ts long, v long, arrival {kind}, seq long")
    out = {path: run_dataframe(p, df, arrival="arrival", watermark=wl.BoundedOutOfOrderness(3),
                               finalize=True, order_by="seq", path=path)
           for path in ("native", "general")}
    for name in ("firings", "late", "rejects"):
        a, b = (sorted(map(repr, getattr(out[path], name).collect()))
                for path in ("native", "general"))
        assert a == b, name
    assert out["native"].firings.count() > 0 and out["native"].late.count() > 0


# --- the planner ------------------------------------------------------------------------------

class Fn(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"n": len(elements)}


def test_planner_accepts_the_native_subset_and_names_every_fallback_reason():
    tumbling = wl.TumblingEventTimeWindows.of(10)
    assert plan_path(pipeline(tumbling, 5, "discarding")).path == "native"
    counted = wl.EventTimeTrigger.after_end_of_window().with_early_trigger(
        wl.CountTrigger.at_least(2)).with_late_trigger(wl.CountTrigger.of(3))
    assert plan_path(pipeline(tumbling, 5, trigger=counted)).path == "native"
    base = wl.Pipeline("p", timestamp="ts").key_by("k")
    cases = {
        "Python code (process)": base.window(tumbling).process(Fn()),
        "evictor": base.window(tumbling).evictor(wl.CountEvictor.of(2)).aggregate(agg.count()),
        "processing-time windows": base.window(
            wl.TumblingProcessingTimeWindows.of(10)).aggregate(agg.count()),
        "session windows": base.window(
            wl.EventTimeSessionWindows.with_gap(5)).aggregate(agg.count()),
        "GlobalWindows are not compiled": base.window(
            wl.GlobalWindows.create()).trigger(wl.CountTrigger.of(2)).aggregate(agg.count()),
        "is not compiled natively": base.window(tumbling).trigger(
            wl.ContinuousEventTimeTrigger.of(5)).aggregate(agg.count()),
        "fire_empty_on_time": base.window(tumbling).trigger(
            wl.EventTimeTrigger.after_end_of_window(fire_empty_on_time=True)
            .with_early_trigger(wl.CountTrigger.at_least(2)).discarding())
        .aggregate(agg.count()),
        "collide with output columns": base.window(tumbling).aggregate(
            agg.count().alias("timing")),
    }
    for needle, p in cases.items():
        choice = plan_path(p)
        assert choice.path == "general" and any(needle in r for r in choice.reasons), \
            (needle, choice)
    ok = pipeline(tumbling)
    assert "result_schema" in plan_path(ok, result_schema="n long").reasons[0]
    assert "mixed types" in plan_path(ok, json_columns=["v"]).reasons[0]
    from pyspark.sql import types as T

    assert "cannot be derived" in plan_path(
        ok, {"k": T.StringType(), "ts": T.LongType()}).reasons[0]
    assert "native path" in ok.explain()
    assert "why not native" in cases["evictor"].explain()


def test_forcing_native_on_an_unsupported_pipeline_is_a_clear_error(spark):
    p = (wl.Pipeline("p", timestamp="ts").key_by("k")
         .window(wl.EventTimeSessionWindows.with_gap(5)).aggregate(agg.count()))
    df = spark.createDataFrame([("a", 1, 0)], "k string, ts long, arrival long")
    with pytest.raises(wl.DefinitionError, match="session windows") as info:
        run_dataframe(p, df, arrival="arrival", path="native")
    assert info.value.code == "NATIVE_UNSUPPORTED"
    with pytest.raises(wl.DefinitionError, match="path must be"):
        run_dataframe(p, df, arrival="arrival", path="fast")
    # sessions with the default trigger: the pane path's session walker (one-shot runs)
    assert run_dataframe(p, df, arrival="arrival", finalize=True).path == "panes"


# --- the physical plan ------------------------------------------------------------------------

def test_default_trigger_plan_is_a_plain_aggregate_plus_a_late_only_branch(spark, tmp_path,
                                                                           capsys):
    """Structural (not timed): the default trigger's firings come from a plain hash aggregate
    per window (for fixed-width accumulators: no object hash aggregate, which falls back to
    sorting) joined by window (shuffled hash join, no sort-merge) with a branch of the late
    rows alone — the only window function and the only sort are there; bundle clocks come
    from ONE broadcast of the inline bundle table, which both branches read with the same
    columns (the clocks packed in one array), so Spark reuses it: writing the firings takes
    4 Spark jobs (the broadcast, the two shuffle-map stages, the result; 5 when each branch
    broadcast its own pruned table); nothing is generated per main row above the join; no job
    plans the bundles (Parquet footers). Also for sliding windows in retracting mode and for
    every declarative aggregate."""
    rows = [("a", t, t % 3, f"2024-03-01T0{t // 40}") for t in range(0, 120, 7)]
    spark.createDataFrame(rows, "k string, ts long, v long, arrival string").write \
        .partitionBy("arrival").parquet(str(tmp_path / "in"))
    df = spark.read.parquet(str(tmp_path / "in"))
    fixed = (agg.sum("v").alias("total"), agg.count(), agg.max("v").alias("peak"),
             agg.mean("v").alias("avg"))
    for assigner, mode, aggs in ((wl.TumblingEventTimeWindows.of(20), None, fixed),
                                 (wl.SlidingEventTimeWindows.of(30, 10), MODES[2], fixed),
                                 (wl.TumblingEventTimeWindows.of(20), MODES[1], ALL_AGGS)):
        p = pipeline(assigner, 50, mode, aggs=aggs)
        with shape(spark, False):
            result = run_dataframe(p, df, arrival="arrival",
                                   watermark=wl.BoundedOutOfOrderness(5), finalize=True,
                                   path="native")
        capsys.readouterr()
        result.firings.explain()
        plan = capsys.readouterr().out
        operators = [line.strip(" :+-") for line in plan.splitlines()]

        def count(name: str, operators: list[str] = operators) -> int:
            return sum(op.startswith(name) for op in operators)

        assert plan.count("FileScan") == 2, plan            # main + late-only branch
        assert result.native.plan_source == "parquet footers"      # and no plan job either
        assert count("ShuffledHashJoin") == 1 and "SortMergeJoin" not in plan, plan
        join = next(i for i, op in enumerate(operators) if op.startswith("ShuffledHashJoin"))
        above = operators[:join]
        assert not any(op.startswith(("Generate", "Window", "Sort")) for op in above), plan
        assert count("Window") == 1 and count("Sort ") == 1, plan   # the late rows only
        assert count("BroadcastHashJoin") == 2, plan
        # the local relations: the bundle table (also read by Spark's dynamic partition
        # pruning: arrival is the partition column), joined, and the run's clock arrays,
        # read by scalar subqueries only (native_parts.clocks_sql)
        tables = [re.sub(r"#\d+", "", op) for op in operators if op.startswith("LocalTableScan")]
        assert "LocalTableScan [__wl_arrival, __wl_clk]" in tables, plan
        assert all(t == "LocalTableScan [__wl_arrival, __wl_clk]"
                   or re.fullmatch(r"LocalTableScan \[array\([-\d, ]+\)\]", t)
                   for t in tables), plan
        if aggs is fixed:     # plain hash aggregates only
            assert count("ObjectHashAggregate") == 0 and count("HashAggregate") == 2, plan
        with spark_jobs(spark) as jobs:
            result.firings.write.format("noop").mode("overwrite").save()
        assert jobs.jobs is not None and jobs.jobs <= 4, jobs.stages
        assert result.firings.count() > 0


def _hourly_input(spark, root, keys_per_hour, rows_per_hour=400, hours=4):
    """Hourly arrival partitions written by Spark (as a lake's files usually are): event times
    spread over each hour, one row in ten from the hour before (late after the first hour);
    up to ``keys_per_hour`` distinct keys each hour."""
    rng = random.Random(keys_per_hour)
    hour = 3_600_000
    rows = [(f"user{rng.randrange(keys_per_hour):06d}",
             (h - (h > 0 and rng.random() < 0.1)) * hour + rng.randrange(hour),
             rng.randrange(100), f"2024-03-01T{h:02d}")
            for h in range(hours) for _ in range(rows_per_hour)]
    spark.createDataFrame(rows, "k string, ts long, v long, arrival string") \
        .repartition("arrival").write.partitionBy("arrival").parquet(str(root))
    return spark.read.parquet(str(root))


def test_auto_shares_the_scan_for_sparse_keys_and_not_for_dense_ones(spark, tmp_path):
    """The footers' key estimate decides (``prefers_shared_scan``): ~1 element per key and
    window shares the scan, ~30 per key and window does not."""
    p = pipeline(wl.TumblingEventTimeWindows.of(300_000), 600_000,
                 aggs=(agg.sum("v").alias("total"),))
    for keys, expected in ((100_000, True), (1, False)):
        df = _hourly_input(spark, tmp_path / f"k{keys}", keys)
        with scoped_conf(spark, {SHARED_SCAN_CONF: "auto"}):
            inputs = prepare_native(p, df, "arrival", watermark=wl.BoundedOutOfOrderness(5))
        assert inputs.plan_source == "parquet footers"
        assert inputs.parts.shared_scan is expected, keys


def test_the_shared_scan_reads_the_input_once(spark, tmp_path):
    """Structural (not timed): in the shared-scan shape both branches read ONE exchange of
    the kept rows by window (``ReusedExchange`` in the executed plan), so the input is scanned
    once; the main aggregate, the late rows' window functions and the join add no exchange;
    the firings equal the plain shape's."""
    df = _hourly_input(spark, tmp_path / "in", 100_000)
    p = pipeline(wl.TumblingEventTimeWindows.of(300_000), 3_600_000,
                 aggs=(agg.sum("v").alias("total"), agg.count()))
    runs = {}
    for shared in (False, True):
        with shape(spark, shared):
            result = run_dataframe(p, df, arrival="arrival", watermark=wl.BoundedOutOfOrderness(5),
                                   finalize=True, path="native")
            runs[shared] = sorted((r.asDict() for r in result.firings.collect()), key=repr)
        assert result.native.shape == ("shared scan" if shared else "partial aggregate")
        # the adaptive plan as it ran (its initial plan not included)
        plan = result.firings._jdf.queryExecution().executedPlan().executedPlan().toString()
        lines = plan.splitlines()
        scans = sum("FileScan parquet" in line for line in lines)
        reused = sum("ReusedExchange" in line and "BroadcastExchange" not in line
                     for line in lines)     # (the bundle table's broadcast is reused too)
        shuffles = sum(bool(re.search(r"[+-] Exchange (hashpartitioning|SinglePartition)", line))
                       for line in lines)
        if shared:      # one shuffle, written once and read by both branches
            assert (scans, shuffles, reused) == (1, 1, 1), plan
        else:           # each branch its own scan and shuffle
            assert (scans, shuffles, reused) == (2, 2, 0), plan
    assert runs[True] == runs[False]
    assert any(row["timing"] == "LATE" for row in runs[True]), "the input has late firings"
