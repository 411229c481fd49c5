"""Crash safety: SIGKILL a run at every fault point, then rerun; equal to an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from s3_servers import use_env
from state_crash_worker import main as run_in_process

from windowlib.state.checkpoint import CheckpointStore
from windowlib.state.faults import FAULT_POINTS
from windowlib.state.stores import open_store

WORKER = Path(__file__).with_name("state_crash_worker.py")
REPO = Path(__file__).resolve().parents[2]
BATCH1 = ["in/a.parquet:10", "in/b.parquet:20"]
BATCH2 = [*BATCH1, "in/c.parquet:5", "in/d.parquet:7"]


def _env(request, fault: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WINDOWLIB_"))}
    backend = request.node.callspec.params["root_uri"]
    if backend != "file":
        env.update(request.getfixturevalue(f"{backend}_s3").env())
    if fault:
        env["WINDOWLIB_FAULT"] = fault
    env["PYTHONPATH"] = str(REPO)
    return env


def _worker(request, root: str, run_id: str, files: list[str], fault: str | None = None):
    return subprocess.run([sys.executable, str(WORKER), root, run_id, *files],
                          env=_env(request, fault), capture_output=True, text=True, timeout=120)


def _inline(request, root: str, run_id: str, files: list[str], capsys) -> str:
    """The same run in this process (no fault), with the backend's AWS_* environment."""
    backend = request.node.callspec.params["root_uri"]
    env = request.getfixturevalue(f"{backend}_s3").env() if backend != "file" else {}
    with use_env(env):
        run_in_process(root, run_id, files)
    return capsys.readouterr().out


def _outcome(root: str, settings) -> tuple:
    cs = CheckpointStore(root, "crashy", "fp-crash", settings=settings)
    head = cs.latest()
    total = json.loads(open_store(head.uri("state"), settings).read_bytes("total.json"))
    firings = [json.loads(open_store(c.uri("firings"), settings).read_bytes("part-0.json"))
               for c in cs.committed()]
    return head.version, head.watermark_ms, total, firings, sorted(f.path for f in cs.manifest())


_EXPECTED: dict[str, tuple] = {}   # backend -> outcome of the uninterrupted runs (per process)


def _uninterrupted(request, root_uri: str, s3_settings, tmp_path, capsys) -> tuple:
    """Reference: uninterrupted runs in a separate root on the same backend, once per backend
    (the outcome names no root: the same for every fault point)."""
    backend = request.node.callspec.params["root_uri"]
    if backend not in _EXPECTED:
        ref_root = (root_uri + "-ref" if root_uri.startswith("s3")
                    else (tmp_path / "ref").as_uri())
        for run_id, files in (("r1", BATCH1), ("r2", BATCH2)):
            assert "committed" in _inline(request, ref_root, run_id, files, capsys)
        _EXPECTED[backend] = _outcome(ref_root, s3_settings)
    return _EXPECTED[backend]


@pytest.mark.parametrize("fault", FAULT_POINTS)
def test_kill_at_fault_point_then_rerun_equals_uninterrupted(request, root_uri, s3_settings,
                                                             fault, tmp_path, capsys):
    expected = _uninterrupted(request, root_uri, s3_settings, tmp_path, capsys)

    assert "committed" in _inline(request, root_uri, "r1", BATCH1, capsys)
    crashed = _worker(request, root_uri, "r2", BATCH2, fault=fault)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    cs = CheckpointStore(root_uri, "crashy", "fp-crash", settings=s3_settings)
    if fault == "after_commit":
        assert cs.latest().run_id == "r2"          # the commit landed before the kill
    else:
        assert cs.latest().run_id == "r1"          # previous commit intact, nothing visible
    cs.gc(now=datetime.now(UTC) + timedelta(days=1))
    rerun = _inline(request, root_uri, "r2", BATCH2, capsys)
    assert ("noop" in rerun) == (fault == "after_commit")
    assert _outcome(root_uri, s3_settings) == expected
    # Nothing duplicated, nothing left over: only committed staging prefixes remain.
    staged = {i.key.split("/")[0] for i in cs.pipeline_store.list("v=")}
    assert staged == {c.record["staging"] for c in cs.history()}
    again = _inline(request, root_uri, "r3", BATCH2, capsys)
    assert "nothing new" in again and cs.latest().version == 2


@pytest.mark.unit
@pytest.mark.parametrize("setting,killed", [("", False), ("before_commit", False),
                                            ("before_commit, after_commit", True)])
def test_fault_point_fires_only_when_named(setting, killed):
    code = ("from windowlib.state.faults import CrashPoint, fault_point; "
            "fault_point(CrashPoint.AFTER_COMMIT)")
    env = dict(os.environ, WINDOWLIB_FAULT=setting, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
    assert proc.returncode == (-signal.SIGKILL if killed else 0)
