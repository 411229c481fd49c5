"""The driver's internal fast paths keep the documented behaviour: which trigger ``clear`` calls
may be skipped at cleanup, when a window function's ``clear`` runs, cached prefixed contexts
and descriptors, shared pane metadata, the one cleanup timer per live window, the
single-aggregate adder, and user subclasses of the assigner and trigger the element step
inlines."""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace

import pytest

import windowlib as wl
from windowlib.core.driver import Clock, KeyDriver, Sink
from windowlib.core.pane import PaneInfo, Timing, pane_info
from windowlib.core.state import ReducingStateDescriptor
from windowlib.core.triggers.base import PrefixedContext, Trigger, TriggerResult
from windowlib.engines.reference import ReferenceEngine, _key_order
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.unit

CALLS: list[tuple] = []  # what the test triggers and functions below were asked to do


@dataclass(frozen=True)
class ClearRecordingTrigger(wl.EventTimeTrigger):
    """A user subclass that overrides ``clear``: it must keep being called at cleanup."""

    def clear(self, window, ctx) -> None:
        CALLS.append(("trigger.clear", window.start))
        super().clear(window, ctx)


class ClearRecordingFunction(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"n": len(elements)}

    def clear(self, context) -> None:
        CALLS.append(("fn.clear", context.window.start, context.pane))


class PlainFunction(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"n": len(elements)}


def pipeline(trigger=None, fn=None, lateness=0) -> wl.Pipeline:
    p = (wl.Pipeline("fast", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).allowed_lateness(lateness))
    if trigger is not None:
        p = p.trigger(trigger)
    return p.process(fn or PlainFunction())


def test_builtin_triggers_declare_local_clear_and_overriding_clear_withdraws_it():
    early = wl.EventTimeTrigger.after_end_of_window().with_early_trigger(
        wl.CountTrigger.at_least(5))
    for trigger in (wl.EventTimeTrigger.create(), wl.CountTrigger.of(3), early,
                    wl.PurgingTrigger.of(wl.CountTrigger.of(2)),
                    wl.ContinuousEventTimeTrigger.of(5)):
        assert trigger.clear_is_local(), trigger
    assert not ClearRecordingTrigger().clear_is_local()
    assert not wl.PurgingTrigger.of(ClearRecordingTrigger()).clear_is_local()
    assert not wl.EventTimeTrigger.after_end_of_window().with_early_trigger(
        ClearRecordingTrigger()).clear_is_local()


def test_user_trigger_clear_still_runs_once_per_window_at_cleanup():
    CALLS.clear()
    engine = ReferenceEngine(pipeline(trigger=ClearRecordingTrigger(), lateness=5))
    engine.process_bundle([{"key": "a", "ts": 1}, {"key": "a", "ts": 12}], watermark=100)
    assert sorted(c for c in CALLS if c[0] == "trigger.clear") == [
        ("trigger.clear", 0), ("trigger.clear", 10)]


def test_function_clear_runs_at_cleanup_only_when_overridden():
    CALLS.clear()
    engine = ReferenceEngine(pipeline(fn=ClearRecordingFunction()))
    engine.process_bundle([{"key": "a", "ts": 1}], watermark=50)
    assert CALLS == [("fn.clear", 0, None)]
    assert pipeline(fn=ClearRecordingFunction()).compile().runner.needs_clear
    assert not pipeline(fn=PlainFunction()).compile().runner.needs_clear


def test_each_live_window_holds_exactly_one_cleanup_timer():
    p = pipeline(lateness=100)
    driver = KeyDriver(p.compile(), ("a",), Clock(), Sink())
    for ts in (1, 2, 3, 15, 4):
        driver.process_element({"key": "a", "ts": ts}, ts)
    cleanup = sorted((t, w) for domain, t, w, owners in driver.snapshot()["timers"]
                     if "cleanup" in owners)
    assert cleanup == [(109, [0, 10]), (119, [10, 20])]
    driver.clock.watermark = 109
    driver.advance_watermark()
    assert [w.start for w in driver.records] == [10]
    driver.process_element({"key": "a", "ts": 16}, 16)
    assert [(t, w) for _, t, w, o in driver.snapshot()["timers"] if "cleanup" in o] == [
        (119, [10, 20])]


