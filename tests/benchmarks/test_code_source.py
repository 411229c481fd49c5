"""``benchmarks/clickstream.code_source``: the benchmarks print which ``windowlib`` they time,
and warn when local Spark Python workers would import another one (they start as
``python -m ...``, so a ``windowlib/`` package in the working directory wins over
``PYTHONPATH`` in the tasks, while the driver follows ``PYTHONPATH``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def _code_source(cwd: Path, script_dir: Path) -> str:
    script = script_dir / "print_source.py"
    script.write_text("from clickstream import code_source\nprint(code_source())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "benchmarks")])}
    done = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def test_a_working_directory_with_another_windowlib_is_named_in_a_warning(tmp_path: Path):
    other = tmp_path / "checkout"
    (other / "windowlib").mkdir(parents=True)
    (other / "windowlib" / "__init__.py").write_text("")
    line = _code_source(other, tmp_path)
    assert line.startswith(f"windowlib from {REPO / 'windowlib'} (driver); WARNING"), line
    assert str((other / "windowlib").resolve()) in line


@pytest.mark.parametrize("where", ["repo", "elsewhere"])
def test_no_warning_when_the_workers_import_the_drivers_windowlib(tmp_path: Path, where):
    cwd = REPO if where == "repo" else tmp_path
    assert _code_source(cwd, tmp_path) == f"windowlib from {REPO / 'windowlib'}"
