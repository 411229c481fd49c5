"""The Spark general path equals the reference engine (firings per key and window in order,
late records, rejects) over pipelines that cover every part of the model and bundles with
out-of-order, late and rejected data, empty bundles and explicit times."""

from __future__ import annotations

import datetime as dt
import random
import sys
from collections import defaultdict

import pytest
from pyspark import cloudpickle

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# --- functions used by the pipelines ------------------------------------------------------------

class Collect(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        pane = context.pane
        yield {"values": [e["value"] for e in elements], "index": pane.index,
               "pane_timing": str(pane.timing), "first": pane.is_first, "last": pane.is_last,
               "wm": context.current_watermark, "pt": context.current_processing_time,
               "key_seen": key}


class TypedCollect(wl.ProcessWindowFunction):
    """Declared result columns, a typed side output and an untyped one."""

    result_schema = "values array<long>, total double, index long, key_seen string"
    high = wl.OutputTag("high", schema="key string, value long, window_end long")

    def process(self, key, context, elements):
        for e in elements:
            if e["value"] > 15:
                context.output(self.high, {"key": key, "value": e["value"],
                                           "window_end": context.window.end})
        context.output("panes", (key, context.pane.index, str(context.pane.timing)))
        yield {"values": [e["value"] for e in elements],
               "total": sum(e["value"] for e in elements), "index": context.pane.index,
               "key_seen": key}


class Stateful(wl.ProcessWindowFunction):
    """Per-window and per-key state, as a process function sees it."""

    seen = wl.ValueStateDescriptor("seen", default=0)
    total = wl.ValueStateDescriptor("total", default=0)

    def process(self, key, context, elements):
        w = context.window_state(self.seen)
        g = context.global_state(self.total)
        w.update(w.value() + 1)
        g.update(g.value() + len(elements))
        yield {"n": len(elements), "firings_of_window": w.value(), "key_total": g.value()}


class Explode(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        for pos, e in enumerate(elements):
            yield {"value": e["value"], "pos": pos, "ts": e["ts"]}


class Average(wl.AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, acc):
        return [acc[0] + value["value"], acc[1] + 1]

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]

    def get_result(self, acc):
        return {"avg": acc[0] / acc[1] if acc[1] else None}


class WithMax(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        for e in elements:
            yield {"best": e, "end": context.window.end}


def add_values(a, b):
    return {**a, "value": a["value"] + b["value"]}


def delta(a, b):
    return abs(a["value"] - b["value"])


def concat(acc, row):
    return {"text": acc["text"] + str(row["value"])}


def count_with_window(key, window, elements):
    return [{"n": len(list(elements)), "start": window.start, "key_seen": key}]


class Marker(wl.Trigger):
    def on_element(self, element, timestamp, window, ctx):
        if element.get("value", 0) > 15:
            return wl.TriggerResult.FIRE_AND_PURGE
        ctx.register_event_time_timer(window.max_timestamp)
        return wl.TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return wl.TriggerResult.FIRE if time == window.max_timestamp else \
            wl.TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return wl.TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp)

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp)


# --- pipelines ----------------------------------------------------------------------------------

def P(name: str = "p") -> wl.Pipeline:
    return wl.Pipeline(name, timestamp="ts").key_by("key")


