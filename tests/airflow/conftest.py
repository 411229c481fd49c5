"""Fixtures of the Airflow tests: one temporary ``AIRFLOW_HOME`` per test session (set before
Airflow is imported), ``airflow db migrate`` once, the repo's ``dags/`` as DAGS_FOLDER, and the
DAG modules imported from it. ``WINDOWLIB_ROOT`` points at a temporary lake so nothing touches
the project's ``.local/lake``; each test passes its own ``root`` Param anyway."""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
HERE = Path(__file__).resolve().parent
_HOME = Path(tempfile.mkdtemp(prefix="wl-airflow-home-"))
atexit.register(shutil.rmtree, _HOME, True)

AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(_HOME),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "WINDOWLIB_ROOT": (_HOME / "lake").as_uri(),
    "WINDOWLIB_RETRY_DELAY_SECONDS": "1",
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
    "SPARK_LOCAL_IP": "127.0.0.1",
}
os.environ.update(AIRFLOW_ENV)
for _name in ("SPARK_REMOTE", "WINDOWLIB_SPARK_CONN_ID", "WINDOWLIB_REGISTRY"):
    os.environ.pop(_name, None)
for _path in (str(DAGS), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **AIRFLOW_ENV, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(DAGS), str(HERE), str(REPO),
                                         env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """``airflow db migrate`` once per session into the temporary home (SQLite)."""
    airflow = Path(sys.executable).parent / "airflow"
    done = subprocess.run([str(airflow), "db", "migrate"], env=subprocess_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return _HOME


@pytest.fixture(scope="session")
def pipelines_module():
    return importlib.import_module("windowlib_pipelines")


@pytest.fixture(scope="session")
def backfill_module():
    return importlib.import_module("windowlib_backfill")


@pytest.fixture(scope="session", autouse=True)
def _stop_spark_at_exit():
    """``dag.test()`` runs tasks in this process: stop the SparkSession they started."""
    yield
    if "pyspark" in sys.modules:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
