"""The demo's workspace: one local folder, a clean start, the optional local S3 server and the
Airflow home (``jobs/demo.py``).

Invariants:

* Everything lives under one local folder (default ``.local/demo``); with S3 the lake is
  ``s3://windowlib-demo/lake`` on a SeaweedFS server whose data directory is inside that folder.
* A folder is only ever cleaned when it carries the marker ``.windowlib-demo`` (written when
  the demo creates it); a foreign non-empty folder is refused (``DEMO_ROOT_FOREIGN``).
* Starting over removes the lake's state (checkpoints, outputs, reports, Data Docs), the
  correction files a previous demo landed and the Airflow home — together, so the lake and the
  checkpoints never disagree. The flights data build itself is kept (cached by parameters).
* Airflow's environment is set here before anything imports Airflow.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from windowlib.core.errors import DefinitionError, ExecutionError
from windowlib.state.uri import Uri

REPO = Path(__file__).resolve().parent.parent
MARKER = ".windowlib-demo"
BUCKET = "windowlib-demo"
STATE_PREFIXES = ("_windowlib", "windows")


@dataclass
class Workspace:
    """Where the demo writes; ``root`` is the lake URI the DAGs get as their ``root`` Param."""

    local: Path
    s3: bool = False
    server: Any = field(default=None, repr=False)

    @property
    def root(self) -> str:
        return f"s3://{BUCKET}/lake" if self.s3 else str(Uri.from_path(self.local / "lake"))

    @property
    def airflow_home(self) -> Path:
        return self.local / "airflow"

    @property
    def log_path(self) -> Path:
        return self.local / "demo.log"

    def report_path(self, name: str) -> Path:
        """The local HTML run report of pipeline ``name`` (a copy when the lake is on S3)."""
        if self.s3:
            return self.local / "reports" / f"{name}.html"
        return self.local / "lake" / "_windowlib" / "reports" / f"{name}.html"

    def data_docs(self, name: str) -> Path:
        if self.s3:
            return self.local / "quality" / name / "index.html"
        return self.local / "lake" / "_windowlib" / "quality" / name / "index.html"


def prepare(local: str | os.PathLike[str], s3: bool) -> Workspace:
    """Create (or adopt) the demo folder; refuse a foreign non-empty one."""
    path = Path(local).expanduser().absolute()
    if ".." in path.parts:
        raise DefinitionError(f"--root must not contain '..': {local}", code="ARGUMENT_INVALID")
    if path.exists() and not path.is_dir():
        raise DefinitionError(f"--root {path} is a file, not a folder", code="ARGUMENT_INVALID")
    if path.exists() and any(path.iterdir()) and not (path / MARKER).exists():
        raise DefinitionError(f"{path} exists, is not empty and was not created by the demo "
                              f"(no {MARKER}); choose another --root", code="DEMO_ROOT_FOREIGN")
    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text("created by `make demo` (jobs/demo.py); safe to delete\n")
    return Workspace(path, s3=s3)


def start_s3(ws: Workspace) -> None:
    """Start SeaweedFS on a free loopback port (data in ``{local}/s3``), create the bucket and
    point the standard ``AWS_*`` variables at it (before Spark starts: its workers inherit them)."""
    from infra.local_s3 import LocalSeaweed

    server = LocalSeaweed(data_dir=ws.local / "s3", log_path=ws.local / "weed.log",
                          buckets=(BUCKET,))
    server.start()
    ws.server = server
    os.environ.update(server.env())


def stop_s3(ws: Workspace) -> None:
    if ws.server is not None:
        ws.server.stop()
        ws.server = None


def start_over(ws: Workspace) -> list[str]:
    """Remove the previous demo's state, landed corrections and Airflow home; returns the
    correction files removed. The data build stays (``build_history`` reuses it)."""
    from jobs.flights import remove_corrections

    if ws.s3:
        from windowlib.state.stores import delete_location

        for prefix in STATE_PREFIXES:      # S3 settings from the server's AWS_* environment
            delete_location(f"{ws.root}/{prefix}")
        for folder in ("reports", "quality"):
            shutil.rmtree(ws.local / folder, ignore_errors=True)
    else:
        for prefix in STATE_PREFIXES:
            shutil.rmtree(ws.local / "lake" / prefix, ignore_errors=True)
    shutil.rmtree(ws.airflow_home, ignore_errors=True)
    return remove_corrections(ws.root)


def airflow_env(ws: Workspace, start_date: str) -> dict[str, str]:
    """The environment of the in-process Airflow (``dag.test()``) and of ``airflow db``."""
    env = {
        "AIRFLOW_HOME": str(ws.airflow_home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAG_IGNORE_FILE_SYNTAX": "regexp",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "WINDOWLIB_ROOT": ws.root,
        "WINDOWLIB_DAG_START_DATE": start_date,
        "WINDOWLIB_RETRY_DELAY_SECONDS": "1",
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "PYSPARK_DRIVER_PYTHON": os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable),
        "SPARK_LOCAL_IP": "127.0.0.1",
        # Airflow 3.3's dag.test() cannot run DAGs with deadline alerts (dags/_windowlib_ops.py)
        "WINDOWLIB_DEADLINE_ALERTS": "off",
    }
    if ws.s3:
        env["WINDOWLIB_DATA_DOCS_DIR"] = str(ws.local / "quality")
    return env


def setup_airflow(ws: Workspace, start_date: str) -> None:
    """Set Airflow's environment in this process (before Airflow is imported) and migrate its
    metadata database (SQLite in the demo's Airflow home)."""
    if "airflow" in sys.modules:
        raise ExecutionError("Airflow was imported before the demo configured it; run the demo "
                             "as its own process (python -m jobs.demo)", code="DEMO_SETUP")
    env = airflow_env(ws, start_date)
    os.environ.update(env)
    for name in ("WINDOWLIB_SPARK_CONN_ID", "WINDOWLIB_REGISTRY"):
        os.environ.pop(name, None)   # the demo runs the registered jobs in-process
    ws.airflow_home.mkdir(parents=True, exist_ok=True)
    airflow = Path(sys.executable).parent / "airflow"
    with open(ws.log_path, "ab") as log:
        done = subprocess.run([str(airflow), "db", "migrate"], env=dict(os.environ),
                              stdout=log, stderr=subprocess.STDOUT, timeout=900)
    if done.returncode != 0:
        raise ExecutionError(f"`airflow db migrate` failed (exit {done.returncode}); see "
                             f"{ws.log_path}", code="DEMO_SETUP")
    for path in (str(REPO / "dags"), str(REPO)):
        if path not in sys.path:
            sys.path.insert(0, path)


def copy_reports(ws: Workspace, names: list[str]) -> None:
    """With S3: download each pipeline's HTML report next to the local Data Docs."""
    if not ws.s3:
        return
    from windowlib.state.stores import open_store

    store = open_store(f"{ws.root}/_windowlib/reports")
    for name in names:
        data = store.read_bytes(f"{name}.html")
        if data is not None:
            target = ws.report_path(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


__all__ = ["BUCKET", "Workspace", "airflow_env", "copy_reports", "prepare", "setup_airflow",
           "start_over", "start_s3", "stop_s3"]