PIPELINES = {
    "tumbling_sum_default_trigger": lambda: P().window(wl.TumblingEventTimeWindows.of(10))
    .allowed_lateness(15).aggregate(agg.sum("value").alias("total"), agg.count()),
    "tumbling_negative_offset_all_declaratives": lambda: P()
    .window(wl.TumblingEventTimeWindows.of(10, -3)).allowed_lateness(5)
    .aggregate(agg.count(), agg.sum("value"), agg.min("value"), agg.max("value"),
               agg.mean("value"), agg.first("value"), agg.last("value"),
               agg.approx_count_distinct("value"), agg.collect_list("value")),
    "sliding_collect": lambda: P().window(wl.SlidingEventTimeWindows.of(20, 5))
    .allowed_lateness(10).process(Collect()),
    "sessions_count": lambda: P().window(wl.EventTimeSessionWindows.with_gap(6))
    .allowed_lateness(8).aggregate(agg.count(), agg.collect_list("value")),
    "sessions_retracting_collect": lambda: P().window(wl.EventTimeSessionWindows.with_gap(5))
    .allowed_lateness(30).accumulation("accumulating_and_retracting").process(Collect()),
    "sessions_custom_trigger": lambda: P().window(wl.EventTimeSessionWindows.with_gap(4))
    .trigger(Marker()).allowed_lateness(5).reduce(add_values),
    "global_count_window": lambda: P().count_window(3).process(Collect()),
    "global_sliding_count_window": lambda: P().count_window(4, 2).aggregate(agg.sum("value")),
    "global_never_finalized_only": lambda: P().window(wl.GlobalWindows.create())
    .aggregate(agg.count()),
    "count_evictor_before": lambda: P().window(wl.TumblingEventTimeWindows.of(20))
    .evictor(wl.CountEvictor.of(2)).allowed_lateness(10).process(Explode()),
    "time_evictor_after": lambda: P().window(wl.TumblingEventTimeWindows.of(20))
    .trigger(wl.CountTrigger.of(3)).evictor(wl.TimeEvictor.of(4, do_evict_after=True))
    .process(Explode()),
    "delta_evictor_reduce": lambda: P().window(wl.SlidingEventTimeWindows.of(30, 10))
    .evictor(wl.DeltaEvictor.of(8, delta)).reduce(add_values),
    "dsl_early_late_discarding": lambda: P().window(wl.TumblingEventTimeWindows.of(10))
    .trigger(wl.EventTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.CountTrigger.at_least(2))
             .with_late_trigger(wl.CountTrigger.at_least(1)).discarding())
    .allowed_lateness(20).aggregate(agg.sum("value").alias("value")),
    "dsl_all_any_fire_empty": lambda: P().window(wl.TumblingEventTimeWindows.of(15))
    .trigger(wl.EventTimeTrigger.after_end_of_window(fire_empty_on_time=True)
             .with_early_trigger(wl.Any(wl.All(wl.CountTrigger.at_least(2),
                                               wl.EventTimeTrigger.after_first_element(3)),
                                        wl.CountTrigger.at_least(4))))
    .allowed_lateness(10).process(Collect()),
    "dsl_after_first_element_retracting": lambda: P()
    .window(wl.TumblingEventTimeWindows.of(20))
    .trigger(wl.EventTimeTrigger.after_first_element(4).accumulating_and_retracting())
    .allowed_lateness(10).aggregate(agg.count(), agg.sum("value")),
    "continuous_event_time": lambda: P().window(wl.TumblingEventTimeWindows.of(30))
    .trigger(wl.ContinuousEventTimeTrigger.of(7)).aggregate(agg.max("value")),
    "purging_delta_trigger": lambda: P().window(wl.TumblingEventTimeWindows.of(25))
    .trigger(wl.PurgingTrigger.of(wl.DeltaTrigger.of(10, delta))).fold({"text": ""}, concat),
    "processing_time_tumbling": lambda: P().window(wl.TumblingProcessingTimeWindows.of(20))
    .aggregate(agg.count(), agg.sum("value")),
    "processing_time_sessions": lambda: P()
    .window(wl.ProcessingTimeSessionWindows.with_gap(12)).process(Explode()),
    "continuous_processing_time": lambda: P().window(wl.TumblingEventTimeWindows.of(40))
    .trigger(wl.ContinuousProcessingTimeTrigger.of(9)).allowed_lateness(10)
    .apply(count_with_window),
    "processing_after_end_with_early": lambda: P()
    .window(wl.SlidingProcessingTimeWindows.of(30, 15))
    .trigger(wl.ProcessingTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.ProcessingTimeTrigger.after_first_element(5)))
    .reduce(add_values, WithMax()),
    "aggregate_fn_with_process": lambda: P().window(wl.TumblingEventTimeWindows.of(10))
    .allowed_lateness(10).aggregate(Average(), WithMax()),
    "typed_process_with_side_outputs": lambda: P().window(wl.SlidingEventTimeWindows.of(20, 10))
    .trigger(wl.EventTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.CountTrigger.at_least(3)))
    .allowed_lateness(15).process(TypedCollect()),
    "stateful_process": lambda: P().window(wl.SlidingEventTimeWindows.of(20, 10))
    .trigger(wl.EventTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.CountTrigger.at_least(3)))
    .allowed_lateness(15).process(Stateful()),
    "window_all_reduce": lambda: wl.Pipeline("p", timestamp="ts")
    .window_all(wl.TumblingEventTimeWindows.of(10)).allowed_lateness(5).reduce(add_values),
    "window_all_count_window_process": lambda: wl.Pipeline("p", timestamp="ts")
    .count_window_all(4).process(Collect()),
}


