"""Snapshots are the checkpoint boundary (SPEC §8): stopping after any bundle, writing the state
as plain JSON and resuming in a new engine changes nothing.

The property: for a random pipeline and random bundles, running bundles 1..N in one
``ReferenceEngine`` equals running 1..k, ``snapshot()`` -> ``json.dumps`` -> ``json.loads``,
then a NEW engine built from that snapshot running k+1..N (and ``finish()`` when finalizing):
the same firings, late records and rejects. The resumed engine gets a freshly compiled copy of
the pipeline (``fresh``), as a new process would.

Firings are compared per key, in order: SPEC §9 promises "the same order per key and window".
The order *across* keys is pinned by the tests at the end (keys due at the same time fire in
key order, also across a restore).

The strategies ``pipelines()`` and ``bundle_lists()`` are reused by
``test_bundling_invariance.py``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import operator
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.triggers import DslTrigger
from windowlib.engines.reference import SNAPSHOT_FORMAT_VERSION, ReferenceEngine
from windowlib.testing import Bundle

pytestmark = pytest.mark.unit

KEYS = ("a", "b", "c")
EXAMPLES = settings(max_examples=200, deadline=None)


# --- user functions the random pipelines use (module level: stable fingerprints) -------------

SEEN = wl.ValueStateDescriptor("seen", default=0)
FIRES = wl.ValueStateDescriptor("fires", default=0)
FIRES_MERGING = wl.ReducingStateDescriptor("fires", operator.add)


def add_values(a: dict, b: dict) -> dict:
    """A reduce function over rows."""
    return {"value": a["value"] + b["value"], "ts": max(a["ts"], b["ts"])}


def value_delta(a: dict, b: dict) -> float:
    return abs(a["value"] - b["value"])


@dataclasses.dataclass(frozen=True)
class SpanAggregate(wl.AggregateFunction):
    """An AggregateFunction whose accumulator is a (nested) tuple, not JSON's list."""

    def create_accumulator(self) -> tuple:
        return (0, 0, None)

    def add(self, value: dict, acc: tuple) -> tuple:
        n, total, span = acc
        ts = value["ts"]
        span = (ts, ts) if span is None else (min(span[0], ts), max(span[1], ts))
        return (n + 1, total + value["value"], span)

    def merge(self, a: tuple, b: tuple) -> tuple:
        if a[2] is None:
            return (a[0] + b[0], a[1] + b[1], b[2])
        if b[2] is None:
            return (a[0] + b[0], a[1] + b[1], a[2])
        return (a[0] + b[0], a[1] + b[1], (min(a[2][0], b[2][0]), max(a[2][1], b[2][1])))

    def get_result(self, acc: tuple) -> dict:
        return {"n": acc[0], "total": acc[1], "span": acc[2]}


@dataclasses.dataclass(frozen=True)
class PaneFn(wl.ProcessWindowFunction):
    """Yields the FLIP-2 pane facts, a per-key (global) ValueState counter and a per-window
    firing counter: a ValueState, or for merging windows a ReducingState (ValueState cannot
    merge; merged sessions sum their counters)."""

    merging: bool = False

    def process(self, key: Any, context: wl.Context, elements: list) -> Any:
        seen = context.global_state(SEEN)
        seen.update(seen.value() + len(elements))
        row = {"idx": context.pane.index, "when": context.pane.timing.value,
               "first": context.pane.is_first, "last": context.pane.is_last,
               "n": len(elements), "total": sum(e.get("value") or 0 for e in elements),
               "seen": seen.value()}
        if self.merging:
            fires = context.window_state(FIRES_MERGING)
            fires.add(1)
            row["fires"] = fires.get()
        else:
            fires = context.window_state(FIRES)
            fires.update(fires.value() + 1)
            row["fires"] = fires.value()
        yield row


DECLARATIVE = [agg.count(), agg.sum("value").alias("total"), agg.min("value"), agg.max("value"),
               agg.mean("value"), agg.first("value"), agg.last("value"),
               agg.collect_list("value"), agg.approx_count_distinct("value")]


# --- strategies -------------------------------------------------------------------------------

def _count_triggers(draw: Any) -> wl.Trigger:
    n = draw(st.integers(1, 4))
    return draw(st.sampled_from([
        wl.CountTrigger.of(n), wl.PurgingTrigger.of(wl.CountTrigger.of(n)),
        wl.CountTrigger.at_least(n)]))


