"""``jobs/run_pipeline.py`` end to end on synthetic data: a published run, nothing new, a
rebuild; a corrupt checkpoint exits 1 with its code."""

from __future__ import annotations

import json

import pytest

from jobs import run_pipeline

pytestmark = pytest.mark.spark


def test_runs_incrementally_then_rebuilds_end_to_end(spark, tmp_path, capsys):
    """The real path: synthetic data, a published run, nothing new, then a rebuild."""
    from jobs.synthetic import DATA_PATH, write_synthetic

    write_synthetic(tmp_path / DATA_PATH, hours=2, events_per_hour=40, keys=3)
    root = tmp_path.as_uri()
    base = ["--pipeline", "clickstream_demo", "--root", root, "--json"]
    assert run_pipeline.main(base) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["status"] == "published" and first["version"] == 1
    assert first["inputs"] == first["processed"] + first["late"] + first["rejects"] == 80
    assert first["validation"]["success"] is True
    assert run_pipeline.main(base) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "nothing_new"
    assert run_pipeline.main([*base, "--first", "2024-03-01T00", "--last", "2024-03-01T01",
                              "--rebuild"]) == 0
    rebuilt = json.loads(capsys.readouterr().out)
    assert rebuilt["status"] == "rebuild published" and rebuilt["version"] == 2
    assert rebuilt["firings"] == first["firings"]


def test_a_corrupt_checkpoint_exits_1_with_its_code(spark, tmp_path, capsys):
    from jobs.synthetic import DATA_PATH, write_synthetic

    write_synthetic(tmp_path / DATA_PATH, hours=1, events_per_hour=20, keys=2)
    root = tmp_path.as_uri()
    argv = ["--pipeline", "clickstream_demo", "--root", root, "--json"]
    assert run_pipeline.main(argv) == 0
    capsys.readouterr()
    record, = (tmp_path / "_windowlib").rglob("commits/00000001.json")
    record.write_text(record.read_text()[:40])            # truncated
    assert run_pipeline.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("[CHECKPOINT_CORRUPT]") and "Traceback" not in err


def test_a_failed_audit_exits_1_naming_the_expectation_for_run_and_rebuild(
        spark, tmp_path, capsys, monkeypatch):
    """A blocked publish is a failure for every entry point — ``run_pipeline.py`` (what
    ``spark-submit`` runs) and the ``windowlib`` CLI, incremental run and rebuild alike — and the
    message names the failed expectation and how to override; nothing is published."""
    import sys
    from pathlib import Path

    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib import cli
    from windowlib.runs.operations import get_job, job_status

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "airflow"))
    monkeypatch.setenv("WINDOWLIB_REGISTRY", "wl_blocking_registry")   # clicks <= 0
    sys.modules.pop("wl_blocking_registry", None)
    write_synthetic(tmp_path / DATA_PATH, hours=1, events_per_hour=20, keys=2)
    root = tmp_path.as_uri()
    calls = [
        (run_pipeline.main, ["--pipeline", "clickstream_demo", "--root", root],
         "rerun with --publish-on-failure"),
        (cli.main, ["run", "--pipeline", "clickstream_demo", "--root", root, "--json"],
         "run again with --publish-on-failure"),
        (cli.main, ["backfill", "--pipeline", "clickstream_demo", "--root", root, "--first",
                    "2024-03-01T00", "--last", "2024-03-01T00", "--rebuild", "--json"],
         "a rebuild publishes only what validates"),
    ]
    for main, argv, hint in calls:
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "the audit failed, nothing was published" in err and "clicks" in err, err
        assert hint in err, err
        assert job_status(get_job("clickstream_demo"), root)["version"] is None
