"""The pane path (``engines/spark/panes.py``): the native path's firings, the Python window
function once per firing.

- Differential property: random pipelines the pane path takes (``strategies.pane_pipelines``:
  tumbling/sliding event time, default or count early/late triggers, accumulating or
  discarding, lateness, a ``process`` function with per-key and per-window state or an
  ``apply`` function; behind an evictor also aggregates) over random bundles give exactly
  the reference engine's firings (per key, in order), late records and rejects.
- The planner takes the pane path for one-shot runs only; incremental runs stay on the
  general path (its state is the core's), and forcing the pane path on a pipeline it cannot
  run names the reasons.
- Errors inside the Python workers reach the caller coded: a failing function is
  ``FUNCTION_FAILED`` naming it, the key and the window; a key above ``max_key_state`` is
  ``KEY_STATE_LIMIT``.
- A batch function (``process_panes``: many panes per call on this path, one per call on the
  general path and the reference engine) gives the same firings on both Spark paths.
"""

from __future__ import annotations

import sys

import pytest
import strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_session import firings_on_paths, ship_by_value, spark_examples
from test_differential_properties import WATERMARKS, assert_spark_equals_reference

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.planner import choose_path, pane_reasons

pytestmark = pytest.mark.spark

ship_by_value(strategies, sys.modules[__name__])

EXAMPLES = spark_examples(ci=30, local=15)


def _equals_reference_on_drawn_bundles(p, data) -> None:
    bundles = data.draw(strategies.bundle_lists(processing_time=strategies.needs_processing_time(p),
                                                keys=strategies.MANY_KEYS, max_rows=12),
                        label="bundles")
    assert_spark_equals_reference(p, bundles, finalize=data.draw(st.booleans()),
                                  watermark=data.draw(st.sampled_from(WATERMARKS)))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(p=strategies.pane_pipelines(), data=st.data())
def test_pane_path_equals_reference_on_random_pipelines(spark, p, data):
    assert pane_reasons(p) == [], "the strategy draws pipelines the pane path takes"
    assert choose_path(p, "auto").path == "panes"
    _equals_reference_on_drawn_bundles(p, data)