def _early(draw: Any, timers: str) -> wl.Trigger | None:
    n, m = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    options: list[wl.Trigger | None] = [
        None, wl.CountTrigger.at_least(n),
        wl.All(wl.CountTrigger.at_least(n), wl.CountTrigger.at_least(m))]
    if timers != "window_end":
        delay = draw(st.integers(0, 20))
        options += [wl.EventTimeTrigger.after_first_element(delay),
                    wl.Any(wl.CountTrigger.at_least(n),
                           wl.EventTimeTrigger.after_first_element(delay))]
    if timers == "any":
        options.append(wl.Any(wl.CountTrigger.at_least(n),
                              wl.ProcessingTimeTrigger.after_first_element(draw(
                                  st.integers(0, 50)))))
    return draw(st.sampled_from(options))


def _event_trigger(draw: Any, merging: bool, timers: str) -> wl.Trigger | None:
    kind = draw(st.sampled_from(["default", "count", "dsl", "dsl", "dsl", "purging_event", "any"]
                                + ([] if timers == "window_end" else ["continuous"])
                                + ([] if merging else ["delta"])))
    n = draw(st.integers(1, 4))
    if kind == "default":
        return None
    if kind == "count":
        return _count_triggers(draw)
    if kind == "purging_event":
        return wl.PurgingTrigger.of(wl.EventTimeTrigger.create())
    if kind == "continuous":
        return wl.ContinuousEventTimeTrigger.of(draw(st.integers(3, 25)))
    if kind == "delta":
        return wl.DeltaTrigger.of(draw(st.integers(2, 8)), value_delta)
    if kind == "any":
        return wl.Any(wl.CountTrigger.at_least(n),
                      wl.CountTrigger.at_least(draw(st.integers(1, 4))))
    trigger = wl.EventTimeTrigger.after_end_of_window(fire_empty_on_time=draw(st.booleans()))
    early = _early(draw, timers)
    if early is not None:
        trigger = trigger.with_early_trigger(early)
    lates: list[wl.Trigger | None] = [
        None, wl.CountTrigger.at_least(n),
        wl.Any(wl.CountTrigger.at_least(n), wl.CountTrigger.at_least(n + 1))]
    if timers != "window_end":
        lates.append(wl.EventTimeTrigger.after_first_element(draw(st.integers(0, 20))))
    late = draw(st.sampled_from(lates))
    if late is not None:
        trigger = trigger.with_late_trigger(late)
    return trigger


def _processing_trigger(draw: Any) -> wl.Trigger | None:
    n = draw(st.integers(1, 4))
    return draw(st.sampled_from([
        None, wl.CountTrigger.of(n), wl.PurgingTrigger.of(wl.CountTrigger.of(n)),
        wl.ContinuousProcessingTimeTrigger.of(draw(st.integers(5, 40))),
        wl.ProcessingTimeTrigger.after_end_of_window().with_early_trigger(
            wl.CountTrigger.at_least(n))]))


def _time_window(draw: Any, event_time: bool) -> wl.WindowAssigner:
    size = draw(st.integers(5, 40))
    kind = draw(st.sampled_from(["tumbling", "sliding", "session"]))
    if kind == "tumbling":
        cls = wl.TumblingEventTimeWindows if event_time else wl.TumblingProcessingTimeWindows
        return cls.of(size, draw(st.integers(-size + 1, size - 1)))
    if kind == "sliding":
        slide = draw(st.integers(1, size))
        cls = wl.SlidingEventTimeWindows if event_time else wl.SlidingProcessingTimeWindows
        return cls.of(size, slide, draw(st.integers(-slide + 1, slide - 1)))
    cls = wl.EventTimeSessionWindows if event_time else wl.ProcessingTimeSessionWindows
    return cls.with_gap(draw(st.integers(3, 30)))


