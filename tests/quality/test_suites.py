"""Suites built from the pipeline definition: which checks exist for which assigner, mode and
window function (no JVM)."""

from __future__ import annotations

import great_expectations as gx
import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import DefinitionError
from windowlib.quality.suites import FRAMES, META_KEY, build_plan

pytestmark = pytest.mark.unit


class Rows(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield from ({"v": e["v"]} for e in elements)


def names(plan, suite=None):
    return [c.name for c in plan.checks if suite is None or c.suite == suite]


def test_sliding_keyed_pipeline_gets_length_uniqueness_and_required_columns():
    p = (wl.Pipeline("s", timestamp="ts").key_by("k1", "k2")
         .window(wl.SlidingEventTimeWindows.of(wl.Time.hours(1), wl.Time.minutes(15)))
         .aggregate(agg.count()))
    plan = build_plan(p)
    assert plan.pane_tuple == ("k1", "k2", "window_start", "window_end", "pane_index")
    assert names(plan, "firings") == [
        "not_null:k1", "not_null:k2", "not_null:window_start", "not_null:window_end",
        "not_null:pane_index", "not_null:timing", "not_null:is_final", "timing_allowed",
        "pane_index_non_negative", "pane_unique", "window_length"]
    length = next(c for c in plan.checks if c.name == "window_length").expectation
    assert (length.min_value, length.max_value) == (3_600_000, 3_600_000)
    assert names(plan, "windows") == ["on_time_at_most_once"]
    assert "run" not in FRAMES and all(c.frame != "run" for c in plan.checks)
    suite = plan.suite("firings")
    assert suite.name == "s.firings" and len(suite.expectations) == 11
    assert all(e.meta[META_KEY] for e in suite.expectations)


def test_retracting_mode_puts_retract_in_the_pane_tuple():
    p = (wl.Pipeline("r").key_by("k").window(wl.TumblingEventTimeWindows.of(wl.Time.hours(1)))
         .accumulation("accumulating_and_retracting").aggregate(agg.count()))
    plan = build_plan(p)
    assert plan.pane_tuple == ("k", "window_start", "window_end", "pane_index", "retract")
    assert "not_null:retract" in names(plan)


def test_global_windows_and_process_functions_skip_bounds_length_and_uniqueness():
    p = wl.Pipeline("g").key_by("k").count_window(3).process(Rows())
    plan = build_plan(p)
    assert plan.global_windows and plan.window_size_ms is None and not plan.unique_panes
    got = names(plan)
    assert "not_null:window_start" not in got and "window_length" not in got
    assert "pane_unique" not in got


def test_custom_expectations_are_copied_named_and_validated():
    mine = gx.expectations.ExpectColumnValuesToBeBetween(column="avg_delay", min_value=-120,
                                                         max_value=1500)
    p = (wl.Pipeline("c").key_by("k").window(wl.TumblingEventTimeWindows.of(wl.Time.hours(1)))
         .aggregate(agg.mean("delay").alias("avg_delay")))
    plan = build_plan(p, [mine])
    custom = [c for c in plan.checks if not c.builtin]
    assert [(c.name, c.column, c.suite) for c in custom] == [
        ("custom_1_expect_column_values_to_be_between", "avg_delay", "firings_custom")]
    assert META_KEY not in (mine.meta or {})          # the caller's object is not mutated
    with pytest.raises(DefinitionError):
        build_plan(p, ["not an expectation"])
