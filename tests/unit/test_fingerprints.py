"""Fingerprints see everything that changes results (SPEC §8: an incompatible definition is
refused), and no checkpoint written before is refused after an upgrade.

* ``PINNED``: fingerprints as windowlib computed them before custom objects were described by
  their state. Definitions of built-ins only (``BUILT_INS``: every assigner, trigger, evictor
  and declarative aggregate) keep theirs exactly; definitions with user code (``WITH_CODE``:
  callables from the standard library, custom classes whose old descriptions did not depend
  on this module's name) may get a new one, but the old one stays accepted
  (``Pipeline.earlier_fingerprints``). Never update a value; add cases.
* A custom trigger, evictor or function without ``describe()`` is described by its class
  (module, qualified name, source) and its constructor state; state that cannot be described
  is refused with ``DEFINITION_UNDESCRIBABLE`` when the fingerprint is taken.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import operator
import threading

import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.describe import describe_callable, describe_value

pytestmark = pytest.mark.unit


def base() -> wl.Pipeline:
    return wl.Pipeline("fp", timestamp="ts").key_by("key")


def tumbling() -> wl.Pipeline:
    return base().window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))


BUILT_INS = {
    "tumbling_sum_count": lambda: tumbling().aggregate(agg.sum("v").alias("v"), agg.count()),
    "all_declaratives": lambda: tumbling().allowed_lateness("10 minutes").aggregate(
        agg.count(), agg.sum("v"), agg.min("v"), agg.max("v"), agg.mean("v"), agg.first("v"),
        agg.last("v"), agg.approx_count_distinct("v"), agg.collect_list("v")),
    "sliding_offset": lambda: base().window(wl.SlidingEventTimeWindows.of(
        "1 hour", "5 minutes", wl.Time.minutes(-2))).aggregate(agg.count()),
    "sessions": lambda: base().window(wl.EventTimeSessionWindows.with_gap("30 min"))
    .aggregate(agg.count()),
    "processing_time_assigners": lambda: base().window(
        wl.TumblingProcessingTimeWindows.of(1000)).aggregate(agg.count()),
    "processing_sliding": lambda: base().window(
        wl.SlidingProcessingTimeWindows.of(1000, 500)).aggregate(agg.count()),
    "processing_sessions": lambda: base().window(
        wl.ProcessingTimeSessionWindows.with_gap(100)).aggregate(agg.count()),
    "calendar": lambda: base().window(wl.CalendarWindows.of("day", "America/New_York"))
    .aggregate(agg.count()),
    "global_count_window": lambda: base().count_window(3).aggregate(agg.count()),
    "sliding_count_window": lambda: base().count_window(4, 2).aggregate(agg.sum("v")),
    "window_all": lambda: wl.Pipeline("fp", timestamp="ts")
    .window_all(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count()),
    "classic_triggers": lambda: tumbling().trigger(wl.PurgingTrigger.of(
        wl.ContinuousEventTimeTrigger.of("1 minute"))).aggregate(agg.count()),
    "continuous_processing": lambda: tumbling().trigger(
        wl.ContinuousProcessingTimeTrigger.of(500)).aggregate(agg.count()),
    "count_processing_never": lambda: base().window(wl.GlobalWindows.create())
    .trigger(wl.Any(wl.CountTrigger.of(3), wl.ProcessingTimeTrigger.create(),
                    wl.NeverTrigger.create(), wl.EventTimeTrigger.create()))
    .aggregate(agg.count()),
    "dsl_early_late": lambda: tumbling().trigger(
        wl.EventTimeTrigger.after_end_of_window()
        .with_early_trigger(wl.All(wl.CountTrigger.at_least(2),
                                   wl.EventTimeTrigger.after_first_element(100)))
        .with_late_trigger(wl.CountTrigger.at_least(1)).discarding())
    .allowed_lateness(1000).aggregate(agg.count()),
    "dsl_fire_empty_retracting": lambda: tumbling().trigger(
        wl.EventTimeTrigger.after_end_of_window(fire_empty_on_time=True)
        .accumulating_and_retracting()).aggregate(agg.count()),
    "dsl_processing": lambda: base().window(wl.TumblingProcessingTimeWindows.of(1000))
    .trigger(wl.ProcessingTimeTrigger.after_end_of_window().with_early_trigger(
        wl.ProcessingTimeTrigger.after_first_element(10))).aggregate(agg.count()),
    "pipeline_accumulation": lambda: tumbling().accumulation("discarding")
    .aggregate(agg.count()),
    "evictors": lambda: tumbling().evictor(wl.TimeEvictor.of("1 minute", do_evict_after=True))
    .aggregate(agg.count()),
    "count_evictor": lambda: tumbling().evictor(wl.CountEvictor.of(3)).aggregate(agg.count()),
    "max_future_skew": lambda: wl.Pipeline("fp", timestamp="ts", max_future_skew_ms=5)
    .key_by("key", "k2").window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count()),
}


def with_code() -> dict:
    """Definitions with user code (built lazily: the classes are defined further down)."""
    return {
        "delta_trigger": lambda: tumbling().trigger(wl.DeltaTrigger.of(5, operator.sub))
        .aggregate(agg.count()),
        "delta_evictor": lambda: tumbling().evictor(wl.DeltaEvictor.of(2.5, operator.sub))
        .aggregate(agg.count()),
        "reduce_builtin_fn": lambda: tumbling().reduce(operator.add),
        "fold_initial": lambda: tumbling().fold({"text": "", "n": [1, 2]}, operator.add),
        "custom_trigger": lambda: tumbling().trigger(MyTrigger(5)).aggregate(agg.count()),
        "custom_function": lambda: tumbling().process(Threshold(5)),
        "custom_function_datetime": lambda: tumbling().process(
            Threshold(dt.datetime(2024, 3, 1, tzinfo=dt.UTC))),
    }


PINNED = {
    "tumbling_sum_count": "6b88410e55694c18",
    "all_declaratives": "09123a34df66c4c0",
    "sliding_offset": "7c0acbeec9e59701",
    "sessions": "038977ae9ba65ce8",
    "processing_time_assigners": "795b9c547b3e43a9",
    "processing_sliding": "3cc8a2320d12caa0",
    "processing_sessions": "678c127f612cb4f7",
    "calendar": "9503d71692e97ebd",
    "global_count_window": "eb586cf6211c2d81",
    "sliding_count_window": "a33cccec64ab0a9a",
    "window_all": "e035f10c68a1ab4f",
    "classic_triggers": "f1aa5efc9728caef",
    "continuous_processing": "db039b8232eea8b7",
    "delta_trigger": "fa47c2719ff215e5",
    "count_processing_never": "77ded2566d7689fd",
    "dsl_early_late": "8c198ddb85688524",
    "dsl_fire_empty_retracting": "c9643332ac285e4c",
    "dsl_processing": "1bf9bd9f426f7aac",
    "pipeline_accumulation": "c8e26f0949870990",
    "evictors": "6e99bf785f582841",
    "count_evictor": "fb889d9cf6c991fe",
    "delta_evictor": "0adc5a66ecc2093c",
    "reduce_builtin_fn": "4852994a2119ee9c",
    "fold_initial": "5be0fe02f79e61fe",
    "max_future_skew": "41e77dcc8e89ccc4",
    "custom_trigger": "f071a8b1b7d3ec61",
    "custom_function": "bba58277a58f9178",
    "custom_function_datetime": "a02496bbfb2f7103",
}


@pytest.mark.parametrize("name", sorted(BUILT_INS))
def test_built_in_definitions_keep_their_fingerprints(name):
    pipeline = BUILT_INS[name]()
    assert pipeline.fingerprint == PINNED[name]
    assert pipeline.earlier_fingerprints == ()


@pytest.mark.parametrize("name", sorted(with_code()))
def test_checkpoints_of_definitions_with_user_code_stay_accepted(name):
    pipeline = with_code()[name]()
    assert PINNED[name] in (pipeline.fingerprint, *pipeline.earlier_fingerprints)
    assert pipeline.fingerprint not in pipeline.earlier_fingerprints


def test_builtin_callables_are_told_apart():
    """Earlier, every C function was described as ``builtin_function_or_method``."""
    add, mul = tumbling().reduce(operator.add), tumbling().reduce(operator.mul)
    assert add.fingerprint != mul.fingerprint


# --- custom objects ------------------------------------------------------------------------

class MyTrigger(wl.Trigger):
    """A plain class: its parameter lives in ``__dict__``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def on_element(self, element, timestamp, window, ctx):
        return wl.TriggerResult.CONTINUE