@st.composite
def pipelines(draw: Any, processing_time: bool = True, timers: str = "any") -> wl.Pipeline:
    """Random pipelines over rows ``{"key", "ts", "value"}``.

    ``processing_time=False`` leaves out processing-time assigners. ``timers`` narrows the
    triggers: ``"any"``; ``"event"`` (no processing-time timers); ``"window_end"`` (event-time
    timers only at window ends and cleanup: no continuous or after-first-element triggers).
    """
    shapes = ["event", "event", "event", "global", "count_window"]
    if processing_time:
        shapes.append("processing")
    shape = draw(st.sampled_from(shapes))
    base = wl.Pipeline("prop", timestamp="ts")
    keyed = draw(st.integers(0, 5)) > 0
    base = base.key_by("key") if keyed else base
    merging = False
    if shape == "count_window":
        size = draw(st.integers(1, 4))
        slide = draw(st.one_of(st.none(), st.integers(1, 4)))
        p = base.count_window(size, slide) if keyed else base.count_window_all(size, slide)
        trigger = None
    else:
        if shape == "global":
            assigner: wl.WindowAssigner = wl.GlobalWindows.create()
            trigger = _count_triggers(draw)
        elif shape == "event":
            assigner = _time_window(draw, event_time=True)
            merging = assigner.is_merging
            trigger = _event_trigger(draw, merging, timers)
        else:
            assigner = _time_window(draw, event_time=False)
            merging = assigner.is_merging
            trigger = _processing_trigger(draw)
        p = base.window(assigner) if keyed else base.window_all(assigner)
    mode = draw(st.sampled_from([None, "accumulating", "discarding",
                                 "accumulating_and_retracting"]))
    if mode is not None and isinstance(trigger, DslTrigger) \
            and draw(st.booleans()):
        trigger = getattr(trigger, mode)()
    elif mode is not None:
        p = p.accumulation(mode)
    if trigger is not None:
        p = p.trigger(trigger)
    if shape != "count_window":
        after = draw(st.booleans())
        evictor = draw(st.sampled_from([
            None, None, wl.CountEvictor.of(draw(st.integers(1, 3)), after),
            wl.TimeEvictor.of(draw(st.integers(0, 15)), after),
            wl.DeltaEvictor.of(draw(st.integers(3, 10)), value_delta, after)]))
        if evictor is not None:
            p = p.evictor(evictor)
    p = p.allowed_lateness(draw(st.sampled_from([0, 0, 7, 30, 60])))
    function = draw(st.sampled_from(["declarative", "reduce", "aggregate", "aggregate_process",
                                     "process"]))
    if function == "declarative":
        aggs = draw(st.lists(st.sampled_from(DECLARATIVE), min_size=1, max_size=3,
                             unique_by=lambda a: a.name))
        return p.aggregate(*aggs)
    if function == "reduce":
        return p.reduce(add_values)
    if function == "aggregate":
        return p.aggregate(SpanAggregate())
    if function == "aggregate_process":
        return p.aggregate(SpanAggregate(), PaneFn(merging=merging))
    return p.process(PaneFn(merging=merging))


def _rows(draw: Any, keys: tuple[str, ...], now: int, with_processing_time: bool
          ) -> list[dict]:
    good = st.builds(lambda k, t, v: {"key": k, "ts": t, "value": v},
                     st.sampled_from(keys), st.integers(now - 40, now + 25), st.integers(-5, 20))
    bad = st.sampled_from([{"key": "a", "ts": None, "value": 1}, {"ts": 3, "value": 1},
                           {"key": "b", "ts": 10**12, "value": 1}])
    row = st.one_of(good, good, good, good, good, good, good, bad) if with_processing_time \
        else good
    size = draw(st.integers(0, 8))  # uniform sizes: st.lists alone favours short lists
    return draw(st.lists(row, min_size=size, max_size=size))


@st.composite
def bundle_lists(draw: Any, processing_time: bool = False, max_bundles: int = 6
                 ) -> list[Bundle]:
    """Up to ``max_bundles`` bundles of up to 8 rows over one to three keys.

    Event time drifts forward from -40 by up to 30 ms per bundle; rows scatter around it
    (out of order, some behind the watermark, a few bad rows). Each bundle has an explicit
    watermark near the drift, or ``None`` (the strategy decides), and a processing time —
    always when ``processing_time=True`` (processing-time windows need one), else sometimes.
    """
    keys = draw(st.sampled_from([KEYS[:1], KEYS[:2], KEYS]))
    now = -40
    bundles = []
    for _ in range(draw(st.integers(1, max_bundles))):
        now += draw(st.integers(0, 30))
        p_time = draw(st.integers(0, 300) if processing_time
                      else st.one_of(st.none(), st.integers(0, 300)))
        watermark = draw(st.one_of(st.none(), st.integers(now - 40, now + 10)))
        bundles.append(Bundle(elements=tuple(_rows(draw, keys, now, p_time is not None)),
                              processing_time=p_time, watermark=watermark))
    return bundles