def make_bundles(seed: int, keys=("a", "b", "c"), n_bundles: int = 7, per_bundle: int = 9,
                 processing_times: bool = True) -> list[Bundle]:
    """Out-of-order and late data, rejects, an empty bundle, explicit watermarks."""
    rng = random.Random(seed)
    bundles, t = [], 0
    for b in range(n_bundles):
        rows = []
        for _ in range(rng.randint(0, per_bundle)):
            t += rng.randint(0, 4)
            ts = t - rng.choice([0, 0, 0, 1, 3, 8, 20, 45])
            rows.append({"key": rng.choice(keys), "ts": ts, "value": rng.randint(-5, 20)})
        if rng.random() < 0.3:
            rows.insert(rng.randint(0, len(rows)), {"key": "a", "ts": None, "value": 1})
        if rng.random() < 0.3:
            rows.insert(rng.randint(0, len(rows)), {"key": None, "ts": t, "value": 2})
        pt = 10 * b + rng.randint(0, 9) if processing_times or rng.random() < 0.5 else None
        if pt is not None and rng.random() < 0.2:
            rows.append({"key": "b", "ts": pt + 86_400_001, "value": 3})   # future
        wm = t - rng.randint(0, 10) if rng.random() < 0.25 else None
        bundles.append(Bundle(rows, processing_time=pt, watermark=wm))
        if b == 2:
            bundles.append(Bundle([], processing_time=None if pt is None else pt + 5,
                                  watermark=t - 5))
    return bundles


def grouped(firings: list[dict], keys: tuple) -> dict:
    out: dict = defaultdict(list)
    for f in firings:
        out[(tuple(f.get(k) for k in keys), f["window_start"], f["window_end"])].append(f)
    return dict(out)


def assert_same(pipeline: wl.Pipeline, bundles: list[Bundle], finalize: bool,
                watermark=None) -> tuple:
    kwargs = dict(finalize=finalize, with_late=True, with_rejects=True, watermark=watermark,
                  with_side_outputs=True)
    ref = run_bundles(pipeline, bundles, engine="reference", **kwargs)
    got = run_bundles(pipeline, bundles, engine="spark", **kwargs)
    keys = pipeline.key_columns
    assert grouped(got[0], keys) == grouped(ref[0], keys)
    assert sorted(map(repr, got[0])) == sorted(map(repr, ref[0]))
    assert got[1] == ref[1]
    assert got[2] == ref[2]
    # side outputs: the same values per tag (order across keys is not part of the contract)
    assert {t: sorted(map(repr, v)) for t, v in got[3].items()} == \
        {t: sorted(map(repr, v)) for t, v in ref[3].items()}
    return ref


@pytest.mark.parametrize("name", list(PIPELINES))
def test_general_path_equals_reference(spark, name):
    pipeline = PIPELINES[name]()
    seed = sum(map(ord, name))
    ref = assert_same(pipeline, make_bundles(seed), finalize=True,
                      watermark=wl.BoundedOutOfOrderness(4))
    assert ref[0], "the case should fire something"
    # every other event-time case also runs unfinalized, on bundles without processing times
    if pipeline.window_assigner.is_event_time and list(PIPELINES).index(name) % 2 == 0:
        assert_same(pipeline, make_bundles(seed + 1, processing_times=False), finalize=False)


def test_multiple_key_columns_and_processing_time_lag(spark):
    p = (wl.Pipeline("p", timestamp="ts").key_by("user", "kind")
         .window(wl.TumblingEventTimeWindows.of(10)).allowed_lateness(5)
         .aggregate(agg.sum("value"), agg.collect_list("kind")))
    rng = random.Random(3)
    bundles = [Bundle([{"user": rng.choice(["u1", "u2"]), "kind": rng.choice([1, 2, None]),
                        "ts": 10 * b + rng.randint(-15, 9), "value": rng.random()}
                       for _ in range(8)], processing_time=10 * b + 12) for b in range(6)]
    assert_same(p, bundles, finalize=True, watermark=wl.ProcessingTimeLag(7))