class OtherTrigger(MyTrigger):
    pass


class SlotTrigger(wl.Trigger):
    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        self.limit = limit


class MyEvictor(wl.Evictor):
    def __init__(self, keep: int) -> None:
        self.keep = keep

    def evict_before(self, elements, size, window, ctx):
        del elements[:-self.keep]

    def evict_after(self, elements, size, window, ctx):
        pass


@dataclasses.dataclass(frozen=True, slots=True)
class SlotEvictor(wl.Evictor):
    keep: int

    def evict_before(self, elements, size, window, ctx):
        del elements[:-self.keep]

    def evict_after(self, elements, size, window, ctx):
        pass


class Threshold(wl.ProcessWindowFunction):
    def __init__(self, limit: object) -> None:
        self.limit = limit

    def process(self, key, context, elements):
        yield {"n": len(elements)}


class Described(wl.Trigger):
    """A user trigger that describes itself: its own description is used as is."""

    def __init__(self, n: int, cache: object = None) -> None:
        self.n, self.cache = n, cache

    def describe(self) -> dict:
        return {"type": "described", "n": self.n}


def fp_trigger(trigger: wl.Trigger) -> str:
    return tumbling().trigger(trigger).aggregate(agg.count()).fingerprint


def fp_evictor(evictor: wl.Evictor) -> str:
    return tumbling().evictor(evictor).aggregate(agg.count()).fingerprint


