"""Fixtures of the Airflow tests: ``airflow db migrate`` once into the session's temporary
``AIRFLOW_HOME`` (set up by ``wl_airflow_env`` before Airflow is imported), and the DAG modules
imported from the repo's ``dags/``. ``WINDOWLIB_ROOT`` points at a temporary lake so nothing
touches the project's ``.local/lake``; each test passes its own ``root`` Param anyway."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from wl_airflow_env import HOME as _HOME
from wl_airflow_env import subprocess_env


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
