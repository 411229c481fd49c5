"""Airflow plugin: a pipeline's run report and Great Expectations Data Docs one click from a DAG
run or task instance in the Airflow UI, served by the Airflow API server itself.

Enabled by pointing ``AIRFLOW__CORE__PLUGINS_FOLDER`` at this folder (``infra/airflow.sh`` does).
Adds a FastAPI app at ``/windowlib`` and two UI links ("external views") on every DAG run and
task instance page: **windowlib report** and **Data Docs**.

Routes (all require a logged-in Airflow user — the UI's session cookie or a bearer token):

* ``/windowlib/report/{dag_id}/{run_id}`` — the HTML run report of that run's pipeline;
* ``/windowlib/docs/{dag_id}/{run_id}`` — redirects to ``/windowlib/docs/{pipeline}/index.html``;
* ``/windowlib/docs/{pipeline}/{path}`` — the Data Docs files (relative links work).

The pipeline of ``windowlib_{name}`` is ``name``; of a ``windowlib_backfill`` run, its conf's
``pipeline``. The lake root is the run's ``root`` conf when given, else ``$WINDOWLIB_ROOT``
(``_windowlib_factory.resolve_root``); Data Docs of an ``s3://`` root are served from
``$WINDOWLIB_DATA_DOCS_DIR/{pipeline}`` when set. Names and paths are validated (registered
pipelines only; path segments ``[A-Za-z0-9_.=:+@-]``, no ``..``, also when percent-encoded); files
are read through windowlib's object store, so ``file://`` and ``s3://`` lakes both work.
"""

from __future__ import annotations

import mimetypes
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from airflow.api_fastapi.core_api.security import requires_authenticated
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import RedirectResponse, Response

_DAGS = Path(__file__).resolve().parent.parent
if str(_DAGS) not in sys.path:
    sys.path.insert(0, str(_DAGS))

PREFIX = "/windowlib"
_SEGMENT = re.compile(r"[A-Za-z0-9_.=:+@-]+")   # GX file names carry run ids
app = FastAPI(title="windowlib reports", dependencies=[Depends(requires_authenticated())])


def _run_conf(dag_id: str, run_id: str) -> dict[str, Any]:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id,
                                                  DagRun.run_id == run_id))
        if run is None:
            raise HTTPException(404, f"no run {run_id!r} of DAG {dag_id!r}")
        return dict(run.conf or {})


def pipeline_of(dag_id: str, run_id: str) -> tuple[str, str]:
    """``(pipeline, root)`` of a windowlib DAG run; 404 for anything else."""
    from _windowlib_factory import registry_module, resolve_root

    conf = _run_conf(dag_id, run_id)
    name = conf.get("pipeline") if dag_id == "windowlib_backfill" else \
        dag_id.removeprefix("windowlib_")
    if not dag_id.startswith("windowlib_") or name not in registry_module().registry():
        raise HTTPException(404, f"{dag_id!r} is not a windowlib pipeline DAG")
    try:
        return str(name), resolve_root({"root": conf.get("root")})
    except Exception as exc:          # an invalid root in the conf: say so, never echo it
        raise HTTPException(400, "the run's root is not a valid lake URI") from exc


def _read(folder: str, key: str) -> bytes:
    from windowlib.state.stores import open_store

    data = open_store(folder).read_bytes(key)
    if data is None:
        raise HTTPException(404, f"{key} not found (has the pipeline run yet?)")
    return data


def _docs_folder(name: str, root: str) -> str:
    if root.startswith("file://"):
        return f"{root}/_windowlib/quality/{name}"
    local = os.environ.get("WINDOWLIB_DATA_DOCS_DIR")
    if not local:
        raise HTTPException(404, "Data Docs of an s3:// lake are kept locally only when "
                                 "WINDOWLIB_DATA_DOCS_DIR is set")
    return str(Path(local).resolve() / name)


@app.get("/report/{dag_id}/{run_id:path}")
def report(dag_id: str, run_id: str) -> Response:
    name, root = pipeline_of(dag_id, run_id)
    html = _read(f"{root}/_windowlib/reports", f"{name}.html")
    return Response(html, media_type="text/html; charset=utf-8")


@app.get("/docs/{dag_id}/{run_id:path}/index")
def docs_of_run(dag_id: str, run_id: str) -> RedirectResponse:
    name, _ = pipeline_of(dag_id, run_id)
    query = urlencode({"run": run_id, "dag": dag_id})     # run ids carry '+' and ':'
    return RedirectResponse(f"{PREFIX}/files/{name}/index.html?{query}", status_code=307)


@app.get("/files/{name}/{path:path}")
def docs_file(name: str, path: str, run: str | None = None, dag: str | None = None
              ) -> Response:
    from _windowlib_factory import registry_module, resolve_root

    if name not in registry_module().registry():
        raise HTTPException(404, f"unknown pipeline {name!r}")
    parts = path.split("/")
    if not path or any(p in ("", ".", "..") or not _SEGMENT.fullmatch(p) for p in parts):
        raise HTTPException(400, "invalid Data Docs path")
    root = pipeline_of(dag, run)[1] if dag and run else resolve_root(None)
    kind = mimetypes.guess_type(parts[-1])[0] or "application/octet-stream"
    return Response(_read(_docs_folder(name, root), path), media_type=kind)


class WindowlibLinksPlugin(AirflowPlugin):
    """The ``/windowlib`` app and its links on DAG run and task instance pages."""

    name = "windowlib_links"
    fastapi_apps = [{"app": app, "url_prefix": PREFIX, "name": "windowlib reports"}]
    external_views = [
        {"name": "windowlib report", "href": PREFIX + "/report/{DAG_ID}/{RUN_ID}",
         "destination": destination, "url_route": f"windowlib_report_{destination}"}
        for destination in ("dag_run", "task_instance")
    ] + [
        {"name": "Data Docs", "href": PREFIX + "/docs/{DAG_ID}/{RUN_ID}/index",
         "destination": destination, "url_route": f"windowlib_docs_{destination}"}
        for destination in ("dag_run", "task_instance")
    ]