# --- helpers ----------------------------------------------------------------------------------

def fresh(p: wl.Pipeline) -> wl.Pipeline:
    """An equal pipeline with new function objects and its own compiled logic (what a new
    process would hold)."""
    return dataclasses.replace(copy.deepcopy(p), _compiled=[])


def needs_processing_time(p: wl.Pipeline) -> bool:
    return not p.window_assigner.is_event_time


def feed(engine: ReferenceEngine, bundles: Sequence[Bundle]) -> ReferenceEngine:
    for b in bundles:
        engine.process_bundle(b.elements, processing_time=b.processing_time,
                              watermark=b.watermark)
    return engine


def outputs(*engines: ReferenceEngine) -> tuple[list, list, list]:
    """Firings, late records (row, watermark met) and rejects, concatenated over engines."""
    firings, late, rejects = [], [], []
    for e in engines:
        firings += e.sink.firings
        late += e.sink.late
        rejects += e.rejects
    return firings, late, rejects


def per_key(p: wl.Pipeline, firings: list[dict]) -> dict[tuple, list[dict]]:
    """Firings grouped by key, each group in emission order (what SPEC §9 promises)."""
    out: dict[tuple, list[dict]] = {}
    for row in firings:
        out.setdefault(tuple(row[c] for c in p.key_columns), []).append(row)
    return out


def roundtrip(snapshot: dict) -> dict:
    return json.loads(json.dumps(snapshot))


def run_whole(p: wl.Pipeline, bundles: Sequence[Bundle], finalize: bool) -> ReferenceEngine:
    engine = feed(ReferenceEngine(p), bundles)
    if finalize:
        engine.finish()
    return engine


def run_resumed(p: wl.Pipeline, bundles: Sequence[Bundle], k: int, finalize: bool
                ) -> tuple[ReferenceEngine, ReferenceEngine]:
    first = feed(ReferenceEngine(p), bundles[:k])
    second = feed(ReferenceEngine(fresh(p), snapshot=roundtrip(first.snapshot())), bundles[k:])
    if finalize:
        second.finish()
    return first, second


# --- the property -----------------------------------------------------------------------------

@EXAMPLES
@given(p=pipelines(), data=st.data())
def test_stopping_after_any_bundle_and_resuming_from_the_json_snapshot_changes_nothing(p, data):
    bundles = data.draw(bundle_lists(processing_time=needs_processing_time(p)), label="bundles")
    k = data.draw(st.integers(0, len(bundles)), label="k")
    finalize = data.draw(st.booleans(), label="finalize")

    whole = outputs(run_whole(p, bundles, finalize))
    resumed = outputs(*run_resumed(p, bundles, k, finalize))

    assert per_key(p, resumed[0]) == per_key(p, whole[0])
    assert len(resumed[0]) == len(whole[0])
    assert resumed[1] == whole[1], "late records"
    assert resumed[2] == whole[2], "rejects"


@EXAMPLES
@given(p=pipelines(), data=st.data())
def test_snapshot_is_plain_json_and_a_restored_engine_snapshots_the_identical_dict(p, data):
    bundles = data.draw(bundle_lists(processing_time=needs_processing_time(p)), label="bundles")
    engine = feed(ReferenceEngine(p), bundles)
    snapshot = engine.snapshot()
    text = json.dumps(snapshot, allow_nan=False)  # no pickles, objects, NaN or Infinity
    assert json.loads(text) == snapshot
    restored = ReferenceEngine(fresh(p), snapshot=json.loads(text))
    assert restored.snapshot() == snapshot
    assert json.dumps(restored.snapshot()) == text


def test_resuming_from_a_snapshot_taken_before_any_bundle_equals_a_fresh_start():
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count()))
    snapshot = roundtrip(ReferenceEngine(p).snapshot())
    assert snapshot["keys"] == [] and snapshot["format_version"] == SNAPSHOT_FORMAT_VERSION
    engine = feed(ReferenceEngine(p, snapshot=snapshot),
                  [Bundle([{"key": "a", "ts": 3}], watermark=100)])
    assert [(r["window_start"], r["count"]) for r in engine.sink.firings] == [(0, 1)]