@settings(max_examples=max(1, EXAMPLES // 3), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(p=strategies.session_pane_pipelines(), data=st.data())
def test_session_walker_equals_reference_on_random_session_pipelines(spark, p, data):
    """Event-time sessions on the pane path (``session_walker.py``): merges, late merges into
    fired sessions, lateness judged on the merged window, drops, accumulating or discarding,
    declarative aggregates and Python functions: the reference engine's outputs exactly."""
    assert pane_reasons(p) == [], "the strategy draws pipelines the session walker takes"
    assert choose_path(p, "auto").path == "panes"
    _equals_reference_on_drawn_bundles(p, data)


class Boom(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        if key == "b":
            raise ZeroDivisionError("division by zero")
        yield {"n": len(elements)}


def _pipeline(fn: wl.ProcessWindowFunction) -> wl.Pipeline:
    return (wl.Pipeline("boom", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(2)))
            .process(fn))


def _frame(spark, rows):
    return spark.createDataFrame(rows, "key string, ts long, value long, hour int")


def test_the_planner_takes_the_pane_path_for_one_shot_runs_only(spark):
    p = _pipeline(Boom())
    df = _frame(spark, [("a", 1, 1, 0)])
    assert choose_path(p, "auto", df.schema).path == "panes"
    incremental = choose_path(p, "auto", df.schema, incremental=True)
    assert incremental.path == "general"
    assert choose_path(p, "general", df.schema).path == "general"
    session = (wl.Pipeline("s", timestamp="ts").key_by("key")
               .window(wl.ProcessingTimeSessionWindows.with_gap(5))
               .process(Boom()))
    with pytest.raises(wl.DefinitionError) as err:
        choose_path(session, "panes", df.schema)
    assert err.value.code == "PANES_UNSUPPORTED"
    assert "event-time sessions only" in str(err.value)
    either = p.trigger(wl.Any(wl.CountTrigger.of(2), wl.EventTimeTrigger.create()))
    with pytest.raises(wl.DefinitionError) as err:
        choose_path(either, "panes", df.schema)
    assert "the pane path does not fire the trigger Any(" in str(err.value)


def test_a_one_shot_run_plans_its_late_and_rejects_when_first_read(spark):
    """Each new DataFrame costs Spark an analysis of its plan, so a one-shot run plans its
    late and rejects rows when the caller first reads them, not before. On the native path
    the engine's own frames wait until then; on the pane path those rows are the walker's
    and the native frames are never planned. Read, both hold the late element and the
    reject."""
    df = _frame(spark, [("a", 1, 1, 0), ("a", 100, 2, 1), ("a", 2, 3, 2), (None, 5, 4, 2)])
    native = (wl.Pipeline("lazy", timestamp="ts").key_by("key")
              .window(wl.TumblingEventTimeWindows.of(10))
              .aggregate(wl.aggregates.sum("value").alias("total")))
    for p, path in ((native, "native"), (_pipeline(Boom()), "panes")):
        result = run_dataframe(p, df, "hour", finalize=True, path=path)
        inputs = result.run.detail.inputs
        assert {"late", "rejects"} & (set(vars(result)) | set(vars(inputs))) == set(), path
        assert result.firings.count() == 2, path
        late = [(r["key"], r["ts"], r["reason"]) for r in result.late.collect()]
        rejects = [(r["key"], r["ts"], r["reason"]) for r in result.rejects.collect()]
        assert (late, rejects) == ([("a", 2, "too_late")], [(None, 5, "missing_key")]), path
        assert result.late is result.late and result.rejects is result.rejects
        planned = {"late", "rejects"} & set(vars(inputs))
        assert planned == ({"late", "rejects"} if path == "native" else set()), path
        result.unpersist()


def test_event_time_sessions_take_the_session_walker_in_one_shot_runs_only(spark):
    """Static-gap event-time sessions with the default trigger: the pane path's session walker
    for one-shot runs (``explain`` names it); incremental runs keep the general path (the
    core's state between runs); other session pipelines stay general with the reason."""
    df = _frame(spark, [("a", 1, 1, 0)])
    keyed = wl.Pipeline("s", timestamp="ts").key_by("key")
    sessions = (keyed.window(wl.EventTimeSessionWindows.with_gap(5)).allowed_lateness(10)
                .aggregate(wl.aggregates.sum("value").alias("total")))
    assert choose_path(sessions, "auto", df.schema).path == "panes"
    assert "session walker" in sessions.explain()
    incremental = choose_path(sessions, "auto", df.schema, incremental=True)
    assert incremental.path == "general"
    assert any("session windows" in r for r in incremental.reasons)
    early = sessions.trigger(wl.EventTimeTrigger.after_end_of_window()
                             .with_early_trigger(wl.CountTrigger.at_least(2)))
    assert choose_path(early, "auto", df.schema).path == "general"
    assert any("EventTimeTrigger only" in r for r in pane_reasons(early))
    processing = (keyed.window(wl.ProcessingTimeSessionWindows.with_gap(5))
                  .aggregate(wl.aggregates.sum("value")))
    assert choose_path(processing, "auto", df.schema).path == "general"


def test_sessions_on_the_session_walker_equal_the_general_path_outputs(spark):
    """The public outputs of a one-shot run (``run_dataframe``): firings, late (judged by the
    walker on the merged window) and rejects equal the general path's. Gap 10, lateness 20,
    watermark 1 ms behind the largest time: hour 1's element at 12 extends the fired session
    [0, 19) into a new window [0, 22) (LATE at once), 40 touches the unfired [30, 40); hour
    2's -30 is dropped (its window merges with nothing and is past cleanup), a null time is a
    reject."""
    rows = [("a", 0, 1, 0), ("a", 9, 2, 0), ("a", 30, 4, 0), ("b", 5, 8, 0),
            ("a", 12, 16, 1), ("a", 40, 32, 1), ("a", -30, 64, 2), ("b", None, 1, 2)]
    df = _frame(spark, rows)
    p = (wl.Pipeline("s", timestamp="ts").key_by("key")
         .window(wl.EventTimeSessionWindows.with_gap(10)).allowed_lateness(20)
         .aggregate(wl.aggregates.sum("value").alias("total"), wl.aggregates.count()))
    got = {}
    for path in ("panes", "general"):
        result = run_dataframe(p, df, "hour", finalize=True, path=path)
        assert result.path == path
        got[path] = (
            sorted(tuple(r) for r in result.firings.selectExpr(
                "key", "unix_millis(window_start)", "unix_millis(window_end)", "pane_index",
                "timing", "is_final", "total", "count").collect()),
            sorted(tuple(r) for r in result.late.select("key", "ts", "reason").collect()),
            sorted(tuple(r) for r in result.rejects.select("key", "reason").collect()))
        result.unpersist()
    assert got["panes"] == got["general"]
    firings, late, rejects = got["panes"]
    assert ("a", 0, 22, 0, "LATE", False, 19, 3) in firings
    assert ("a", 30, 50, 0, "ON_TIME", False, 36, 2) in firings
    assert late == [("a", -30, "too_late")]
    assert len(rejects) == 1


class Seen(wl.ProcessWindowFunction):
    result_schema = "n long, total long"

    def process(self, key, context, elements):
        yield {"n": len(elements), "total": sum(e["value"] for e in elements)}


class KeepsAList(wl.ProcessWindowFunction):
    """Yields a list it keeps growing (and changes an entry after the yield)."""

    def __init__(self) -> None:
        self.seen: list = []

    def process(self, key, context, elements):
        self.seen.append({"v": elements[0]["value"]})
        yield {"seen": self.seen}
        self.seen[-1]["v"] = -1


def test_rows_a_function_keeps_and_changes_are_written_as_yielded(spark):
    """The pane path encodes a chunk's result rows after all its calls, the general path each
    row at its firing: both write what the function yielded at the call
    (``tests/unit/test_result_snapshots.py`` pins the copy on the reference engine)."""
    import json

    df = _frame(spark, [("a", 10 * i + 1, i + 1, 0) for i in range(4)])
    p = (wl.Pipeline("kept", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(KeepsAList()))
    expected = [[{"v": -1}] * i + [{"v": i + 1}] for i in range(4)]
    for path in ("panes", "general"):
        result = run_dataframe(p, df, "hour", path=path, finalize=True)
        got = [json.loads(r["result_json"])["seen"]
               for r in result.firings.orderBy("window_start").collect()]
        result.unpersist()
        assert got == expected, path


def test_each_window_keeps_its_own_elements_on_both_spark_paths(spark):
    """A function that changes its elements changes them for its own window only: sliding
    windows give the same rows on both paths (``tests/unit/test_result_snapshots.py``)."""
    import json

    df = _frame(spark, [("a", t, t, 0) for t in (1, 2, 3, 6)])
    p = (wl.Pipeline("own", timestamp="ts").key_by("key")
         .window(wl.SlidingEventTimeWindows.of(10, 5)).process(strategies.CarelessFn()))
    for path in ("panes", "general"):
        result = run_dataframe(p, df, "hour", path=path, finalize=True)
        got = [json.loads(r["result_json"])["values"]
               for r in result.firings.orderBy("window_start").collect()]
        result.unpersist()
        assert got == [[1, 2, 3], [1, 2, 3, 6], [6]], path


def test_the_pane_path_takes_count_windows_and_count_triggers(spark):
    """GlobalWindows with a CountTrigger (count windows, purging or sliding with an evictor) and
    a CountTrigger over time windows take the pane path; time triggers over GlobalWindows
    (which never end) do not."""
    df = _frame(spark, [("a", 1, 1, 0)])
    keyed = wl.Pipeline("c", timestamp="ts").key_by("key")
    count_windows = [
        keyed.window(wl.GlobalWindows.create()).trigger(
            wl.PurgingTrigger.of(wl.CountTrigger.of(3))).process(Boom()),
        keyed.window(wl.GlobalWindows.create()).trigger(wl.CountTrigger.of(2))
        .evictor(wl.CountEvictor.of(4)).aggregate(wl.aggregates.sum("value")),
        keyed.window(wl.TumblingEventTimeWindows.of(10)).trigger(wl.CountTrigger.of(2))
        .apply(strategies.window_rows)]
    for p in count_windows:
        assert choose_path(p, "auto", df.schema).path == "panes", pane_reasons(p)
    continuous = keyed.window(wl.GlobalWindows.create()).trigger(
        wl.ContinuousEventTimeTrigger.of(5)).process(Boom())
    assert any("GlobalWindows take the pane path" in r for r in pane_reasons(continuous))
    assert choose_path(continuous, "auto", df.schema).path == "general"


def test_the_pane_path_takes_delta_triggers(spark):
    """A ``DeltaTrigger`` (Flink's: FIRE when ``delta(last fired element, element)`` exceeds
    the threshold; no end-of-window timer) over time windows or ``GlobalWindows``, purging or
    not, behind an evictor or not, takes the pane path: its delta function runs once per
    element in the walker, the window function once per firing."""
    df = _frame(spark, [("a", 1, 1, 0)])
    keyed = wl.Pipeline("d", timestamp="ts").key_by("key")
    delta = wl.DeltaTrigger.of(2, strategies.value_delta)
    deltas = [
        keyed.window(wl.TumblingEventTimeWindows.of(10)).trigger(delta).process(Seen()),
        keyed.window(wl.SlidingEventTimeWindows.of(10, 5)).trigger(wl.PurgingTrigger.of(delta))
        .apply(strategies.window_rows),
        keyed.window(wl.GlobalWindows.create()).trigger(delta)
        .evictor(wl.TimeEvictor.of(5)).aggregate(wl.aggregates.sum("value"))]
    for p in deltas:
        assert choose_path(p, "auto", df.schema).path == "panes", pane_reasons(p)
    assert "pane path" in deltas[0].explain()


def test_delta_triggers_on_the_pane_path_equal_the_general_path(spark):
    """Both Spark paths over the same rows, keys and late elements: a delta trigger over
    tumbling windows with allowed lateness (EARLY firings, then LATE ones for late elements
    that cross the threshold; nothing at the window's end) and over ``GlobalWindows``
    (a final pane at the end of a finalized input with what arrived since the last firing)."""
    rows = [(k, t, (t * 7 + len(k)) % 11, t // 20) for k in ("a", "b") for t in range(0, 60, 2)]
    rows += [("a", 3, 20, 4), ("a", 5, 0, 4), ("b", 41, 30, 5)]     # late, within lateness
    df = _frame(spark, rows)
    keyed = wl.Pipeline("d", timestamp="ts").key_by("key")
    delta = wl.DeltaTrigger.of(4, strategies.value_delta)
    for p in (keyed.window(wl.TumblingEventTimeWindows.of(20)).trigger(delta)
              .allowed_lateness(100).process(Seen()),
              keyed.window(wl.GlobalWindows.create()).trigger(wl.PurgingTrigger.of(delta))
              .process(Seen())):
        got = firings_on_paths(p, df, "hour", finalize=True)
        assert got["panes"] == got["general"]
        assert {r[4] for r in got["panes"]} >= {"EARLY"} and len(got["panes"]) > 10


def test_a_key_s_whole_history_takes_the_pane_path(spark):
    """``GlobalWindows`` with their default ``NeverTrigger`` and a process function — one pane
    per key with all its elements at the end of a finalized input, the batch job "per key,
    everything" — takes the pane path, with the general path's firings; without
    ``finalize`` nothing fires. A ``NeverTrigger`` over time windows fires nothing either: its
    windows are cleaned up, a late element still goes to the late output."""
    rows = [(k, t, t % 5, t // 10) for k in ("a", "b", "c") for t in range(0, 40, 3)]
    df = _frame(spark, [*rows, ("a", 1, 9, 5)])
    keyed = wl.Pipeline("h", timestamp="ts").key_by("key")
    history = keyed.window(wl.GlobalWindows.create()).process(Seen())
    assert choose_path(history, "auto", df.schema).path == "panes", pane_reasons(history)
    got = firings_on_paths(history, df, "hour", finalize=True)
    assert got["panes"] == got["general"]
    assert sorted((r[0], r[-2]) for r in got["panes"]) == [("a", 15), ("b", 14), ("c", 14)]
    assert run_dataframe(history, df, "hour", path="panes").firings.count() == 0
    silent = (keyed.window(wl.TumblingEventTimeWindows.of(10)).trigger(wl.NeverTrigger.create())
              .process(Seen()))
    result = run_dataframe(silent, df, "hour", finalize=True, path="panes")
    assert result.firings.count() == 0
    assert [tuple(r)[:3] for r in result.late.collect()] == [("a", 1, 9)]


def test_processing_time_windows_take_the_pane_path(spark):
    """Tumbling and sliding processing-time windows with their default trigger (elements
    assigned by the bundle's processing time, fired in step 1 of the first later bundle
    that reaches the window's end, or at the end of a finalized input) take the pane path,
    with the general path's firings, finalized or not; another trigger over them stays on
    the general path."""
    rows = [(k, t, t % 7, t // 8) for k in ("a", "b") for t in range(0, 48, 3)]
    df = _frame(spark, rows)
    times = {0: 7, 1: 15, 2: 15, 3: 31, 4: 44, 5: 60}     # P_b per hour
    keyed = wl.Pipeline("p", timestamp="ts").key_by("key")
    for assigner in (wl.TumblingProcessingTimeWindows.of(10),
                     wl.SlidingProcessingTimeWindows.of(20, 10)):
        p = keyed.window(assigner).process(Seen())
        assert choose_path(p, "auto", df.schema).path == "panes", pane_reasons(p)
        for finalize in (True, False):
            got = firings_on_paths(p, df, "hour", finalize=finalize, processing_time=times)
            assert got["panes"] == got["general"] and len(got["panes"]) >= 6
    counted = keyed.window(wl.TumblingProcessingTimeWindows.of(10)).trigger(
        wl.CountTrigger.of(2)).process(Seen())
    assert choose_path(counted, "auto", df.schema).path == "general"
    assert any("ProcessingTimeTrigger only" in r for r in pane_reasons(counted))


def test_early_firings_by_processing_time_take_the_pane_path(spark):
    """``after_end_of_window()`` with an early ``ProcessingTimeTrigger.after_first_element``
    (Beam's "early results every so often"): the timer armed by the first element since the
    last firing fires EARLY in step 1 of a later bundle whose processing time reaches it,
    is void once the window's end has passed, and late elements fire at once — on the pane
    path, with the general path's firings, finalized or not. The same trigger alone fires
    by processing time only: EARLY, then LATE for late elements, never ON_TIME; so does
    Flink's ``ProcessingTimeTrigger`` over event-time windows (a timer at the window's end,
    in processing time)."""
    rows = [(k, t, t % 7, t // 8) for k in ("a", "b") for t in range(0, 48, 3)]
    rows += [("a", 2, 5, 4), ("b", 20, 6, 5)]                # late, within the lateness
    df = _frame(spark, rows)
    times = {0: 7, 1: 15, 2: 15, 3: 31, 4: 44, 5: 60}      # P_b per hour
    early = (wl.EventTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.ProcessingTimeTrigger.after_first_element(8)))
    alone = wl.ProcessingTimeTrigger.after_first_element(8)    # EARLY, then LATE; no ON_TIME
    flink = wl.ProcessingTimeTrigger.create()      # at the window's end, in processing time
    for trigger, timings in ((early, {"EARLY", "ON_TIME", "LATE"}), (alone, {"EARLY", "LATE"}),
                             (flink, {"EARLY", "LATE"})):
        p = (wl.Pipeline("e", timestamp="ts").key_by("key")
             .window(wl.TumblingEventTimeWindows.of(20)).trigger(trigger)
             .allowed_lateness(40).process(Seen()))
        assert choose_path(p, "auto", df.schema).path == "panes", pane_reasons(p)
        for finalize in (True, False):
            got = firings_on_paths(p, df, "hour", finalize=finalize, processing_time=times)
            assert got["panes"] == got["general"]
            assert {r[4] for r in got["panes"]} == timings


@pytest.mark.parametrize("lateness", [0, 30])
def test_after_first_element_by_event_time_takes_the_pane_path(spark, lateness):
    """``EventTimeTrigger.after_first_element(5)`` alone — EARLY before the window's end,
    ON_TIME once at or after it (4 + 5 = 9 is the end of [0, 10), final without lateness),
    LATE after that — and as the early trigger of ``after_end_of_window()`` (a timer at or
    after the end never fires): the general path's firings on the pane path, finalized or
    not."""
    rows = [("a", 4, 1, 0), ("a", 1, 2, 0), ("b", 12, 3, 0), ("a", 13, 4, 1), ("b", 2, 5, 1),
            ("a", 22, 6, 2), ("a", 6, 7, 2), ("b", 27, 8, 3), ("a", 33, 9, 3)]
    df = _frame(spark, rows)
    keyed = wl.Pipeline("f", timestamp="ts").key_by("key")
    for trigger in (wl.EventTimeTrigger.after_first_element(5),
                    wl.EventTimeTrigger.after_end_of_window().with_early_trigger(
                        wl.EventTimeTrigger.after_first_element(3))):
        p = (keyed.window(wl.TumblingEventTimeWindows.of(10)).trigger(trigger)
             .allowed_lateness(lateness).process(Seen()))
        assert choose_path(p, "auto", df.schema).path == "panes", pane_reasons(p)
        for finalize in (True, False):
            got = firings_on_paths(p, df, "hour", finalize=finalize)
            assert got["panes"] == got["general"] and len(got["panes"]) >= 3


def test_continuous_processing_time_triggers_take_the_pane_path(spark):
    """``ContinuousProcessingTimeTrigger.of(10)`` over tumbling event-time windows (EARLY and
    LATE firings by processing time, none at the window's end) and over ``GlobalWindows``
    (a final pane when finalized): the general path's firings on the pane path."""
    rows = [(k, t, t % 7, t // 8) for k in ("a", "b") for t in range(0, 48, 3)]
    rows += [("a", 2, 5, 4), ("b", 20, 6, 5)]                # late, within the lateness
    df = _frame(spark, rows)
    times = {0: 7, 1: 15, 2: 15, 3: 31, 4: 44, 5: 60}      # P_b per hour
    keyed = wl.Pipeline("c", timestamp="ts").key_by("key")
    every = wl.ContinuousProcessingTimeTrigger.of(10)
    for p in (keyed.window(wl.TumblingEventTimeWindows.of(20)).trigger(every)
              .allowed_lateness(40).process(Seen()),
              keyed.window(wl.GlobalWindows.create()).trigger(every).process(Seen())):
        assert choose_path(p, "auto", df.schema).path == "panes", pane_reasons(p)
        for finalize in (True, False):
            got = firings_on_paths(p, df, "hour", finalize=finalize, processing_time=times)
            assert got["panes"] == got["general"] and len(got["panes"]) >= 6


def test_dynamic_gap_sessions_take_the_session_walker(spark):
    """``EventTimeSessionWindows.with_dynamic_gap``: the walker asks the assigner for each
    element's window (its gap function once per element, as the core does) — no Spark SQL
    split, whose chaining needs a static gap — with the general path's outputs; a failing
    gap function is the core's ``FUNCTION_FAILED``, word for word."""
    rows = [(k, t, (t * 5 + len(k)) % 11, t // 20) for k in ("a", "b") for t in range(0, 80, 4)]
    rows += [("a", 3, 4, 5), ("b", 70, 2, 5)]
    df = _frame(spark, rows)
    p = (wl.Pipeline("g", timestamp="ts").key_by("key")
         .window(wl.EventTimeSessionWindows.with_dynamic_gap(strategies.value_gap))
         .allowed_lateness(10).aggregate(wl.aggregates.sum("value").alias("total"),
                                         wl.aggregates.count()))
    assert choose_path(p, "auto", df.schema).path == "panes", pane_reasons(p)
    got = {}
    for path in ("panes", "general"):
        result = run_dataframe(p, df, "hour", finalize=True, path=path)
        got[path] = [sorted(tuple(r) for r in frame.drop("run_id").collect())
                     for frame in (result.firings, result.late)]
        result.unpersist()
    assert got["panes"] == got["general"] and len(got["panes"][0]) > 5
    failing = (wl.Pipeline("g", timestamp="ts").key_by("key")
               .window(wl.EventTimeSessionWindows.with_dynamic_gap(Fragile())).process(Seen()))
    texts = {}
    for path in ("panes", "general"):
        with pytest.raises(wl.ExecutionError) as err:
            run_dataframe(failing, _frame(spark, [("a", 1, 1, 0), ("a", 2, 0, 0)]), "hour",
                          finalize=True, path=path)
        assert err.value.code == "FUNCTION_FAILED"
        texts[path] = str(err.value)
    assert texts["panes"] == texts["general"] and "ZeroDivisionError" in texts["panes"]


class Fragile:
    """A delta (or gap) function that cannot take a value of 0."""

    def __call__(self, *elements):
        return 1 / elements[-1]["value"]


def test_a_failing_delta_function_on_the_pane_path_is_function_failed(spark):
    """The same coded error, word for word, as the general path's (the core's
    ``trigger_failed``): the trigger, the key, the window and the original error."""
    p = (wl.Pipeline("d", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10))
         .trigger(wl.DeltaTrigger.of(0.5, Fragile())).process(Seen()))
    df = _frame(spark, [("a", 1, 1, 0), ("a", 2, 0, 0)])
    texts = {}
    for path in ("panes", "general"):
        with pytest.raises(wl.ExecutionError) as err:
            run_dataframe(p, df, "hour", finalize=True, path=path)
        assert err.value.code == "FUNCTION_FAILED"
        texts[path] = str(err.value)
    text = texts["panes"]
    assert text == texts["general"]
    assert "trigger DeltaTrigger" in text and "ZeroDivisionError" in text, text
    assert "key 'a', window TimeWindow(0, 10)" in text and "Traceback" not in text, text


def test_the_pane_path_takes_any_function_behind_an_evictor(spark):
    """An evictor buffers the pane whatever the function, so declarative aggregates behind one
    run on the pane path (not the native path); an evictor with ``fire_empty_on_time`` (an ON_TIME
    pane it emptied) stays on the general path."""
    df = _frame(spark, [("a", 1, 1, 0)])
    window = (wl.Pipeline("e", timestamp="ts").key_by("key")
              .window(wl.TumblingEventTimeWindows.of(10)))
    evicted = window.evictor(wl.CountEvictor.of(2)).aggregate(wl.aggregates.sum("value"))
    assert pane_reasons(evicted) == []
    assert choose_path(evicted, "auto", df.schema).path == "panes"
    assert choose_path(window.aggregate(wl.aggregates.sum("value")), "auto",
                       df.schema).path == "native"
    empty = (window.trigger(wl.EventTimeTrigger.after_end_of_window(fire_empty_on_time=True))
             .evictor(wl.CountEvictor.of(2)).process(Boom()))
    assert any("fire_empty_on_time" in r for r in pane_reasons(empty))
    assert choose_path(empty, "auto", df.schema).path == "general"


def test_an_evictor_on_the_pane_path_evicts_like_the_general_path(spark):
    """CountEvictor.of(2) after the function with early count firings: each firing sees the
    pane the evictor left after the previous one, plus what arrived since."""
    rows = [("a", t, t, 0) for t in (1, 2, 3, 4, 5)] + [("b", 3, 9, 1)]
    df = _frame(spark, rows)
    p = (wl.Pipeline("e", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_early_trigger(wl.CountTrigger.of(2)))
         .evictor(wl.CountEvictor.of(2, do_evict_after=True))
         .process(Seen()))
    got = {}
    for path in ("panes", "general"):
        result = run_dataframe(p, df, "hour", finalize=True, path=path)
        assert result.path == path
        got[path] = sorted(tuple(r) for r in result.firings.select(
            "key", "pane_index", "timing", "n", "total").collect())
        result.unpersist()
    assert got["panes"] == got["general"]
    # "a": EARLY sees 1, 2 (kept); EARLY sees 1..4, keeps 3, 4; ON_TIME sees 3, 4, 5
    assert [r[3:] for r in got["panes"] if r[0] == "a"] == [(2, 3), (4, 10), (3, 12)]


def test_the_pane_path_counts_and_fires_like_the_general_path(spark):
    """Early count firings in accumulating mode: each firing sees every element so far."""
    rows = [("a", t, t, 0) for t in (1, 2, 3, 4, 5)] + [("a", 12, 7, 1), ("b", 3, 9, 1)]
    df = _frame(spark, rows)

    class Sizes(wl.ProcessWindowFunction):
        result_schema = "n long, total long, idx long, when string"

        def process(self, key, context, elements):
            yield {"n": len(elements), "total": sum(e["value"] for e in elements),
                   "idx": context.pane.index, "when": context.pane.timing.value}

    p = _pipeline(Sizes())
    got = {}
    for path in ("panes", "general"):
        result = run_dataframe(p, df, "hour", finalize=True, path=path)
        assert result.path == path
        got[path] = sorted(tuple(r) for r in result.firings.select(
            "key", "window_start", "pane_index", "when", "n", "total").collect())
        result.unpersist()
    assert got["panes"] == got["general"]
    # window [0, 10) of "a": EARLY at its 2nd and 4th element, ON_TIME with all five
    fired = {(r[0], r[2], r[3], r[4]) for r in got["panes"] if r[1].microsecond < 10_000}
    assert fired == {("a", 0, "EARLY", 2), ("a", 1, "EARLY", 4), ("a", 2, "ON_TIME", 5),
                     ("b", 0, "ON_TIME", 1)}


def test_a_failing_function_on_the_pane_path_is_function_failed(spark):
    df = _frame(spark, [("a", 1, 1, 0), ("b", 2, 1, 0), ("b", 3, 1, 0)])
    with pytest.raises(wl.ExecutionError) as err:
        run_dataframe(_pipeline(Boom()), df, "hour", finalize=True, path="panes")
    assert err.value.code == "FUNCTION_FAILED"
    message = str(err.value)
    assert "Boom" in message and "'b'" in message and "ZeroDivisionError" in message
    assert "Traceback" not in message and "PythonException" not in message


class NamesTheKey(wl.ProcessWindowFunction):
    """A result row with a column named like the key, and one without."""

    def process(self, key, context, elements):
        yield {"key": "not the key", "n": len(elements)}
        yield {"n": -len(elements)}


class Reserved(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"n": 1, "pane_index": 7}


@pytest.mark.parametrize("schema", [None, "key string, n long"], ids=["result_json", "typed"])
def test_a_result_column_named_like_the_key_keeps_the_key_on_both_spark_paths(spark, schema):
    df = _frame(spark, [("a", 1, 1, 0), ("a", 2, 1, 0), ("b", 3, 1, 0)])
    got = {}
    for path in ("panes", "general"):
        result = run_dataframe(_pipeline(NamesTheKey()), df, "hour", finalize=True, path=path,
                               result_schema=schema)
        value = "n" if schema else "result_json"
        got[path] = sorted(tuple(r) for r in result.firings.select(
            "key", "pane_index", "timing", value).collect())
        result.unpersist()
    assert got["panes"] == got["general"]
    assert {r[0] for r in got["panes"]} == {"a", "b"}
    if schema:
        # EARLY at the second element, ON_TIME with both: two rows each
        assert sorted(r[3] for r in got["panes"] if r[0] == "a") == [-2, -2, 2, 2]
    else:
        assert sorted(r[3] for r in got["panes"] if r[0] == "a") == [
            '{"n":-2}', '{"n":-2}', '{"n":2}', '{"n":2}']


def test_a_reserved_result_column_on_the_pane_path_is_result_column_conflict(spark):
    df = _frame(spark, [("a", 1, 1, 0)])
    with pytest.raises(wl.ExecutionError) as err:
        run_dataframe(_pipeline(Reserved()), df, "hour", finalize=True, path="panes")
    assert err.value.code == "RESULT_COLUMN_CONFLICT"
    assert "'pane_index'" in str(err.value) and "Traceback" not in str(err.value)


@pytest.mark.parametrize("kind", ["process", "batch"])
def test_a_key_above_max_key_state_on_the_pane_path_is_key_state_limit(spark, kind):
    df = _frame(spark, [("a", t, 1, 0) for t in range(9)])
    p = _pipeline(Boom()) if kind == "process" else (
        wl.Pipeline("limit", timestamp="ts").key_by("key")
        .window(wl.TumblingEventTimeWindows.of(100)).process_panes(strategies.PaneStats()))
    with pytest.raises(wl.ExecutionError) as err:
        run_dataframe(p, df, "hour", finalize=True, path="panes", max_key_state=5)
    assert err.value.code == "KEY_STATE_LIMIT"
    assert "'a'" in str(err.value)


class BatchBoom(wl.BatchWindowFunction):
    result_schema = "n long"

    def process_panes(self, panes):
        raise ZeroDivisionError("division by zero")


def test_a_batch_function_on_the_pane_path_equals_the_general_path(spark):
    rows = [(k, t, t % 7, t // 20) for k in ("a", "b", "c") for t in range(0, 60, 3)]
    df = _frame(spark, rows)
    p = (wl.Pipeline("stats", timestamp="ts").key_by("key")
         .window(wl.SlidingEventTimeWindows.of(10, 5))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_early_trigger(wl.CountTrigger.at_least(2)))
         .allowed_lateness(5).process_panes(strategies.PaneStats()))
    got = firings_on_paths(p, df, "hour", finalize=True)
    assert got["panes"] == got["general"] and len(got["panes"]) > 20


@pytest.mark.parametrize(("shape", "names"), [("tumbling", "key 'a', window [0, 10)"),
                                              ("count", "key 'a', the global window")])
def test_a_failing_batch_function_on_the_pane_path_is_function_failed(spark, shape, names):
    p = wl.Pipeline("boom", timestamp="ts").key_by("key")
    p = p.window(wl.TumblingEventTimeWindows.of(10)) if shape == "tumbling" \
        else p.count_window(1)
    with pytest.raises(wl.ExecutionError) as err:
        run_dataframe(p.process_panes(BatchBoom()), _frame(spark, [("a", 1, 1, 0)]), "hour",
                      finalize=True, path="panes")
    assert err.value.code == "FUNCTION_FAILED"
    assert "BatchBoom" in str(err.value) and "ZeroDivisionError" in str(err.value)
    assert names in str(err.value)
    assert "Traceback" not in str(err.value)
