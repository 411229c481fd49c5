"""``jobs/run_pipeline.py``: argument handling, exit codes and error messages (the real runs
are in ``test_jobs_run_pipeline_spark.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jobs import run_pipeline
from jobs.registry import REPO
from windowlib.core.errors import DefinitionError, ExecutionError, InputError, StateError

pytestmark = pytest.mark.unit

SCRIPT = str(REPO / "jobs" / "run_pipeline.py")


def test_unknown_pipeline_as_a_script_exits_2_without_a_traceback(tmp_path):
    proc = subprocess.run([sys.executable, SCRIPT, "--pipeline", "nope"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.startswith("[PIPELINE_UNKNOWN] unknown pipeline 'nope'")
    assert "flights_departure_delay" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_dry_run_prints_the_resolved_plan_as_json(capsys, monkeypatch):
    monkeypatch.delenv("WINDOWLIB_ROOT", raising=False)
    code = run_pipeline.main(["--pipeline", "flights_departure_delay", "--root",
                              "s3://lake-bucket/prod", "--first", "2013-01-01T05",
                              "--last", "2013-01-01T09", "--dry-run", "--json"])
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["source"] == "s3://lake-bucket/prod/data/flights"
    assert plan["checkpoint"] == "s3://lake-bucket/prod/_windowlib/checkpoints"
    assert plan["output"] == "s3://lake-bucket/prod/windows/flights_departure_delay"
    assert plan["partitions"] == ["2013-01-01T05", "2013-01-01T09"]
    assert plan["watermark"] == {"type": "BoundedOutOfOrderness", "delay_ms": 3 * 3_600_000}


def test_dry_run_uses_the_default_root(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("WINDOWLIB_ROOT", tmp_path.as_uri())
    assert run_pipeline.main(["--pipeline", "clickstream_demo", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["root"] == tmp_path.as_uri() and plan["partitions"] is None


@pytest.mark.parametrize("argv, code", [
    (["--pipeline", "clickstream_demo", "--first", "2024-03-01T00"], "ARGUMENT_INVALID"),
    (["--pipeline", "clickstream_demo", "--first", "2024-03-01", "--last", "2024-03-01"],
     "ARGUMENT_INVALID"),
    (["--pipeline", "clickstream_demo", "--first", "2024-03-01T05", "--last",
      "2024-03-01T04"], "ARGUMENT_INVALID"),
    (["--pipeline", "clickstream_demo", "--root", "s3://lake-bucket/../etc"], "URI_INVALID"),
    (["--pipeline", "clickstream_demo", "--root", "http://example.com/x"], "URI_INVALID"),
    (["--pipeline", "../etc/passwd"], "PIPELINE_UNKNOWN"),
])
def test_user_mistakes_exit_2_with_their_code(argv, code, capsys):
    assert run_pipeline.main([*argv, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"[{code}]") and "Traceback" not in err


def test_missing_pipeline_argument_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        run_pipeline.main(["--dry-run"])
    assert exit_.value.code == 2
    assert "--pipeline" in capsys.readouterr().err


def test_exit_code_classification():
    assert run_pipeline.is_user_error(DefinitionError("x", code="NAME_INVALID"))
    assert run_pipeline.is_user_error(InputError("x", code="COLUMN_MISSING"))
    assert run_pipeline.is_user_error(StateError("x", code="FINGERPRINT_MISMATCH"))
    assert not run_pipeline.is_user_error(StateError("x", code="CHECKPOINT_CONFLICT"))
    assert not run_pipeline.is_user_error(ExecutionError("x", code="FUNCTION_FAILED"))