def test_a_window_that_fired_on_time_before_the_snapshot_fires_late_after_it():
    """The ON_TIME flag is state: a late-phase timer at the window's end after a restore is a
    LATE firing, not a second ON_TIME one (found by mutating the restore; rare at random)."""
    p = (wl.Pipeline("p", timestamp="ts").window_all(wl.TumblingEventTimeWindows.of(5))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_late_trigger(wl.EventTimeTrigger.after_first_element(0)))
         .allowed_lateness(7).aggregate(agg.count()))
    bundles = [Bundle([{"ts": -5}]), Bundle([{"ts": 0}]), Bundle([{"ts": -1}])]
    first, second = run_resumed(p, bundles, 2, finalize=False)
    assert [(r["window_start"], r["timing"], r["count"]) for r in first.sink.firings] == \
        [(-5, "ON_TIME", 1)]
    assert [(r["window_start"], r["pane_index"], r["timing"], r["count"])
            for r in second.sink.firings] == [(-5, 1, "LATE", 2)]


def test_tuple_accumulators_come_back_as_tuples():
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(SpanAggregate()))
    engine = feed(ReferenceEngine(p), [Bundle([{"key": "a", "ts": 3, "value": 2},
                                               {"key": "a", "ts": 5, "value": 4}], watermark=0)])
    restored = ReferenceEngine(fresh(p), snapshot=roundtrip(engine.snapshot()))
    assert restored.drivers[("a",)].contents[wl.TimeWindow(0, 10)] == (2, 6, (3, 5))


# --- unhappy paths ----------------------------------------------------------------------------

def tumbling_count(name: str = "p", size: int = 10) -> wl.Pipeline:
    return (wl.Pipeline(name, timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(size))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(5)))
            .allowed_lateness(20).aggregate(agg.count(), agg.collect_list("value")))


def mid_run_snapshot(p: wl.Pipeline) -> dict:
    engine = feed(ReferenceEngine(p), [Bundle([{"key": "a", "ts": 3, "value": 1},
                                               {"key": "b", "ts": 14, "value": 2}],
                                              watermark=0)])
    return roundtrip(engine.snapshot())


def restore_error(p: wl.Pipeline, snapshot: Any) -> wl.StateError:
    with pytest.raises(wl.StateError) as info:
        ReferenceEngine(p, snapshot=snapshot)
    return info.value


@pytest.mark.parametrize("other", [
    tumbling_count(size=20),
    tumbling_count().allowed_lateness(0),
    tumbling_count().accumulation("discarding"),
    (wl.Pipeline("p", timestamp="ts").key_by("key").window(wl.TumblingEventTimeWindows.of(10))
     .aggregate(agg.count())),
], ids=["window", "lateness", "accumulation", "trigger_and_function"])
def test_a_snapshot_of_another_pipeline_definition_is_refused_with_fingerprint_mismatch(other):
    assert restore_error(other, mid_run_snapshot(tumbling_count())).code == \
        "FINGERPRINT_MISMATCH"


def test_the_same_definition_under_another_builder_call_order_restores():
    p = tumbling_count()
    same = (wl.Pipeline("p", timestamp="ts").key_by("key").allowed_lateness(20)
            .aggregate(agg.count(), agg.collect_list("value"))
            .window(wl.TumblingEventTimeWindows.of(10))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(5))))
    ReferenceEngine(same, snapshot=mid_run_snapshot(p))


@pytest.mark.parametrize("version", [99, 0, None, "1"])
def test_an_unknown_format_version_is_refused_with_snapshot_version(version):
    snapshot = mid_run_snapshot(tumbling_count())
    snapshot["format_version"] = version
    assert restore_error(tumbling_count(), snapshot).code == "SNAPSHOT_VERSION"


def _drop(path: tuple) -> Any:
    def corrupt(s: dict) -> None:
        target = s
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]
    return corrupt


def _set(path: tuple, value: Any) -> Any:
    def corrupt(s: dict) -> None:
        target = s
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
    return corrupt