def test_datetime_event_times_take_the_timestamp_column_path(spark):
    base = dt.datetime(2024, 3, 10, 12, 0)
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5))).allowed_lateness("5 min")
         .aggregate(agg.count(), agg.min("ts"), agg.last("value")))
    rows = [{"key": k, "ts": base + dt.timedelta(seconds=s, microseconds=us), "value": s}
            for k, s, us in [("a", 10, 999), ("b", 290, 1), ("a", 301, 0), ("a", 5, 500),
                             ("b", 1000, 0), ("a", 20, 0)]]
    bundles = [Bundle(rows[:3]), Bundle([*rows[3:], {"key": "a", "ts": None, "value": 0}]),
               Bundle([rows[0]])]
    assert_same(p, bundles, finalize=True)


def test_mixed_and_unusual_values_reach_the_driver_as_written(spark):
    """Timestamps of several types (ISO strings, invalid, absent), absent keys and values of
    mixed types take the JSON columns of the test harness and still equal the reference."""
    p = P().window(wl.TumblingEventTimeWindows.of(10)).allowed_lateness(5).process(Collect())
    bundles = [
        Bundle([{"key": "a", "ts": 1, "value": 1}, {"key": "a", "ts": "1970-01-01T00:00:00.004Z",
                                                    "value": 2.5},
                {"key": "a", "ts": "yesterday", "value": 3}, {"key": "a", "value": 4},
                {"ts": 3, "value": 5}, {"key": ("t", 1), "ts": 2, "value": [1, 2]},
                "not a row", {"key": "b", "ts": 5.0, "value": {"x": 1}},
                {"key": "b", "ts": 5.5, "value": 1}, {"key": "b", "ts": True, "value": 1}],
               processing_time=0),
        Bundle([{"key": "a", "ts": 12, "value": None, "extra": "e"},
                {"key": "a", "ts": 10**12, "value": 1}], processing_time=5, watermark=20),
        Bundle([{"key": "a", "ts": 2, "value": 9}]),
    ]
    ref = assert_same(p, bundles, finalize=True)
    assert [r["reason"] for r in ref[2]] == [
        "invalid_timestamp", "missing_timestamp", "missing_key", "schema_mismatch",
        "invalid_timestamp", "invalid_timestamp", "future_timestamp"]


def test_no_rows_at_all_still_moves_time(spark):
    p = P().window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count())
    assert run_bundles(p, [Bundle([]), Bundle([], watermark=100)], engine="spark",
                       finalize=True) == []


def test_reserved_result_column_is_the_same_error(spark):
    class Bad(wl.ProcessWindowFunction):
        def process(self, key, context, elements):
            yield {"timing": "mine"}

    p = P().window(wl.TumblingEventTimeWindows.of(10)).process(Bad())
    with pytest.raises(wl.ExecutionError) as info:
        run_bundles(p, [Bundle([{"key": "a", "ts": 1, "value": 1}], watermark=20)],
                    engine="spark")
    assert info.value.code == "RESULT_COLUMN_CONFLICT"


def test_processing_time_windows_without_processing_time_is_the_same_error(spark):
    p = P().window(wl.TumblingProcessingTimeWindows.of(10)).aggregate(agg.count())
    with pytest.raises(wl.InputError) as info:
        run_bundles(p, [Bundle([{"key": "a", "ts": 1}])], engine="spark")
    assert info.value.code == "NO_PROCESSING_TIME"


def test_finalize_processing_timers_do_not_depend_on_other_keys(spark):
    p = (P().window(wl.TumblingEventTimeWindows.of(40))
         .trigger(wl.ContinuousProcessingTimeTrigger.of(9)).aggregate(agg.count()))
    bundles = [Bundle([{"key": "a", "ts": 1}, {"key": "b", "ts": 1}], processing_time=1)]
    timings = {f["key"]: f["timing"] for f in run_bundles(p, bundles, finalize=True)}
    assert timings["a"] == timings["b"]
    assert_same(p, bundles, finalize=True)