def fp_process(fn: object) -> str:
    return tumbling().process(fn).fingerprint


def test_a_custom_trigger_without_describe_is_fingerprinted_by_its_constructor_state():
    assert fp_trigger(MyTrigger(5)) != fp_trigger(MyTrigger(50))
    assert fp_trigger(MyTrigger(5)) == fp_trigger(MyTrigger(5))
    assert fp_trigger(SlotTrigger(5)) != fp_trigger(SlotTrigger(50))


def test_a_custom_trigger_is_told_apart_by_its_qualified_name():
    assert fp_trigger(MyTrigger(5)) != fp_trigger(OtherTrigger(5))
    described = MyTrigger(5).describe()
    assert described["instance"]["callable"] == f"{__name__}.MyTrigger"
    assert described["attributes"] == {"n": 5}


def test_a_custom_trigger_nested_in_a_built_in_composite_is_described_too():
    def early(n):
        return wl.EventTimeTrigger.after_end_of_window().with_early_trigger(MyTrigger(n))

    assert fp_trigger(early(5)) != fp_trigger(early(50))


def test_a_custom_evictor_without_describe_is_fingerprinted_by_its_constructor_state():
    assert fp_evictor(MyEvictor(2)) != fp_evictor(MyEvictor(3))
    assert fp_evictor(MyEvictor(2)) == fp_evictor(MyEvictor(2))
    assert fp_evictor(SlotEvictor(2)) != fp_evictor(SlotEvictor(3))


def test_a_custom_function_sees_values_that_have_no_dict():
    when = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    assert fp_process(Threshold(when)) != fp_process(Threshold(when + dt.timedelta(hours=1)))
    assert fp_process(Threshold({1, 2})) != fp_process(Threshold({1, 3}))
    assert fp_process(Threshold(frozenset({"a", "b"}))) == \
        fp_process(Threshold(frozenset({"b", "a"})))
    assert fp_process(Threshold(dt.timedelta(minutes=1))) != \
        fp_process(Threshold(dt.timedelta(minutes=2)))