CORRUPTIONS = {
    "no_watermark": _drop(("watermark",)),
    "no_keys": _drop(("keys",)),
    "watermark_not_a_number": _set(("watermark",), "soon"),
    "key_entry_without_state": _set(("keys", 0), [["a"]]),
    "key_state_without_timers": _drop(("keys", 0, 1, "timers")),
    "key_state_without_windows": _drop(("keys", 0, 1, "windows")),
    "key_state_without_global": _drop(("keys", 0, 1, "global")),
    "key_state_is_a_list": _set(("keys", 0, 1), []),
    "window_record_without_pane_index": _drop(("keys", 0, 1, "windows", 0, 2, "pane")),
    "window_entry_truncated": _set(("keys", 0, 1, "windows", 0), [[0, 10]]),
    "window_bounds_not_numbers": _set(("keys", 0, 1, "windows", 0, 0), ["x", "y"]),
    "contents_entry_truncated": _set(("keys", 0, 1, "contents", 0), [[0, 10]]),
    "timer_domain_unknown": _set(("keys", 0, 1, "timers", 0, 0), "wall_clock"),
    "timer_entry_truncated": _set(("keys", 0, 1, "timers", 0), ["event", 9]),
    "tagged_value_without_payload": _set(("keys", 0, 1, "global"), {"$t": "tuple"}),
    "tagged_value_unknown_tag": _set(("keys", 0, 1, "global"), {"$t": "pickle", "v": "gASV"}),
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_a_truncated_or_garbled_snapshot_is_refused_with_snapshot_corrupt(corrupt):
    snapshot = mid_run_snapshot(tumbling_count())
    assert snapshot["keys"][0][1]["windows"] and snapshot["keys"][0][1]["timers"]
    corrupt(snapshot)
    assert restore_error(tumbling_count(), snapshot).code == "SNAPSHOT_CORRUPT"


@pytest.mark.parametrize("garbage", [[], "format_version=1"], ids=["list", "string"])
def test_a_snapshot_that_is_not_a_json_object_is_refused_with_snapshot_corrupt(garbage):
    assert restore_error(tumbling_count(), garbage).code == "SNAPSHOT_CORRUPT"


class Opaque:
    """Not plain data."""


class OpaqueAccumulator(wl.AggregateFunction):
    def create_accumulator(self) -> Any:
        return Opaque()

    def add(self, value: dict, acc: Any) -> Any:
        return acc

    def merge(self, a: Any, b: Any) -> Any:
        return a

    def get_result(self, acc: Any) -> dict:
        return {"n": 0}


def test_an_accumulator_that_is_not_plain_data_fails_at_snapshot_time_naming_its_type():
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(OpaqueAccumulator()))
    engine = feed(ReferenceEngine(p), [Bundle([{"key": "a", "ts": 1}], watermark=0)])
    with pytest.raises(wl.StateError) as info:
        engine.snapshot()
    assert info.value.code == "SNAPSHOT_UNSERIALIZABLE"
    assert "Opaque" in str(info.value)


def test_window_state_that_is_not_plain_data_fails_at_snapshot_time():
    class KeepsAnObject(wl.ProcessWindowFunction):
        def process(self, key, context, elements):
            context.window_state(wl.ValueStateDescriptor("x")).update(object())
            return [{"n": len(elements)}]

    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).allowed_lateness(50)
         .process(KeepsAnObject()))
    engine = feed(ReferenceEngine(p), [Bundle([{"key": "a", "ts": 1}], watermark=20)])
    with pytest.raises(wl.StateError) as info:
        engine.snapshot()
    assert info.value.code == "SNAPSHOT_UNSERIALIZABLE"


# --- regressions: restores into a new process -------------------------------------------------

class PlainPaneCount(wl.ProcessWindowFunction):
    """A ProcessWindowFunction written the ordinary way (no __repr__, not a dataclass)."""

    def process(self, key, context, elements):
        yield {"n": len(elements)}


def test_a_pipeline_rebuilt_with_a_new_function_instance_restores_the_snapshot():
    """A new process builds new function objects; their default repr() holds a memory address
    and must not reach the fingerprint."""
    def build() -> wl.Pipeline:
        return (wl.Pipeline("p", timestamp="ts").key_by("key")
                .window(wl.TumblingEventTimeWindows.of(10)).process(PlainPaneCount()))

    snapshot = roundtrip(feed(ReferenceEngine(build()),
                              [Bundle([{"key": "a", "ts": 1}], watermark=0)]).snapshot())
    ReferenceEngine(build(), snapshot=snapshot)