def test_prefixed_contexts_are_shared_per_parent_and_prefix():
    driver = KeyDriver(pipeline().compile(), ("a",), Clock(), Sink())
    root = driver._ctx
    early = PrefixedContext.of(root, "early")
    assert early is PrefixedContext.of(root, "early")
    assert early.owner == "trigger.early"
    nested = PrefixedContext.of(early, "0")
    assert nested is PrefixedContext.of(early, "0") and nested.owner == "trigger.early.0"
    assert PrefixedContext.of(object(), "x").owner == "trigger.x"  # foreign parents: no cache


def test_prefixed_descriptors_equal_a_fresh_copy_and_are_reused():
    d = ReducingStateDescriptor("count", operator.add)
    p = d.prefixed("trigger.early")
    assert p == replace(d, name="trigger.early/count")
    assert d.prefixed("trigger.early") is p
    assert d.prefixed("trigger.late").name == "trigger.late/count"


def test_shared_pane_info_equals_a_fresh_one():
    for index in (0, 1, 63, 64, 1000):
        for timing in Timing:
            for last in (False, True):
                assert pane_info(index, timing, last) == PaneInfo(index, timing, index == 0,
                                                                  last)


def test_trigger_result_flags():
    flags = {r: (r.is_fire, r.is_purge) for r in TriggerResult}
    assert flags == {TriggerResult.CONTINUE: (False, False), TriggerResult.FIRE: (True, False),
                     TriggerResult.PURGE: (False, True),
                     TriggerResult.FIRE_AND_PURGE: (True, True)}


def test_cached_key_order_keeps_equal_keys_of_different_types_apart():
    assert _key_order((1,)) == _key_order((1,)) == "[1]"
    assert _key_order((True,)) == "[true]"
    assert _key_order(("a", 2)) == '["a", 2]'


def test_a_trigger_without_clear_override_is_local():
    class Quiet(Trigger):
        def on_element(self, element, timestamp, window, ctx):
            return TriggerResult.FIRE

    assert Quiet().clear_is_local()


def test_prefixed_context_states_on_the_fly_descriptors_never_collide():
    driver = KeyDriver(pipeline().compile(), ("a",), Clock(), Sink())
    driver.process_element({"key": "a", "ts": 1}, 1)
    root = driver._ctx
    root.window, root.record = next(iter(driver.records.items()))
    early = PrefixedContext.of(root, "early")
    for i in range(300):   # built and dropped one by one: ids may repeat, names must not
        early.get_state(ReducingStateDescriptor(f"s{i}", operator.add)).add(i)
    assert root.record.trigger_state == {f"trigger.early/s{i}": i for i in range(300)}


class Totals(wl.AggregateFunction):
    """An aggregate whose result is a plain number (a ``result`` column) until it fails."""

    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + value["v"]

    def merge(self, a, b):
        return a + b

    def get_result(self, accumulator):
        if accumulator > 100:
            raise ValueError("too big")
        return accumulator


def _totals_pipeline(aggregate) -> wl.Pipeline:
    return (wl.Pipeline("totals", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)).aggregate(aggregate))


def test_accumulator_results_keep_rows_and_coded_failures():
    bundles = [Bundle([{"key": "a", "ts": 1, "v": 2}, {"key": "a", "ts": 2, "v": 3},
                                  {"key": "b", "ts": 3, "v": 101}])]
    out = run_bundles(_totals_pipeline(wl.aggregates.sum("v")), bundles[:1],
                                 finalize=True)
    assert [(r["key"], r["sum_v"]) for r in out] == [("a", 5), ("b", 101)]
    bundles_ok = [Bundle(bundles[0].elements[:2])]
    out = run_bundles(_totals_pipeline(Totals()), bundles_ok, finalize=True)
    assert [(r["key"], r["result"]) for r in out] == [("a", 5)]
    with pytest.raises(wl.ExecutionError) as err:
        run_bundles(_totals_pipeline(Totals()), bundles, finalize=True)
    assert err.value.code == "FUNCTION_FAILED"
    assert "Totals" in str(err.value) and "ValueError: too big" in str(err.value)


