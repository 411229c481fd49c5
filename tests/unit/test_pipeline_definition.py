"""Invalid definitions fail where they are written, with a stable error code."""

from __future__ import annotations

import pytest

import windowlib as wl
from windowlib import aggregates as agg

pytestmark = pytest.mark.unit


def keyed() -> wl.Pipeline:
    return wl.Pipeline("p", timestamp="ts").key_by("key")


def code_of(fn) -> str:
    with pytest.raises(wl.WindowlibError) as info:
        fn()
    return info.value.code


@pytest.mark.parametrize(("build", "code"), [
    (lambda: wl.Pipeline("Bad-Name"), "NAME_INVALID"),
    (lambda: wl.Pipeline("../escape"), "NAME_INVALID"),
    (lambda: keyed().allowed_lateness(-1), "LATENESS_NEGATIVE"),
    (lambda: keyed().allowed_lateness("soon"), "DURATION_INVALID"),
    (lambda: wl.TumblingEventTimeWindows.of(-5), "SIZE_NOT_POSITIVE"),
    (lambda: wl.SlidingEventTimeWindows.of(10, 20), "SLIDE_INVALID"),
    (lambda: wl.EventTimeSessionWindows.with_gap(0), "GAP_NOT_POSITIVE"),
    (lambda: keyed().window(wl.EventTimeSessionWindows.with_gap(10)).fold(0, lambda a, r: a),
     "FOLD_WITH_MERGING"),
    (lambda: keyed().fold(0, lambda a, r: a).window(wl.EventTimeSessionWindows.with_gap(10)),
     "FOLD_WITH_MERGING"),
    (lambda: keyed().window(wl.EventTimeSessionWindows.with_gap(10))
     .trigger(wl.DeltaTrigger.of(1, lambda a, b: 0)), "TRIGGER_CANNOT_MERGE"),
    (lambda: keyed().aggregate(agg.count()).reduce(lambda a, b: a), "FUNCTION_ALREADY_SET"),
    (lambda: keyed().aggregate(agg.count(), object()), "ARGUMENT_INVALID"),
    (lambda: wl.Pipeline("p").window(wl.GlobalWindows.create()), "KEY_INVALID"),
    (lambda: keyed().window_all(wl.GlobalWindows.create()), "KEY_INVALID"),
    (lambda: wl.Pipeline("p", timestamp="ts").key_by("ts"), "KEY_INVALID"),
    (lambda: keyed().accumulation("sometimes"), "ACCUMULATION_INVALID"),
    (lambda: keyed().trigger(wl.CountTrigger.at_least(2).discarding())
     .accumulation("accumulating"), "ACCUMULATION_INVALID"),
    (lambda: keyed().count_window(0), "SIZE_NOT_POSITIVE"),
    (lambda: wl.CountTrigger.of(0), "ARGUMENT_INVALID"),
    (lambda: wl.ProcessingTimeTrigger.after_end_of_window()
     .with_late_trigger(wl.CountTrigger.at_least(1)), "ARGUMENT_INVALID"),
])
def test_invalid_definition_raises_its_code_at_build_time(build, code):
    assert code_of(build) == code


def test_running_without_window_or_function_names_what_is_missing():
    from windowlib.testing import run_bundles

    assert code_of(lambda: run_bundles(keyed().aggregate(agg.count()), [])) == "NO_WINDOW"
    no_fn = keyed().window(wl.TumblingEventTimeWindows.of(10))
    assert code_of(lambda: run_bundles(no_fn, [])) == "NO_WINDOW_FUNCTION"


def test_errors_are_value_errors_for_definitions_and_print_their_code():
    with pytest.raises(ValueError, match=r"\[LATENESS_NEGATIVE\]"):
        keyed().allowed_lateness(-1)


def test_builder_never_mutates_the_pipeline_it_was_called_on():
    base = keyed()
    windowed = base.window(wl.TumblingEventTimeWindows.of(10))
    assert base.window_assigner is None
    assert windowed.window_assigner is not None


def test_fingerprint_is_stable_and_changes_with_the_definition():
    def build(size, lateness=0):
        return (keyed().window(wl.TumblingEventTimeWindows.of(size))
                .allowed_lateness(lateness).aggregate(agg.sum("v")))

    assert build(10).fingerprint == build(10).fingerprint
    assert build(10).fingerprint != build(20).fingerprint
    assert build(10).fingerprint != build(10, 5).fingerprint
    renamed = wl.Pipeline("other", timestamp="ts").key_by("key") \
        .window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.sum("v"))
    assert renamed.fingerprint == build(10).fingerprint  # the name is not part of the state


def test_fingerprint_follows_a_python_function_body():
    def f1(a, b):
        return {"v": a["v"] + b["v"]}

    def f2(a, b):
        return {"v": max(a["v"], b["v"])}

    w = keyed().window(wl.TumblingEventTimeWindows.of(10))
    assert w.reduce(f1).fingerprint != w.reduce(f2).fingerprint


def test_count_window_expands_to_flink_definitions():
    tumbling = keyed().count_window(3)
    assert isinstance(tumbling.window_assigner, wl.GlobalWindows)
    assert tumbling.window_trigger == wl.PurgingTrigger.of(wl.CountTrigger.of(3))
    sliding = keyed().count_window(5, 2)
    assert sliding.window_trigger == wl.CountTrigger.of(2)
    assert sliding.window_evictor == wl.CountEvictor.of(5)
