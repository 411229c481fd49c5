"""Crash safety: a run killed with SIGKILL at any step of write-stage-publish leaves the last
commit intact; rerunning produces exactly what an uninterrupted run produces — nothing
duplicated, nothing lost. The killed run is a real ``windowlib run`` process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.registry import get
from jobs.synthetic import DATA_PATH, write_synthetic
from windowlib.runs.operations import run_job
from windowlib.runs.outputs import read_firings, read_late, read_rejects
from windowlib.state.faults import FAULT_POINTS

pytestmark = [pytest.mark.spark, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def _rows(spark, output) -> dict[str, list]:
    def rows(frame):
        return sorted((tuple(r) for r in frame.drop("run_id").collect()), key=repr)

    return {"firings": rows(read_firings(output, spark=spark)),
            "late": rows(read_late(output, spark=spark)),
            "rejects": rows(read_rejects(output, spark=spark))}


def _cli(root: str, fault: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "WINDOWLIB_ROOT": root, "PYTHONPATH": str(REPO)}
    env.pop("WINDOWLIB_FAULT", None)
    if fault:
        env["WINDOWLIB_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-m", "windowlib.cli", "run", "--pipeline", "clickstream_demo",
         "--root", root, "--no-validate", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")   # once per worker, even when the tests are scheduled apart
def expected(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("uninterrupted")
    write_synthetic(root / DATA_PATH, hours=3, events_per_hour=60, keys=4)
    uri = f"file://{root}"
    job = get("clickstream_demo")
    summary = run_job(job, uri, spark=spark, validate=False)
    assert summary.status == "published" and summary.firings > 0
    return _rows(spark, job.locations(uri)[1])


@pytest.mark.parametrize("fault", ["after_stage", "after_stage_manifest", "before_commit",
                                   "after_commit"])
def test_killed_run_then_rerun_equals_uninterrupted(spark, tmp_path, expected, fault):
    assert fault in FAULT_POINTS
    write_synthetic(tmp_path / DATA_PATH, hours=3, events_per_hour=60, keys=4)
    uri = f"file://{tmp_path}"
    job = get("clickstream_demo")
    killed = _cli(uri, fault)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    committed = fault == "after_commit"
    if not committed:
        with pytest.raises(Exception, match=r"OUTPUT_NOT_FOUND|no committed run"):
            read_firings(job.locations(uri)[1], spark=spark).count()
    rerun = run_job(job, uri, spark=spark, validate=False)
    assert rerun.status == ("nothing_new" if committed else "published")
    assert _rows(spark, job.locations(uri)[1]) == expected