def test_add_or_create_equals_create_then_add():
    aggs = wl.aggregates.AggregateSet([wl.aggregates.sum("x"), wl.aggregates.count(),
                                       wl.aggregates.max("x")])
    rows = [({"x": 4}, 1), ({"x": None}, 2), ({"x": 9}, 3)]
    acc, fresh = None, aggs.create_accumulator()
    for row, ts in rows:
        acc = aggs.add_or_create(acc, row, ts)
        fresh = aggs.add(fresh, row, ts)
    assert acc == fresh and aggs.get_result(acc) == {"sum_x": 13, "count": 3, "max_x": 9}


def test_single_aggregate_adder_equals_create_then_add():
    for agg in (wl.aggregates.sum("x"), wl.aggregates.mean("x"), wl.aggregates.first("x")):
        aggs = wl.aggregates.AggregateSet([agg])
        add, acc, fresh = aggs.adder(), None, aggs.create_accumulator()
        for row, ts in (({"x": 4}, 5), ({"x": None}, 2), ({"x": 9}, 3)):
            acc = add(acc, row, ts)
            fresh = aggs.add(fresh, row, ts)
        assert acc == fresh, agg


@dataclass(frozen=True)
class EveryOtherDayWindows(wl.TumblingEventTimeWindows):
    """A user subclass that assigns differently (5 ms windows in every other 10 ms, none
    between): it must not be treated as one window per interval."""

    def assign_windows(self, element, ts_ms, processing_time_ms):
        start = ts_ms - ts_ms % 10
        return [wl.TimeWindow(start, start + 5)] if start % 20 == 0 else []


@dataclass(frozen=True)
class CountingEventTimeTrigger(wl.EventTimeTrigger):
    """A user subclass of the inlined EventTimeTrigger: its callbacks must still be called."""

    def on_element(self, element, timestamp, window, ctx):
        CALLS.append(("on_element", timestamp))
        return super().on_element(element, timestamp, window, ctx)


def test_user_subclasses_of_the_inlined_assigner_and_trigger_keep_their_own_behaviour():
    assert wl.TumblingEventTimeWindows.of(10).one_window_per_interval()
    assert not wl.TumblingProcessingTimeWindows.of(10).one_window_per_interval()
    assert not EveryOtherDayWindows(10).one_window_per_interval()
    p = (wl.Pipeline("sub", timestamp="ts").key_by("key").window(EveryOtherDayWindows(10))
         .aggregate(wl.aggregates.count()))
    out = run_bundles(p, [Bundle([{"key": "a", "ts": t} for t in (1, 2, 3, 12, 21, 24)])],
                      finalize=True, with_late=True)
    assert [(r["window_start"], r["window_end"], r["count"]) for r in out[0]] == [
        (0, 5, 3), (20, 25, 2)]
    assert [r["ts"] for r in out[1]] == [12]
    CALLS.clear()
    run_bundles(pipeline(trigger=CountingEventTimeTrigger()),
                [Bundle([{"key": "a", "ts": t} for t in (1, 2, 3)])], finalize=True)
    assert CALLS == [("on_element", 1), ("on_element", 2), ("on_element", 3)]


class Biggest(wl.AggregateFunction):
    def create_accumulator(self):
        return None

    def add(self, value, acc):
        return value["v"] if acc is None or value["v"] > acc else acc

    def get_result(self, acc):
        return {"biggest": acc}

    def merge(self, a, b):
        return max(a, b)


