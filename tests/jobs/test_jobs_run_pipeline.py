"""``jobs/run_pipeline.py``: argument handling, exit codes and error messages (the real runs
are in ``test_jobs_run_pipeline_spark.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jobs import run_pipeline
from jobs.registry import REPO
from windowlib.core import errors

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
     "PARTITION_PRECISION_MISMATCH"),
    (["--pipeline", "clickstream_demo", "--first", "2024-03-01T05", "--last",
      "2024-03-01T04"], "PARTITION_RANGE_REVERSED"),
    (["--pipeline", "clickstream_demo", "--first", "2024-13-01T05", "--last",
      "2024-03-01T04"], "PARTITION_VALUE_INVALID"),
    (["--pipeline", "clickstream_demo", "--root", "s3://lake-bucket/../etc"], "URI_INVALID"),
    (["--pipeline", "clickstream_demo", "--root", "http://example.com/x"], "URI_INVALID"),
    (["--pipeline", "../etc/passwd"], "PIPELINE_UNKNOWN"),
    (["--pipeline", "clickstream_demo", "--master", "spark://"], "ARGUMENT_INVALID"),
    (["--pipeline", "clickstream_demo", "--master", "local[2"], "ARGUMENT_INVALID"),
    (["--pipeline", "clickstream_demo", "--master", "spark://h:7077; rm -rf /"],
     "ARGUMENT_INVALID"),
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


# decisions the registry pins (the CLI and run_pipeline.py used to disagree on some)
PINNED = {"ARGUMENT_INVALID": 2, "URI_INVALID": 2, "NAME_INVALID": 2, "PIPELINE_UNKNOWN": 2,
          "FINGERPRINT_MISMATCH": 2, "SNAPSHOT_VERSION": 2, "STATE_SCHEMA_MISMATCH": 2,
          "OUTPUT_NOT_FOUND": 2, "CHECKPOINT_CONFLICT": 1, "CHECKPOINT_CORRUPT": 1,
          "STAGING_MISSING": 1, "S3_UNAVAILABLE": 1, "FUNCTION_FAILED": 1,
          "QUALITY_UNAVAILABLE": 1}


def _raising(code: str):
    entry = errors.REGISTRY[code]

    def get_job(name):
        raise entry.error_class(f"simulated while looking up {name!r}", code=code)

    return get_job


@pytest.mark.parametrize("code", sorted(errors.REGISTRY))
def test_the_cli_and_run_pipeline_exit_alike_for_every_registered_code(code, monkeypatch,
                                                                      capsys):
    """Both entry points print ``[CODE] message`` and return ``errors.exit_code``: the same
    error raised where both look the job up gives the same exit code."""
    from windowlib import cli
    from windowlib.runs import operations

    monkeypatch.setattr(operations, "get_job", _raising(code))
    expected = errors.REGISTRY[code].exit_code
    assert run_pipeline.main(["--pipeline", "p", "--dry-run"]) == expected
    assert capsys.readouterr().err.startswith(f"[{code}] simulated")
    for argv in (["run", "--pipeline", "p"], ["status", "--pipeline", "p"]):
        assert cli.main(argv) == expected
        assert f"[{code}] simulated" in capsys.readouterr().err


@pytest.mark.parametrize("code, exit_code", sorted(PINNED.items()))
def test_pinned_exit_codes(code, exit_code):
    error = errors.REGISTRY[code].error_class("x", code=code)
    assert errors.exit_code(error) == exit_code
    assert errors.is_user_error(error) == (exit_code == errors.EXIT_USER)


def test_exit_codes_of_unregistered_codes_and_other_exceptions():
    assert errors.exit_code(errors.InputError("x", code="MY_OWN")) == errors.EXIT_USER
    assert errors.exit_code(errors.StateError("x", code="MY_OWN")) == errors.EXIT_FAILED
    assert errors.exit_code(ValueError("x")) == errors.EXIT_FAILED


def test_no_validate_is_planned_and_shown_in_the_dry_run(capsys, tmp_path):
    argv = ["--pipeline", "clickstream_demo", "--root", tmp_path.as_uri(), "--dry-run",
            "--json"]
    assert run_pipeline.main([*argv, "--no-validate"]) == 0
    assert json.loads(capsys.readouterr().out)["validate"] is False
    assert run_pipeline.main(argv) == 0
    assert json.loads(capsys.readouterr().out)["validate"] is True