FIRED = wl.ReducingStateDescriptor("fired", operator.add)


@dataclasses.dataclass(frozen=True)
class CountsFirings(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        state = context.window_state(FIRED)
        state.add(1)
        yield {"n": len(elements), "fired": state.get()}


def test_sessions_that_merge_right_after_a_restore_merge_their_window_state():
    """Per-window state of two fired sessions bridged by an element after the restore is
    merged with its descriptor (1 + 1, then this firing: 3), as in an uninterrupted run."""
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.EventTimeSessionWindows.with_gap(10))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_early_trigger(wl.CountTrigger.at_least(1)))
         .process(CountsFirings()))
    bundles = [Bundle([{"key": "a", "ts": 0}, {"key": "a", "ts": 15}], watermark=-100),
               Bundle([{"key": "a", "ts": 8}], watermark=-100)]  # bridges [0,10) and [15,25)
    whole = outputs(run_whole(p, bundles, finalize=False))[0]
    resumed = outputs(*run_resumed(p, bundles, 1, finalize=False))[0]
    assert [(r["window_start"], r["window_end"], r["fired"]) for r in whole] == \
        [(0, 10, 1), (15, 25, 1), (0, 25, 3)]
    assert resumed == whole


def test_timers_of_all_keys_fire_in_ascending_time_then_key_order_also_after_a_restore():
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count()))
    bundles = [Bundle([{"key": "b", "ts": 15}], watermark=0),
               Bundle([{"key": "c", "ts": 5}], watermark=0),
               Bundle([{"key": "b", "ts": 5}, {"key": "a", "ts": 5}], watermark=0),
               Bundle([], watermark=100)]
    whole = outputs(run_whole(p, bundles, finalize=False))[0]
    resumed = outputs(*run_resumed(p, bundles, 3, finalize=False))[0]
    assert [(r["key"], r["window_start"]) for r in whole] == \
        [("a", 0), ("b", 0), ("c", 0), ("b", 10)]  # t=9 for a, b, c; then t=19 for b
    assert resumed == whole


_HASH_SEED_PROBE = textwrap.dedent("""
    import windowlib as wl
    from windowlib.testing import Bundle, run_bundles
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(wl.aggregates.count()))
    rows = [{"key": k, "ts": 5} for k in "hgfedcba"]
    firings = run_bundles(p, [Bundle(rows, watermark=0), Bundle([], watermark=100)])
    print("".join(r["key"] for r in firings))
""")


def test_firings_of_different_keys_come_out_in_the_same_order_in_every_process():
    """The row order of a run does not depend on PYTHONHASHSEED (set iteration order)."""
    orders = {subprocess.run([sys.executable, "-c", _HASH_SEED_PROBE], check=True,
                             capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
              for seed in ("1", "2", "3")}
    assert orders == {"abcdefgh"}


# --- regression: timers of different keys fire in ascending time, even after a restore -------

def test_firings_of_different_keys_keep_their_order_across_a_restore():
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.EventTimeSessionWindows.with_gap(10)).aggregate(agg.count()))
    bundles = [Bundle([{"key": "a", "ts": 0}, {"key": "b", "ts": 6}], watermark=0),
               Bundle([{"key": "a", "ts": 10}], watermark=0),
               Bundle([], watermark=100)]
    whole = outputs(run_whole(p, bundles, finalize=False))[0]
    resumed = outputs(*run_resumed(p, bundles, 2, finalize=False))[0]
    assert per_key(p, resumed) == per_key(p, whole)  # the promised part holds
    assert [(r["key"], r["window_end"]) for r in resumed] == [("b", 16), ("a", 20)]
    assert resumed == whole


def test_restoring_does_not_mutate_the_snapshot_it_is_given():
    snapshot = mid_run_snapshot(tumbling_count())
    before = copy.deepcopy(snapshot)
    engine = ReferenceEngine(tumbling_count(), snapshot=snapshot)
    feed(engine, [Bundle([{"key": "a", "ts": 4, "value": 3}], watermark=200)])
    engine.finish()
    assert snapshot == before