def _end_of_window_pipelines() -> list[wl.Pipeline]:
    def base(assigner) -> wl.Pipeline:
        return wl.Pipeline("eow", timestamp="ts").key_by("key").window(assigner)
    return [
        base(wl.TumblingEventTimeWindows.of(10)).aggregate(wl.aggregates.sum("v")),
        base(wl.TumblingEventTimeWindows.of(10)).aggregate(
            wl.aggregates.count(), wl.aggregates.max("v"), wl.aggregates.mean("v")),
        base(wl.SlidingEventTimeWindows.of(20, 5)).reduce(
            lambda a, b: {**a, "v": a["v"] + b["v"]}),
        base(wl.TumblingEventTimeWindows.of(7)).accumulation("discarding").aggregate(Biggest()),
    ]


def test_end_of_window_step_equals_the_general_timer_path():
    """``KeyDriver._end_of_window`` (the plan's ``end_of_window_only``) has the effects of
    ``_on_timer``/``_act``/``_emit``/``_cleanup``: same firings, late records and snapshots,
    with out-of-order and late elements and a snapshot round trip mid-run."""
    import random

    from windowlib.core.logic import driver_plan

    rng = random.Random(3)
    rows = [{"key": f"k{rng.randrange(4)}", "ts": t + rng.randint(-15, 3),
             "v": rng.randint(-5, 50)} for t in range(0, 600, 2)]
    bundles = [rows[i:i + 37] for i in range(0, len(rows), 37)]

    def run(p: wl.Pipeline, fast: bool) -> tuple:
        engine = ReferenceEngine(p, watermark=wl.BoundedOutOfOrderness(4))
        assert driver_plan(engine.logic).end_of_window_only
        driver_plan(engine.logic).end_of_window_only = fast
        snapshots = []
        for i, b in enumerate(bundles):
            engine.process_bundle(b)
            if i == 3:
                snapshots.append(engine.snapshot())
                sink, rejects = engine.sink, engine.rejects
                engine = ReferenceEngine(p, watermark=wl.BoundedOutOfOrderness(4),
                                         snapshot=snapshots[-1])
                engine.sink, engine.rejects = sink, rejects
        snapshots.append(engine.snapshot())
        engine.finish()
        return engine.sink.firings, engine.sink.late, snapshots

    late = 0
    for make in range(len(_end_of_window_pipelines())):
        fast = run(_end_of_window_pipelines()[make], True)
        general = run(_end_of_window_pipelines()[make], False)
        assert fast == general and fast[0], make
        late += len(fast[1])
    assert late     # the input has late elements


def test_end_of_window_step_is_chosen_only_for_its_case():
    from windowlib.core.logic import driver_plan

    def chosen(assigner=None, lateness=0, trigger=None, accumulation=None, fn=None) -> bool:
        p = (wl.Pipeline("c", timestamp="ts").key_by("key")
             .window(assigner or wl.TumblingEventTimeWindows.of(10)).allowed_lateness(lateness))
        if trigger is not None:
            p = p.trigger(trigger)
        if accumulation is not None:
            p = p.accumulation(accumulation)
        p = p.process(fn) if fn is not None else p.aggregate(wl.aggregates.sum("v"))
        return driver_plan(p.compile()).end_of_window_only

    assert chosen() and chosen(accumulation="discarding")
    assert chosen(assigner=wl.SlidingEventTimeWindows.of(20, 5))
    assert not chosen(fn=PlainFunction())                      # it reads the pane
    assert not chosen(lateness=5)                              # cleanup is a later timer
    assert not chosen(trigger=CountingEventTimeTrigger())      # a user subclass
    assert not chosen(trigger=wl.CountTrigger.of(3))
    assert not chosen(accumulation="accumulating_and_retracting")
    assert not chosen(assigner=wl.EventTimeSessionWindows.with_gap(10))
    assert not chosen(assigner=wl.TumblingProcessingTimeWindows.of(10))


@dataclass
class _Point:
    n: int


class _Reusing(wl.ProcessWindowFunction):
    """Yields one dict object twice, changed in between: each result must be its own copy."""

    def process(self, key, context, elements):
        row = {"n": len(elements)}
        yield row
        row["n"] = -1
        yield row


