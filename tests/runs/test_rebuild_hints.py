"""Every error that asks for a rebuild names a command that works (no Spark here: the commands
are checked for their arguments; ``tests/spark/test_rebuild.py`` runs them): the library says
``windowlib backfill --pipeline NAME --rebuild`` / ``run_incremental(..., rebuild=True)``, and the
entry points print the exact command for the root they ran with."""

from __future__ import annotations

import pytest

import windowlib as wl
from windowlib import cli
from windowlib.core.errors import rebuild_hint
from windowlib.runs import operations as ops

pytestmark = pytest.mark.unit


@pytest.fixture
def calls(monkeypatch):
    seen: list[dict] = []

    class Job:
        name = "demo_job"

    def backfill(job, root, first, last, **kwargs):
        seen.append({"first": first, "last": last, **kwargs})
        return ops.RunSummary(pipeline=job.name, run_id="r", status=ops.RunStatus.DRY_RUN)

    monkeypatch.setattr(ops, "get_job", lambda name: Job())
    monkeypatch.setattr(ops, "default_root", lambda: "file:///lake")
    monkeypatch.setattr(ops, "backfill_job", backfill)
    return seen


def test_a_rebuild_needs_no_partition_range(calls):
    assert cli.main(["backfill", "--pipeline", "demo_job", "--rebuild", "--json"]) == 0
    assert (calls[0]["first"], calls[0]["last"], calls[0]["rebuild"]) == (None, None, True)


@pytest.mark.parametrize("half", [["--first", "2024-03-01T00"], ["--last", "2024-03-01T00"]])
def test_first_and_last_go_together(calls, half, capsys):
    assert cli.main(["backfill", "--pipeline", "demo_job", *half]) == 2
    assert "[ARGUMENT_INVALID]" in capsys.readouterr().err and not calls


def test_the_library_hint_names_the_command_and_the_api_call():
    hint = rebuild_hint("demo_job")
    assert "`windowlib backfill --pipeline demo_job --rebuild`" in hint
    assert "run_incremental(..., rebuild=True)" in hint


@pytest.mark.parametrize(("root", "expected"), [
    (None, "rebuild with: windowlib backfill --pipeline demo_job --rebuild"),
    ("file:///other/lake",
     "rebuild with: windowlib backfill --pipeline demo_job --root file:///other/lake --rebuild"),
])
def test_the_cli_prints_the_exact_rebuild_command_for_its_root(calls, monkeypatch, capsys,
                                                               root, expected):
    def mismatch(*args, **kwargs):
        raise wl.StateError("changed: " + rebuild_hint("demo_job"), code="FINGERPRINT_MISMATCH")

    monkeypatch.setattr(ops, "run_job", mismatch)
    argv = ["run", "--pipeline", "demo_job", *(["--root", root] if root else [])]
    assert cli.main(argv) == 2
    assert expected in capsys.readouterr().err.splitlines()


def test_errors_without_a_rebuild_remedy_print_no_rebuild_command(calls, monkeypatch, capsys):
    def conflict(*args, **kwargs):
        raise wl.StateError("another run committed first", code="CHECKPOINT_CONFLICT")

    monkeypatch.setattr(ops, "run_job", conflict)
    assert cli.main(["run", "--pipeline", "demo_job"]) == 1
    assert "rebuild with:" not in capsys.readouterr().err
