"""A pipeline DAG run whose tasks are thin Spark Connect clients: a real local Spark Connect
server (``infra.spark_connect``) on 127.0.0.1, named by an Airflow
``spark_connect`` connection (``WINDOWLIB_SPARK_CONNECT_CONN_ID``); ``dag.test()`` runs the
whole write-audit-publish chain through it and publishes, the run and audit tasks in one
server session, and every next run of the DAG goes on in that session (its Python workers are
already started) — the third too, when more than one earlier run has handed it on."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]


def test_pipeline_dag_runs_over_a_spark_connect_server(airflow_db, pipelines_module,
                                                       backfill_module, tmp_path, monkeypatch):
    from infra.spark_connect import start_connect_server
    from jobs.registry import get
    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib.engines.spark import session as sessions
    from windowlib.runs.status import job_status, run_history

    lake = tmp_path / "lake"
    write_synthetic(lake / DATA_PATH, hours=3, events_per_hour=40)
    server = start_connect_server(conf={"spark.sql.shuffle.partitions": "1"})
    try:
        host, port = server.url[len("sc://"):].split(":")
        monkeypatch.setenv("AIRFLOW_CONN_WL_SPARK_CONNECT", json.dumps(
            {"conn_type": "spark_connect", "host": host, "port": int(port)}))
        monkeypatch.setenv("WINDOWLIB_SPARK_CONNECT_CONN_ID", "wl_spark_connect")
        monkeypatch.setenv("SPARK_REMOTE", "")   # unset; restored after the task exports it
        first = _run_dag(pipelines_module, datetime(2024, 3, 1, 1, tzinfo=UTC), lake)
        # the tasks went through the connection's server, not a local session, and the run
        # and audit tasks shared ONE server session (its Python workers start once per run)
        remote = [url for url, s in sessions._REMOTE_SESSIONS.items() if not s.is_stopped]
        assert remote and all(url.startswith(server.url) for url in remote), remote
        shared = first["run"]["spark_session"]
        assert first["audit"]["spark_session"] == shared
        assert remote == [f"{server.url}/;session_id={shared}"], remote
        # the DAG's next run (a new process in production: no exported URL) takes the
        # session its previous run handed on
        monkeypatch.setenv("SPARK_REMOTE", "")
        second = _run_dag(pipelines_module, datetime(2024, 3, 1, 2, tzinfo=UTC), lake)
        assert second["run"]["spark_session"] == second["audit"]["spark_session"] == shared
        # and so does the one after: two earlier runs handed the session on by now, and the
        # latest one's counts (a pull of every earlier run's XCom would give a list)
        monkeypatch.setenv("SPARK_REMOTE", "")
        third = _run_dag(pipelines_module, datetime(2024, 3, 1, 3, tzinfo=UTC), lake)
        assert third["run"]["spark_session"] == third["audit"]["spark_session"] == shared
        job = get("clickstream_demo")
        status = job_status(job, lake.as_uri())
        assert status["version"] == 3 and status["files_consumed_total"] == 3
        last = run_history(job, lake.as_uri())[-1]
        assert last["validation"]["success"] is True and last["firings"] > 0
        # windowlib_backfill's runs chain their own session the same way
        handed = [_backfill(backfill_module, datetime(2024, 3, 2, hour, tzinfo=UTC), lake)
                  for hour in (1, 2, 3)]
        assert handed[0] and handed[0] == handed[1] == handed[2] != shared, handed
    finally:
        sessions.stop_remote_sessions()
        server.stop()


def _run_dag(pipelines_module, at: datetime, lake) -> dict[str, dict]:
    """Run the demo DAG for the hour ending ``at``; its tasks' return values by task id."""
    dr = pipelines_module.windowlib_clickstream_demo.test(
        logical_date=at, run_after=at, run_conf={"root": lake.as_uri()})
    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert str(dr.state) == "success", states
    assert set(states.values()) == {"success"}, states
    return _return_values(dr.dag_id, dr.run_id)


def _backfill(backfill_module, at: datetime, lake) -> str:
    """Run ``windowlib_backfill`` over the demo's first hour (nothing new by then); the Spark
    Connect session its ``backfill`` task handed on."""
    import os

    os.environ["SPARK_REMOTE"] = ""      # a new task process: no exported URL
    dr = backfill_module.dag.test(logical_date=at, run_after=at, run_conf={
        "pipeline": "clickstream_demo", "first": "2024-03-01T00", "last": "2024-03-01T00",
        "root": lake.as_uri()})
    assert str(dr.state) == "success", {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    handed = _xcoms(dr.dag_id, dr.run_id, "spark_connect_session")["backfill"]
    assert set(handed) == {"session", "code"}, handed
    return handed["session"]


def _return_values(dag_id: str, run_id: str) -> dict[str, dict]:
    return _xcoms(dag_id, run_id, "return_value")


def _xcoms(dag_id: str, run_id: str, key: str) -> dict[str, Any]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.scalars(select(XComModel).where(
            XComModel.dag_id == dag_id, XComModel.run_id == run_id,
            XComModel.key == key)).all()
        return {row.task_id: XComModel.deserialize_value(row) for row in rows}