class _Shapes(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        return [_Point(len(elements)), 7, {"n": 1}]


class _NotRows(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        return {"n": 1}


class _FailsMidway(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"n": 1}
        raise KeyError("missing")


class _Nothing(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        return None


class _Typed(wl.ProcessWindowFunction):
    result_schema = "n long"

    def process(self, key, context, elements):
        yield {"n": len(elements)} if elements[0]["v"] else {"n": "many"}


def _apply_pairs(key, window, elements):
    yield {"key_seen": key, "start": window.start, "n": len(elements)}


def _expected(function, values):
    """What SPEC §6 and ``core/runner.py``'s contract say each case gives, in
    ``test_value_results_in_one_step``'s outcome form: ``("rows", rows)`` or a coded error
    with its message."""
    n, window = len(values), "TimeWindow(0, 10)"
    if isinstance(function, _Reusing):        # each yielded dict copied when yielded
        return ("rows", [{"n": n}, {"n": -1}])
    if isinstance(function, _Shapes):         # a dataclass as its fields, a scalar as `result`
        return ("rows", [{"n": n}, {"result": 7}, {"n": 1}])
    if isinstance(function, _NotRows):
        return ("FUNCTION_FAILED",
                "[FUNCTION_FAILED] process() must return an iterable of rows, got dict")
    if isinstance(function, _FailsMidway):    # named, with the key, window and cause
        return ("FUNCTION_FAILED", f"[FUNCTION_FAILED] _FailsMidway failed for key 'k', "
                f"window {window}: KeyError: 'missing'", "KeyError")
    if isinstance(function, _Nothing):
        return ("rows", [])
    if isinstance(function, _Typed):
        return ("rows", [{"n": n}]) if values[0]["v"] else ("RESULT_SCHEMA_MISMATCH",)
    return ("rows", [{"key_seen": "k", "start": 0, "n": n}])     # _apply_pairs


@pytest.mark.parametrize("spec", [
    ("process", _Reusing()), ("process", _Shapes()), ("process", _NotRows()),
    ("process", _FailsMidway()), ("process", _Nothing()), ("process", _Typed()),
    ("apply", _apply_pairs)],
    ids=["reused_dict", "shapes", "not_rows", "fails_midway", "none", "typed", "apply"])
@pytest.mark.parametrize("values", [[{"v": 1}, {"v": 2}], [{"v": 0}]], ids=["two", "zero"])
def test_value_results_in_one_step(spec, values):
    """The per-firing call of a ``process``/``apply`` function (``value_results`` on the pane
    path; ``results`` over buffered contents on the per-element driver) gives the rows,
    copies and coded errors the contract states, both ways alike."""
    from windowlib.core.evictors import TimestampedValue
    from windowlib.core.functions import Context, FunctionSpec
    from windowlib.core.runner import FunctionRunner
    from windowlib.core.windows import TimeWindow

    runner = FunctionRunner(FunctionSpec(*spec), buffered=True)
    window = TimeWindow(0, 10)
    context = Context(None, window, None, pane_info(0, Timing.ON_TIME, True))

    def outcome(call):
        try:
            return "rows", call("k", window, context, list(values))
        except wl.WindowlibError as exc:
            return exc.code, str(exc), type(exc.__cause__).__name__

    expected = _expected(spec[1], values)
    by_values = outcome(runner.value_results)
    assert by_values[:len(expected)] == expected
    contents = [TimestampedValue(v, t) for t, v in enumerate(values)]
    assert outcome(lambda k, w, c, _: runner.results(k, w, c, contents)) == by_values


def test_only_process_and_apply_take_values():
    from windowlib.core.functions import FunctionSpec
    from windowlib.core.runner import FunctionRunner

    runner = FunctionRunner(FunctionSpec("reduce", lambda a, b: a), buffered=True)
    assert not runner.takes_values
    with pytest.raises(TypeError, match="does not take values"):
        runner.value_results("k", None, None, [])
