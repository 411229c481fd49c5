"""A pipeline DAG run that loses the commit race to a concurrent run of the same pipeline (a
``windowlib_backfill`` run committing through the real commit protocol between the DAG run's
plan and its publish) recovers: it re-plans on top of the winner and publishes only what is
still new — no file consumed twice, no duplicate firing — or, when there is nothing left, ends
cleanly without publishing; a run that loses twice fails with a ``CHECKPOINT_CONFLICT`` message
saying another run holds the pipeline, and its Airflow retry then finishes cleanly.

The competitor is injected by wrapping a task body of ``_windowlib_factory`` (the module the
DAG's tasks call at run time): it runs the real ``backfill_job`` first, then the real task
body continues. Nothing is mocked: real Spark, GX, checkpoint store and ``dag.test()``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

KEY = ["key", "window_start", "window_end", "pane_index"]
T00, T01 = "2024-03-01T00", "2024-03-01T01"


def _states(dr) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}


def _lake(tmp_path):
    from jobs.synthetic import DATA_PATH, write_synthetic

    lake = tmp_path / "lake"
    write_synthetic(lake / DATA_PATH, hours=2, events_per_hour=40, late_fraction=0.0,
                    very_late_fraction=0.0)
    return lake.as_uri()


def _compete(root: str, first: str, last: str, name: str = "competitor") -> dict:
    """A concurrent ``windowlib_backfill`` run of the same pipeline, committed for real."""
    from _windowlib_factory import _spark, get_job

    from windowlib.runs.operations import backfill_job

    summary = backfill_job(get_job("clickstream_demo"), root, first, last, spark=_spark(),
                           run_id=f"windowlib_backfill:manual__{name}").to_dict()
    assert summary["status"] == "published", summary
    return summary


def _dag_run(pipelines_module, root: str):
    """The scheduled run of [01:00, 02:00): lookback 1, so it plans partitions T00..T01."""
    at = datetime(2024, 3, 1, 2, tzinfo=UTC)
    return pipelines_module.windowlib_clickstream_demo.test(
        logical_date=at, run_after=at, run_conf={"root": root})


def _assert_exactly_once(root: str, files: int, rows: int) -> dict:
    """Every input file consumed once, no firing published twice, inputs conserved."""
    from pyspark.sql import functions as F

    from jobs.registry import get
    from windowlib.runs.outputs import read_firings
    from windowlib.runs.status import job_status, run_history

    job = get("clickstream_demo")
    status = job_status(job, root)
    assert status["files_consumed_total"] == files
    history = run_history(job, root)
    assert sum(h["files_consumed"] for h in history) == files
    assert sum(h["inputs"] for h in history) == rows
    for h in history:
        assert h["inputs"] == h["processed"] + h["late"] + h["rejects"]
    firings = read_firings(status["output"])
    dupes = firings.groupBy(*KEY).count().filter(F.col("count") > 1).count()
    assert firings.count() > 0 and dupes == 0
    return status


def test_run_losing_the_publish_race_replans_on_the_winner(airflow_db, pipelines_module,
                                                           spark, tmp_path, monkeypatch):
    import _windowlib_factory as factory

    root = _lake(tmp_path)
    real_publish = factory.do_publish

    def publish_after_a_backfill_won(name, audited, publish_on_failure=False):
        assert audited["ref"]["run_id"].endswith("@v0")   # staged on version 0: T00 and T01
        _compete(root, T00, T00)                          # commits version 1 (T00) first
        return real_publish(name, audited, publish_on_failure)

    monkeypatch.setattr(factory, "do_publish", publish_after_a_backfill_won)
    dr = _dag_run(pipelines_module, root)
    assert str(dr.state) == "success", _states(dr)
    assert set(_states(dr).values()) == {"success"}
    status = _assert_exactly_once(root, files=2, rows=80)
    assert status["version"] == 2
    mine, winner = status["runs"][0], status["runs"][1]
    assert winner["run_id"].startswith("windowlib_backfill:") and winner["files"] == 1
    # re-planned on top of the winner: a new key on version 1, only the file still new (T01)
    assert mine["run_id"].startswith("windowlib_clickstream_demo:") and mine["run_id"].endswith(
        "@v1") and mine["files"] == 1


def test_run_overtaken_before_staging_skips_when_nothing_is_left(airflow_db, pipelines_module,
                                                                 spark, tmp_path,
                                                                 monkeypatch):
    import _windowlib_factory as factory

    root = _lake(tmp_path)
    real_run = factory.do_run

    def run_after_a_backfill_took_everything(name, planned, context=None):
        assert planned["plan"]["files"] == 2
        _compete(root, T00, T01)                          # consumes both files first
        return real_run(name, planned, context)

    monkeypatch.setattr(factory, "do_run", run_after_a_backfill_took_everything)
    dr = _dag_run(pipelines_module, root)
    states = _states(dr)
    assert str(dr.state) == "success", states
    assert states["plan"] == "success" and states["run"] == "skipped", states
    assert {states[t] for t in ("audit", "publish", "report")} == {"skipped"}, states
    status = _assert_exactly_once(root, files=2, rows=80)
    assert status["version"] == 1 and status["runs"][0]["run_id"].startswith(
        "windowlib_backfill:")


def test_losing_twice_says_another_run_holds_the_pipeline_and_the_retry_is_clean(
        airflow_db, spark, tmp_path, monkeypatch):
    from types import SimpleNamespace

    import _windowlib_factory as factory
    from airflow.sdk.exceptions import AirflowException, AirflowSkipException

    import windowlib.runs.operations as ops
    from jobs.synthetic import DATA_PATH, land_late_files

    root = _lake(tmp_path)
    ctx = {"dag": SimpleNamespace(dag_id="windowlib_clickstream_demo"),
           "dag_run": SimpleNamespace(run_id="scheduled__2024-03-01T01:00:00+00:00"),
           "data_interval_start": datetime(2024, 3, 1, 1, tzinfo=UTC),
           "data_interval_end": datetime(2024, 3, 1, 2, tzinfo=UTC), "params": {"root": root}}
    audited = factory.do_audit("clickstream_demo", factory.do_run(
        "clickstream_demo", factory.do_plan("clickstream_demo", ctx)))
    _compete(root, T00, T00, "first")                     # version 1: the first lost race
    real_validator = ops.validator

    def validator_racing_again(job, docs=None):
        gate = real_validator(job, docs)

        def gate_after_another_commit(firings, summary):
            monkeypatch.setattr(ops, "validator", real_validator)   # only once
            land_late_files(tmp_path / "lake" / DATA_PATH, T01, n=5)
            _compete(root, T00, T01, "second")            # version 2 while we re-stage
            return gate(firings, summary)

        return gate_after_another_commit

    monkeypatch.setattr(ops, "validator", validator_racing_again)
    with pytest.raises(AirflowException, match=r"CHECKPOINT_CONFLICT.*another run holds the "
                                               r"pipeline") as lost:
        factory.do_publish("clickstream_demo", audited)
    assert "Nothing of this run was published" in str(lost.value)
    _assert_exactly_once(root, files=3, rows=85)
    # Airflow's retry of the task: the winners consumed everything, it ends without publishing
    with pytest.raises(AirflowSkipException, match="another run consumed every new file"):
        factory.do_publish("clickstream_demo", audited)
    status = _assert_exactly_once(root, files=3, rows=85)
    assert status["version"] == 2
    assert all(r["run_id"].startswith("windowlib_backfill:") for r in status["runs"])
