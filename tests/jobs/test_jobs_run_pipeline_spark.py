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
    from windowlib.runs.operations import get_job
    from windowlib.runs.status import job_status

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


def test_gc_command_applies_retention_and_removes_only_stale_leftovers(spark, tmp_path, capsys):
    """``windowlib gc`` after real runs: old state snapshots go (beyond ``--retain``), a crashed
    run's staging older than the grace period goes, a fresh one (a run in progress) stays;
    readers and the next run see everything as before."""
    import os
    import time

    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib import cli
    from windowlib.runs.incremental import open_checkpoint
    from windowlib.runs.operations import get_job
    from windowlib.runs.outputs import read_firings
    from windowlib.state.stores import open_store

    write_synthetic(tmp_path / DATA_PATH, hours=4, events_per_hour=30, keys=3)
    root = tmp_path.as_uri()
    hours = [f"2024-03-01T{h:02d}" for h in range(4)]
    for hour in hours[:3]:
        assert cli.main(["run", "--pipeline", "clickstream_demo", "--root", root, "--first",
                         hour, "--last", hour, "--no-validate", "--json"]) == 0
    capsys.readouterr()
    job = get_job("clickstream_demo")
    checkpoint, output = job.locations(root)
    cs = open_checkpoint(job.pipeline, checkpoint)
    commits = list(reversed(cs.history()))
    assert [c.version for c in commits] == [1, 2, 3]
    firings_before = read_firings(output).count()
    stale, fresh = cs.begin("crashed"), cs.begin("in-progress")   # both for version 4
    for staging in (stale, fresh):
        open_store(staging.uri("state"), None).write_bytes("part-0.parquet", b"partial")
    seven_hours_ago = time.time() - 7 * 3600
    for path in (tmp_path / "_windowlib").rglob("*"):
        if stale.key.split("/")[-1] in str(path) and path.is_file():
            os.utime(path, (seven_hours_ago, seven_hours_ago))

    assert cli.main(["gc", "--pipeline", "clickstream_demo", "--root", root, "--retain", "2",
                     "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["removed_stagings"] == [stale.key]
    assert done["pruned_snapshots"] == [commits[0].record["prefixes"]["state"]]
    assert done["removed_objects"] > 0 and done["retain_versions"] == 2
    assert list(open_store(fresh.uri("state"), None).list())            # the live run's files
    assert not list(open_store(stale.uri("state"), None).list())
    assert list(open_store(commits[1].uri("state"), None).list())      # within retention
    assert read_firings(output).count() == firings_before              # readers see the same
    assert cli.main(["gc", "--pipeline", "clickstream_demo", "--root", root, "--retain", "2",
                     "--json"]) == 0                                    # idempotent
    again = json.loads(capsys.readouterr().out)
    assert again["removed_stagings"] == again["pruned_snapshots"] == []

    assert cli.main(["run", "--pipeline", "clickstream_demo", "--root", root, "--first",
                     hours[3], "--last", hours[3], "--no-validate", "--json"]) == 0
    latest = json.loads(capsys.readouterr().out)
    assert latest["status"] == "published" and latest["version"] == 4
    for bad in (["--grace-hours", "-1"], ["--grace-hours", "nan"], ["--retain", "0"]):
        assert cli.main(["gc", "--pipeline", "clickstream_demo", "--root", root, *bad]) == 2
        err = capsys.readouterr().err
        assert "[ARGUMENT_INVALID]" in err and "Traceback" not in err


def test_a_missing_source_folder_exits_2_instead_of_nothing_new(spark, tmp_path, capsys):
    root = (tmp_path / "no_lake_here").as_uri()
    assert run_pipeline.main(["--pipeline", "clickstream_demo", "--root", root, "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("[SOURCE_NOT_FOUND]") and "nothing_new" not in out
