"""Every semantic transcript (``tests/transcripts/*.yaml``) on the Spark general path (forced,
for every transcript), on the native path (wherever the planner accepts the pipeline, in
both shapes of the default trigger's firings; the others are skipped with the planner's
reasons) and on the pane path (Python per firing:
the transcripts ``planner.pane_reasons`` accepts, chosen at collection — event-time session
transcripts with the default trigger run on its session walker).

The transcripts and their checker belong to ``tests/transcripts/``; this module imports the
checker (``check_transcript``) and runs each case once on ``engine="spark"`` with
``stepwise=False`` (one run of all bundles, firings compared per key and window in order, late
output as a multiset), as ``test_transcripts.py`` documents for engines too slow to re-run every
prefix.
"""

from __future__ import annotations

import pytest
from transcript_checks import CASES, checks

import windowlib as wl
import windowlib.engines.spark.testing as spark_testing
from windowlib.engines.spark.native_default import SHARED_SCAN_CONF
from windowlib.engines.spark.planner import pane_reasons, plan_path
from windowlib.engines.spark.session import scoped_conf

pytestmark = pytest.mark.spark



@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_transcript_on_spark_general_path(spark, case, monkeypatch):
    _force_path(monkeypatch, "general")
    checks.check_transcript(case, engine="spark", stepwise=False)


@pytest.mark.parametrize("shared", ["false", "true"], ids=["plain", "shared_scan"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_transcript_on_spark_native_path(spark, case, shared, monkeypatch):
    choice = plan_path(case.pipeline())
    if choice.path != "native":
        pytest.skip("planner: " + "; ".join(choice.reasons))
    _force_path(monkeypatch, "native")
    try:     # both shapes of the default trigger's firings (``native_default``)
        with scoped_conf(spark, {SHARED_SCAN_CONF: shared}):
            checks.check_transcript(case, engine="spark", stepwise=False)
    except wl.DefinitionError as exc:   # input-dependent checks (mixed-type test columns)
        if exc.code != "NATIVE_UNSUPPORTED":
            raise
        pytest.skip(f"planner: {exc}")


PANE_CASES = [c for c in CASES if not pane_reasons(c.pipeline())]


@pytest.mark.parametrize("case", PANE_CASES, ids=[c.id for c in PANE_CASES])
def test_transcript_on_spark_pane_path(spark, case, monkeypatch):
    _force_path(monkeypatch, "panes")
    checks.check_transcript(case, engine="spark", stepwise=False)


def _force_path(monkeypatch, path: str) -> None:
    original = spark_testing.run_bundles_on_spark

    def forced(*args, **kwargs):
        return original(*args, path=path, **kwargs)

    monkeypatch.setattr(spark_testing, "run_bundles_on_spark", forced)


def test_the_pane_path_runs_every_transcript_of_a_python_function_it_can_take():
    """The pane path's transcripts are chosen by ``pane_reasons``: every process/apply
    transcript over tumbling/sliding event-time windows with the default, count or continuous
    event-time triggers or a count trigger (purging or not), count windows, any function behind
    an evictor, and at least the thirty-one there are today."""
    assert len(PANE_CASES) >= 31
    triggers = {type(c.pipeline().effective_trigger) for c in PANE_CASES}
    assert {wl.ContinuousEventTimeTrigger, wl.PurgingTrigger, wl.CountTrigger} <= triggers
    assert any(type(c.pipeline().window_assigner) is wl.GlobalWindows for c in PANE_CASES)
    assert sum(c.pipeline().window_evictor is not None for c in PANE_CASES) >= 6
    windowed = [c for c in PANE_CASES if not c.pipeline().window_assigner.is_merging]
    assert all(c.pipeline().function.kind in ("process", "apply", "batch")
               or c.pipeline().window_evictor is not None for c in windowed)


def test_the_session_walker_runs_every_event_time_session_transcript_it_can_take():
    """Event-time sessions with a static gap and the default trigger run on the pane path's
    session walker (``session_walker.py``): the merge, late-merge, lateness-on-the-merged-
    window and bridging transcripts, with declarative aggregates and Python functions."""
    sessions = [c for c in PANE_CASES if c.pipeline().window_assigner.is_merging]
    names = {c.id.split("::")[1] for c in sessions}
    assert {"session_lateness_is_judged_on_the_merged_window",
            "late_element_bridges_two_fired_sessions",
            "late_element_inside_a_fired_session_continues_its_panes",
            "late_element_extending_a_fired_session_makes_a_new_window"} <= names
    assert len(sessions) >= 9
    assert {c.pipeline().function.kind for c in sessions} >= {"declarative", "reduce",
                                                             "aggregate"}


def test_every_runnable_transcript_reaches_the_spark_engine():
    """Only transcripts that expect a build error are left out (they never reach an engine)."""
    left_out = [c for c in checks.CASES if c not in CASES]
    assert len(CASES) >= 100
    assert all(c.doc.get("build_error") is not None for c in left_out)
