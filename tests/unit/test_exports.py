"""``windowlib.__all__`` is the curated public surface, and the names the SPEC uses resolve.

httpx's ``test_exported_members`` idea: every name in ``__all__`` exists, and every public
attribute of the package that is not a submodule is listed. Then every public name that
SPEC §9's example (and §1-§7's text) writes resolves exactly as written. The incremental-run
names of SPEC §9 (``run_incremental``, ``PartitionedSource``, ``read_*``) and the Spark entry
points (``Pipeline.run``, ``explain``) belong to later issues and are not checked here.
"""

from __future__ import annotations

import functools
import inspect

import pytest

import windowlib as wl

pytestmark = pytest.mark.unit


def test_every_name_in___all___exists():
    missing = [name for name in wl.__all__ if not hasattr(wl, name)]
    assert missing == []


def test___all___lists_each_name_once():
    assert len(wl.__all__) == len(set(wl.__all__))


def test_every_public_attribute_that_is_not_a_submodule_is_in___all__():
    public = {name for name, value in vars(wl).items()
              if not name.startswith("_") and not inspect.ismodule(value)}
    listed = {name for name in wl.__all__
              if not name.startswith("_") and not inspect.ismodule(getattr(wl, name))}
    assert public == listed


def test_the_only_submodule_in___all___is_aggregates_and_the_only_dunder_is_the_version():
    modules = {name for name in wl.__all__ if inspect.ismodule(getattr(wl, name))}
    assert modules == {"aggregates"}
    assert {name for name in wl.__all__ if name.startswith("_")} == {"__version__"}
    assert isinstance(wl.__version__, str)


def test_windowlib_aggregates___all___exists_and_is_complete():
    from windowlib import aggregates

    assert all(hasattr(aggregates, name) for name in aggregates.__all__)
    public = {name for name, value in vars(aggregates).items()
              if not name.startswith("_") and not inspect.ismodule(value)}
    assert public == set(aggregates.__all__)


# --- names the SPEC writes ---------------------------------------------------------------------

SPEC_NAMES = [
    # §9's example, name by name
    "Pipeline", "Pipeline.key_by", "Pipeline.window", "Pipeline.trigger",
    "Pipeline.allowed_lateness", "Pipeline.aggregate", "Time.minutes",
    "TumblingEventTimeWindows.of", "EventTimeTrigger.after_end_of_window",
    "CountTrigger.at_least", "aggregates.sum", "BoundedOutOfOrderness",
    # §1 time and watermarks
    "Time.milliseconds", "Time.seconds", "Time.hours", "Time.days", "MonotonousTimestamps",
    "ProcessingTimeLag",
    # §2 windows and assigners
    "TimeWindow", "GlobalWindow", "SlidingEventTimeWindows.of",
    "EventTimeSessionWindows.with_gap", "EventTimeSessionWindows.with_dynamic_gap",
    "GlobalWindows.create", "TumblingProcessingTimeWindows.of",
    "SlidingProcessingTimeWindows.of", "ProcessingTimeSessionWindows.with_gap",
    "CalendarWindows.of", "Pipeline.window_all", "Pipeline.count_window",
    # §3 triggers
    "Trigger", "TriggerResult.CONTINUE", "TriggerResult.FIRE", "TriggerResult.PURGE",
    "TriggerResult.FIRE_AND_PURGE", "EventTimeTrigger.create", "ProcessingTimeTrigger.create",
    "CountTrigger.of", "PurgingTrigger.of", "ContinuousEventTimeTrigger.of",
    "ContinuousProcessingTimeTrigger.of", "DeltaTrigger.of", "NeverTrigger", "All", "Any",
    "EventTimeTrigger.after_first_element", "ProcessingTimeTrigger.after_first_element",
    "ProcessingTimeTrigger.after_end_of_window", "ValueStateDescriptor",
    "ReducingStateDescriptor",
    # §4 evictors
    "Evictor", "TimestampedValue", "CountEvictor.of", "DeltaEvictor.of", "TimeEvictor.of",
    "Pipeline.evictor",
    # §6 functions and context
    "Pipeline.reduce", "Pipeline.fold", "Pipeline.apply", "Pipeline.process",
    "AggregateFunction", "ProcessWindowFunction", "Timing.EARLY", "Timing.ON_TIME",
    "Timing.LATE", "aggregates.count", "aggregates.min", "aggregates.max", "aggregates.mean",
    "aggregates.first", "aggregates.last", "aggregates.approx_count_distinct",
    "aggregates.collect_list", "Context.window_state", "Context.global_state",
    "Context.output", "PaneInfo",
    # §7 / §5 modes and late output
    "Pipeline.accumulation", "Pipeline.side_output_late_data",
]


@pytest.mark.parametrize("dotted", SPEC_NAMES)
def test_a_name_the_spec_writes_resolves_from_windowlib(dotted):
    assert functools.reduce(getattr, dotted.split("."), wl) is not None


def test_the_dsl_builders_chain_as_the_spec_writes_them():
    trigger = (wl.EventTimeTrigger.after_end_of_window()
               .with_early_trigger(wl.CountTrigger.at_least(2))
               .with_late_trigger(wl.All(wl.CountTrigger.at_least(1),
                                         wl.EventTimeTrigger.after_first_element(5)))
               .discarding())
    assert trigger.accumulation == "discarding"
    assert wl.Any(wl.CountTrigger.at_least(1)).accumulating().accumulation == "accumulating"
    assert wl.EventTimeTrigger.after_end_of_window(fire_empty_on_time=True).fire_empty_on_time
    assert wl.aggregates.sum("amount").alias("total").name == "total"


def test_the_testing_helpers_import_from_windowlib_testing():
    from windowlib.testing import Bundle, run_bundles

    assert Bundle(elements=[], watermark=400_000).watermark == 400_000
    assert callable(run_bundles)


def test_spec_section_9_example_runs_on_the_reference_engine():
    """SPEC §9's example, as written (engine="reference")."""
    from windowlib.testing import Bundle, run_bundles

    p = (wl.Pipeline("demo", timestamp="ts")
         .key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_early_trigger(wl.CountTrigger.at_least(2)))
         .allowed_lateness(wl.Time.minutes(10))
         .aggregate(wl.aggregates.sum("value").alias("value")))

    firings = run_bundles(p, [
        Bundle(elements=[{"key": "a", "ts": 1000, "value": 1}], processing_time=1000,
               watermark=None),
        Bundle(elements=[], watermark=400_000),
    ], engine="reference", finalize=True)
    assert firings == [{"key": "a", "window_start": 0, "window_end": 300_000,
                        "pane_index": 0, "timing": "ON_TIME", "value": 1, "is_final": False}]
    firings, late = run_bundles(p, [Bundle([{"key": "a", "ts": 1000, "value": 1}],
                                           watermark=10**6)] * 2, with_late=True)
    assert [r["timing"] for r in firings] == ["ON_TIME"]
    assert late == [{"key": "a", "ts": 1000, "value": 1, "reason": "too_late"}]