def test_a_custom_function_keeps_the_description_it_had_for_plain_attributes():
    """Plain attributes: ``{"instance": class, "attributes": __dict__}``, as before, so the
    checkpoints of such functions are not refused after an upgrade."""
    assert describe_value(Threshold(5)) == {"instance": describe_callable(Threshold),
                                            "attributes": {"limit": 5}}
    assert describe_value(Threshold([1, "a", None, 2.5, {"x": True}]))["attributes"] == {
        "limit": [1, "a", None, 2.5, {"x": True}]}


def test_closure_values_and_partial_arguments_are_part_of_the_description():
    def above(limit):
        return lambda a, b: a["v"] - b["v"] > limit

    def delta(a, b, scale=1):
        return (a["v"] - b["v"]) * scale

    assert fp_trigger(wl.DeltaTrigger.of(1, above(5))) != fp_trigger(
        wl.DeltaTrigger.of(1, above(50)))
    assert fp_trigger(wl.DeltaTrigger.of(1, functools.partial(delta, scale=2))) != fp_trigger(
        wl.DeltaTrigger.of(1, functools.partial(delta, scale=3)))
    assert fp_process(Threshold(above(5))) != fp_process(Threshold(above(50)))


def test_a_user_describe_is_used_as_is():
    assert fp_trigger(Described(5, cache=threading.Lock())) == fp_trigger(Described(5))
    assert fp_trigger(Described(5)) != fp_trigger(Described(6))


@pytest.mark.parametrize("state", [threading.Lock(), object(), iter([1, 2])],
                         ids=["lock", "object", "iterator"])
def test_state_that_cannot_be_described_is_refused_naming_where_it_is(state):
    for build in (lambda: fp_trigger(MyTrigger(state)), lambda: fp_process(Threshold(state))):
        with pytest.raises(wl.DefinitionError) as info:
            build()
        assert info.value.code == "DEFINITION_UNDESCRIBABLE"
        assert "describe()" in str(info.value)


def test_a_reference_back_to_an_object_being_described_is_marked_not_followed():
    trigger = MyTrigger(1)
    trigger.n = [trigger, lambda: trigger.n]
    first = fp_trigger(trigger)
    assert first == fp_trigger(trigger)
    assert trigger.describe()["attributes"]["n"][0] == {"back_reference": "MyTrigger",
                                                         "depth": 0}


def test_a_describe_that_returns_no_json_is_refused():
    class Bad(Described):
        def describe(self):
            return {"n": object()}

    with pytest.raises(wl.DefinitionError) as info:
        fp_trigger(Bad(1))
    assert info.value.code == "DEFINITION_UNDESCRIBABLE"


class _ParsesWhenCollected:
    """Garbage in a reference cycle whose finalizer parses Python, as a logging handler
    formatting a traceback does (Python 3.11 computes a traceback's carets with ``ast``):
    seen when PySpark's gateway logged a lost connection from a finalizer."""

    def __init__(self) -> None:
        self.cycle = self

    def __del__(self) -> None:
        import ast

        ast.parse("a + b * c")


def test_a_fingerprint_survives_a_collection_that_parses_python_meanwhile():
    """Reading a class's source parses its module; a garbage collection inside that parse
    that runs a finalizer parsing Python made CPython 3.11 raise ``SystemError: AST
    constructor recursion depth mismatch`` (a rare CI failure of a Spark test)."""
    import gc

    class Counted(wl.ProcessWindowFunction):
        def process(self, key, context, elements):
            yield {"n": len(elements)}

    pipeline = tumbling().process(Counted())
    expected = pipeline.fingerprint
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    try:
        gc.set_threshold(100, 1, 1)
        for _ in range(20):
            gc.disable()
            garbage = [_ParsesWhenCollected() for _ in range(50)]
            del garbage
            gc.enable()      # the next collection comes within 100 allocations
            assert tumbling().process(Counted()).fingerprint == expected
    finally:
        gc.collect()     # no such garbage outlives the test
        gc.set_threshold(*threshold)
        if not enabled:
            gc.disable()
