"""The Airflow tests' environment, set when this module is first imported (before Airflow is):
one temporary ``AIRFLOW_HOME`` per test session, the repo's ``dags/`` as DAGS_FOLDER,
``WINDOWLIB_ROOT`` at a temporary lake. A plain module (not ``conftest``) so that test modules
can import ``REPO``/``DAGS``/``subprocess_env`` whatever other conftest files are loaded."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
HERE = Path(__file__).resolve().parent
HOME = Path(tempfile.mkdtemp(prefix="wl-airflow-home-"))
atexit.register(shutil.rmtree, HOME, True)

AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(HOME),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAG_IGNORE_FILE_SYNTAX": "regexp",
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "WINDOWLIB_ROOT": (HOME / "lake").as_uri(),
    "WINDOWLIB_RETRY_DELAY_SECONDS": "1",
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
    "SPARK_LOCAL_IP": "127.0.0.1",
    # dag.test() of Airflow 3.3 cannot run DAGs with deadline alerts (dags/_windowlib_ops.py);
    # the real services (test_services_e2e) turn them back on
    "WINDOWLIB_DEADLINE_ALERTS": "off",
    # the OpenLineage provider's file transport: every task's events, one JSON per line
    # (tests/airflow/wl_lineage.py reads them; docs/lineage.md)
    "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
        {"type": "file", "log_file_path": str(HOME / "lineage.jsonl"), "append": True}),
    "AIRFLOW__OPENLINEAGE__NAMESPACE": "windowlib-tests",
    # in a thread, not a forked child: a fork shares the task's py4j socket with Spark's JVM
    # (measured: py4j "Connection reset by peer" mid-run when forking; docs/lineage.md)
    "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
}
LINEAGE_EVENTS = HOME / "lineage.jsonl"
os.environ.update(AIRFLOW_ENV)
for _name in ("SPARK_REMOTE", "WINDOWLIB_SPARK_CONN_ID", "WINDOWLIB_REGISTRY"):
    os.environ.pop(_name, None)
for _path in (str(DAGS), str(DAGS / "plugins"), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **AIRFLOW_ENV, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(DAGS), str(HERE), str(REPO),
                                         env.get("PYTHONPATH", "")])
    return env
