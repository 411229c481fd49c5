"""The quality gate fails closed: every registered job has expectations (the suite derived from
its pipeline), so a run that cannot be validated — Great Expectations not importable, or the
validation itself erroring — publishes nothing and raises ``QualityError(QUALITY_UNAVAILABLE)``
(exit 1), unless the caller turned validation off explicitly (``validate=False``,
``--no-validate``), which the commit, the summary and the run report record as ``off``.

GX is made unimportable in-process with ``sys.modules["great_expectations"] = None``."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from windowlib import cli
from windowlib.core.errors import QualityError
from windowlib.quality.report import render_report
from windowlib.runs.operations import (
    audit_job,
    backfill_job,
    get_job,
    plan_job,
    run_job,
    stage_job,
)
from windowlib.runs.status import job_status, run_history

pytestmark = pytest.mark.spark


def new_lake(tmp_path_factory) -> str:
    from jobs.synthetic import DATA_PATH, write_synthetic

    folder = tmp_path_factory.mktemp("lake")
    write_synthetic(folder / DATA_PATH, hours=1, events_per_hour=20, keys=2)
    return folder.as_uri()


@pytest.fixture
def lake(tmp_path_factory, monkeypatch):
    monkeypatch.delenv("WINDOWLIB_REGISTRY", raising=False)
    return new_lake(tmp_path_factory)


@pytest.fixture
def no_gx(monkeypatch):
    monkeypatch.setitem(sys.modules, "great_expectations", None)   # import raises ImportError


def committed(job, root) -> int | None:
    return job_status(job, root)["version"]


def test_without_gx_a_run_raises_quality_unavailable_and_commits_nothing(spark, lake, no_gx,
                                                                        capsys):
    job = get_job("clickstream_demo")
    with pytest.raises(QualityError) as info:
        run_job(job, lake, spark=spark)
    assert info.value.code == "QUALITY_UNAVAILABLE"
    assert "nothing was published" in str(info.value) and "--no-validate" in str(info.value)
    assert committed(job, lake) is None
    # the CLI: exit 1 (a failure, not a user mistake), the code on stderr, still nothing
    assert cli.main(["run", "--pipeline", job.name, "--root", lake, "--json"]) == 1
    assert "[QUALITY_UNAVAILABLE]" in capsys.readouterr().err
    assert committed(job, lake) is None


def test_without_gx_a_rebuild_starts_no_generation(spark, lake, no_gx):
    job = get_job("clickstream_demo")
    with pytest.raises(QualityError):
        backfill_job(job, lake, "2024-03-01T00", "2024-03-01T00", rebuild=True, spark=spark)
    assert committed(job, lake) is None
    assert not [p for p in lake_path(lake).rglob("*") if p.name.startswith("g=")]


def test_without_gx_the_dag_audit_step_raises(spark, lake, no_gx):
    job = get_job("clickstream_demo")
    plan = plan_job(job, lake)
    ref = stage_job(job, lake, plan, spark=spark)
    with pytest.raises(QualityError) as info:
        audit_job(job, lake, ref, spark=spark)
    assert info.value.code == "QUALITY_UNAVAILABLE"
    assert committed(job, lake) is None


def test_validate_false_publishes_and_every_record_says_validation_off(
        spark, lake, no_gx, capsys, tmp_path_factory):
    job = get_job("clickstream_demo")
    summary = run_job(job, lake, spark=spark, validate=False)
    assert summary.status == "published" and summary.version == 1
    assert summary.validation["status"] == "off"
    assert "validation off" in "\n".join(summary.lines())
    from windowlib.runs.summary import validation_status

    last = run_history(job, lake)[-1]
    assert validation_status(last["validation"]) == "off"
    html = render_report(job.name, run_history(job, lake))
    assert "<span class=off>off</span>" in html
    # the CLI's --no-validate is the same switch
    other = new_lake(tmp_path_factory)
    assert cli.main(["run", "--pipeline", job.name, "--root", other, "--no-validate",
                     "--json"]) == 0
    assert '"status": "off"' in capsys.readouterr().out


def test_a_validation_that_errors_publishes_nothing(spark, lake):
    import great_expectations as gx

    job = dataclasses.replace(get_job("clickstream_demo"), expectations=lambda: [
        gx.expectations.ExpectColumnValuesToNotBeNull(column="no_such_column")])
    with pytest.raises(QualityError) as info:
        run_job(job, lake, spark=spark)
    assert info.value.code == "QUALITY_UNAVAILABLE" and "no_such_column" in str(info.value)
    assert committed(job, lake) is None


def test_with_gx_the_summary_says_passed(spark, lake):
    summary = run_job(get_job("clickstream_demo"), lake, spark=spark)
    assert summary.status == "published"
    assert summary.validation["status"] == "passed" and summary.validation["success"]
    assert "validation passed" in "\n".join(summary.lines())
    # where the run's time went, by phase, in the order the run went through them
    assert list(summary.phases) == ["tables", "plan", "inputs", "build", "write", "validate",
                                    "commit"]
    assert all(seconds >= 0 for seconds in summary.phases.values())
    assert summary.phases["write"] > 0 and summary.phases["validate"] > 0
    staged = ("inputs", "build", "write")             # inside the staging's own wall time
    assert sum(summary.phases[k] for k in staged) <= summary.seconds + 0.01
    assert any(line.startswith("  time tables ") for line in summary.lines())


def lake_path(root: str):
    from pathlib import Path

    return Path(root[len("file://"):])


def test_a_published_rebuild_is_in_the_run_history_and_the_report(spark, lake):
    job = get_job("clickstream_demo")
    first = run_job(job, lake, spark=spark, validate=False)
    rebuilt = backfill_job(job, lake, None, None, rebuild=True, spark=spark, validate=False)
    assert first.version == 1 and rebuilt.published
    history = run_history(job, lake)
    assert [h["version"] for h in history] == [1, job_status(job, lake)["version"]]
    assert [h.get("rebuild", False) for h in history] == [False, True]
    assert history[-1]["inputs"] == rebuilt.inputs and history[-1]["run_id"] == rebuilt.run_id
    html = render_report(job.name, history)
    assert f"v{history[-1]['version']} (rebuild)" in html
