"""Two runs of one pipeline at once, as two OS processes (SPEC §8): exactly one commits, the
other fails with ``CHECKPOINT_CONFLICT`` and leaves nothing visible.

Both are the real ``windowlib run`` command, started together against the same (empty)
checkpoint; a rendezvous at the ``before_commit`` point (``incr_race_worker.py``) holds each
until BOTH have planned and staged a full run from the same parent, then releases them together
to race for the one conditional write of the commit record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.registry import get
from jobs.synthetic import DATA_PATH, write_synthetic
from windowlib.runs.incremental import open_checkpoint
from windowlib.runs.operations import run_job
from windowlib.runs.outputs import read_firings, read_late, read_rejects
from windowlib.runs.status import job_status
from windowlib.state import layout

pytestmark = [pytest.mark.spark, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def start(barrier: Path, name: str, root: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "WINDOWLIB_ROOT": root}
    env.pop("WINDOWLIB_FAULT", None)
    return subprocess.Popen(
        [sys.executable, str(HERE / "incr_race_worker.py"), str(barrier), name, "--",
         "run", "--pipeline", "clickstream_demo", "--root", root, "--no-validate", "--json"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stagings(root: Path) -> list[str]:
    folder = root / "_windowlib" / "checkpoints" / "clickstream_demo"
    return sorted(p.name for p in folder.iterdir() if layout.parse_staging_prefix(p.name))


def test_two_processes_race_one_commits_the_other_conflicts(spark, tmp_path):
    write_synthetic(tmp_path / DATA_PATH, hours=2, events_per_hour=30, keys=4)
    root = tmp_path.as_uri()
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = {name: start(barrier, name, root) for name in ("a", "b")}
    try:
        deadline = time.monotonic() + 900
        while not all((barrier / f"ready-{n}").exists() for n in procs):
            crashed = {n: p.poll() for n, p in procs.items() if p.poll() is not None}
            assert not crashed, {n: procs[n].stderr.read()[-3000:] for n in crashed}
            assert time.monotonic() < deadline, "the runs never reached the commit"
            time.sleep(0.2)
        # both hold a fully staged run from the same parent (nothing committed yet)
        assert len(stagings(tmp_path)) == 2
        assert job_status(get("clickstream_demo"), root)["version"] is None
        (barrier / "go").touch()
        outcome = {n: (p.wait(timeout=600), p.stdout.read(), p.stderr.read())
                   for n, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
    codes = sorted(code for code, _, _ in outcome.values())
    # the loser failed (exit 1: a conflict is retried, not a user mistake: core.errors)
    assert codes == [0, 1], {n: (c, err[-2000:]) for n, (c, _, err) in outcome.items()}
    winner = next(json.loads(out) for code, out, _ in outcome.values() if code == 0)
    loser_err = next(err for code, _, err in outcome.values() if code == 1)
    assert winner["status"] == "published" and winner["version"] == 1
    assert "[CHECKPOINT_CONFLICT]" in loser_err and "another run" in loser_err
    assert "Traceback" not in loser_err

    # readers see the winner only; the loser removed its staged files; GC finds nothing more
    job = get("clickstream_demo")
    status = job_status(job, root)
    assert status["version"] == 1 and [r["run_id"] for r in status["runs"]] == [
        winner["run_id"]]
    output = job.locations(root)[1]
    firings = read_firings(output, spark=spark)
    assert {r["run_id"] for r in firings.select("run_id").distinct().collect()} == {
        winner["run_id"]}
    assert firings.count() == winner["firings"]
    assert read_late(output, spark=spark).count() == winner["late"]
    assert read_rejects(output, spark=spark).count() == winner["rejects"]
    cs = open_checkpoint(job.pipeline, job.locations(root)[0])
    committed = cs.latest().record["staging"]
    assert stagings(tmp_path) == [committed]
    report = cs.gc(grace_seconds=0)
    assert report.removed_stagings == [] and stagings(tmp_path) == [committed]
    # the loser's work is not lost: everything was consumed once, a new run finds nothing
    assert run_job(job, root, spark=spark, validate=False).status == "nothing_new"
