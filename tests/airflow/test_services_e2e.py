"""The real services: Airflow 3 api-server, scheduler and dag-processor on 127.0.0.1
(``infra/airflow_services.py``), a scheduled catch-up run of ``windowlib_clickstream_demo``,
a run of ``windowlib_backfill`` triggered through REST API v2 and an Airflow-native backfill
(dry run) through REST, all waited for; every service is stopped at the end."""

from __future__ import annotations

import json
import socket
import sys
import time
import urllib.request

import pytest
from conftest import HERE, REPO

pytestmark = [pytest.mark.e2e, pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]
sys.path.insert(0, str(REPO / "infra"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(services, token: str, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        f"{services.url}/api/v2{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read() or b"{}")


def _wait_run(services, token, dag_id: str, run_id: str | None, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run_id is None:
            runs = _api(services, token, "GET", f"/dags/{dag_id}/dagRuns")["dag_runs"]
            run = runs[0] if runs else {"state": "none"}
        else:
            run = _api(services, token, "GET", f"/dags/{dag_id}/dagRuns/{run_id}")
        if run["state"] in ("success", "failed"):
            return run
        time.sleep(5)
    raise TimeoutError(f"{dag_id} run {run_id} not finished after {timeout} s")


def test_services_run_a_scheduled_dag_and_a_rest_triggered_backfill(tmp_path):
    import airflow_services

    from jobs.synthetic import DATA_PATH, write_synthetic

    lake = tmp_path / "lake"
    write_synthetic(lake / DATA_PATH, hours=2, events_per_hour=40)
    extra = {"WINDOWLIB_REGISTRY": "wl_single_registry",
             "PYTHONPATH": f"{HERE}:{REPO}",
             "WINDOWLIB_DAG_START_DATE": "2024-03-01T00:00:00+00:00",
             "WINDOWLIB_DAG_END_DATE": "2024-03-01T00:00:00+00:00"}
    services = airflow_services.start(tmp_path / "home", _free_port(), lake.as_uri(),
                                      timeout=900, extra_env=extra)
    try:
        token = services.token()
        # the scheduler catches up the one interval [00:00, 01:00) between start and end date
        run = _wait_run(services, token, "windowlib_clickstream_demo", None, 1800)
        assert run["state"] == "success", run
        # the backfill DAG, triggered with a Params form payload (validated server-side)
        created = _api(services, token, "POST", "/dags/windowlib_backfill/dagRuns", {
            "logical_date": None, "conf": {"pipeline": "clickstream_demo",
                                           "first": "2024-03-01T00", "last": "2024-03-01T01",
                                           "mode": "incremental", "dry_run": False}})
        run = _wait_run(services, token, "windowlib_backfill", created["dag_run_id"], 1800)
        assert run["state"] == "success", run
        xcom = _api(services, token, "GET", f"/dags/windowlib_backfill/dagRuns/"
                    f"{created['dag_run_id']}/taskInstances/backfill/xcomEntries/return_value")
        value = xcom["value"] if isinstance(xcom["value"], dict) else json.loads(xcom["value"])
        assert value["status"] == "published" and value["partitions"] == ["2024-03-01T01"]
        # Airflow-native backfill on a pipeline DAG (dry run: the runs it would create)
        dry = _api(services, token, "POST", "/backfills/dry_run", {
            "dag_id": "windowlib_clickstream_demo", "from_date": "2024-03-01T00:00:00Z",
            "to_date": "2024-03-01T00:00:00Z", "max_active_runs": 1,
            "reprocess_behavior": "completed"})
        assert dry["total_entries"] >= 1
    finally:
        services.stop()
    assert all(p.poll() is not None for p in services.processes.values())
