"""The real services: Airflow 3 api-server, scheduler and dag-processor on 127.0.0.1
(``infra/airflow_services.py``), started once for this module (``services`` fixture):

* a scheduled catch-up run of ``windowlib_clickstream_demo``, a run of ``windowlib_backfill``
  triggered through REST API v2 and an Airflow-native backfill (dry run) through REST, all
  waited for;
* a browser test: headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright,
  which never downloads a browser) logs in, opens the backfill DAG's Trigger dialog, fills the
  Params form and starts the run; the REST API must then show that run, with the typed values
  as its conf, succeeded (screenshots under the test's tmp dir).

Every service is stopped at the end of the module."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import HERE, REPO

pytestmark = [pytest.mark.e2e, pytest.mark.airflow, pytest.mark.slow]
sys.path.insert(0, str(REPO / "infra"))
CHROMIUM = "/usr/bin/chromium"
# the flags NOTES.md found to work on these machines (the user-data dir is fresh per test)
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


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


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    """Airflow services over a two-hour synthetic lake; catch-up covers [00:00, 01:00) only."""
    import airflow_services

    from jobs.synthetic import DATA_PATH, write_synthetic

    base = tmp_path_factory.mktemp("airflow-services")
    lake = base / "lake"
    write_synthetic(lake / DATA_PATH, hours=2, events_per_hour=40)
    extra = {"WINDOWLIB_REGISTRY": "wl_single_registry",
             "PYTHONPATH": f"{HERE}:{REPO}",
             "WINDOWLIB_DAG_START_DATE": "2024-03-01T00:00:00+00:00",
             "WINDOWLIB_DAG_END_DATE": "2024-03-01T00:00:00+00:00"}
    running = airflow_services.start(base / "home", _free_port(), lake.as_uri(),
                                     timeout=900, extra_env=extra)
    try:
        yield running
    finally:
        running.stop()
    assert all(p.poll() is not None for p in running.processes.values())
    # task processes (own process groups inside the services' sessions) are gone too
    assert airflow_services._session_groups({p.pid for p in running.processes.values()}) == set()


def _xcom(services, token: str, dag_id: str, run_id: str, task_id: str) -> dict:
    xcom = _api(services, token, "GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/"
                f"{task_id}/xcomEntries/return_value")
    return xcom["value"] if isinstance(xcom["value"], dict) else json.loads(xcom["value"])


@pytest.mark.spark
def test_services_run_a_scheduled_dag_and_a_rest_triggered_backfill(services):
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
    value = _xcom(services, token, "windowlib_backfill", created["dag_run_id"], "backfill")
    assert value["status"] == "published" and value["partitions"] == ["2024-03-01T01"]
    # Airflow-native backfill on a pipeline DAG (dry run: the runs it would create)
    dry = _api(services, token, "POST", "/backfills/dry_run", {
        "dag_id": "windowlib_clickstream_demo", "from_date": "2024-03-01T00:00:00Z",
        "to_date": "2024-03-01T00:00:00Z", "max_active_runs": 1,
        "reprocess_behavior": "completed"})
    assert dry["total_entries"] >= 1


def _browser_or_skip() -> None:
    """Skip locally when the browser is missing; in CI (``CI`` set) a missing browser fails."""
    missing = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing = "playwright is not installed (dev extra)"
    if missing is None and not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        missing = "Debian's chromium is not installed (infra/bootstrap.sh installs it)"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run in CI: {missing}")
        pytest.skip(missing)


def test_browser_fills_the_backfill_params_form_and_the_run_succeeds(services, tmp_path):
    _browser_or_skip()
    from playwright.sync_api import expect, sync_playwright

    token = services.token()
    before = {r["dag_run_id"] for r in _api(services, token, "GET",
                                            "/dags/windowlib_backfill/dagRuns")["dag_runs"]}
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000})
        try:
            page = browser.new_page()
            page.set_default_timeout(120_000)          # a loaded 2-core machine
            page.goto(f"{services.url}/auth/login?next=%2Fdags%2Fwindowlib_backfill")
            page.locator("input[name=username]").fill(services.username)
            page.locator("input[name=password]").fill(services.password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url("**/dags/windowlib_backfill")
            page.get_by_role("button", name="Trigger").first.click()
            form = page.get_by_role("dialog")
            expect(form.get_by_text("Run Parameters")).to_be_visible()
            form.get_by_role("combobox", name="pipeline").click()
            page.get_by_role("option", name="clickstream_demo").click()
            form.locator("input[name=element_first]").fill("2024-03-01T00")
            form.locator("input[name=element_last]").fill("2024-03-01T01")
            form.get_by_role("combobox", name="mode").click()
            page.get_by_role("option", name="rebuild").click()
            form.locator("#switch\\:element_dry_run").click()
            expect(form.locator("input[name=element_mode]")).to_have_value("rebuild")
            expect(form.locator("input[name=element_dry_run]")).to_be_checked()
            page.screenshot(path=str(tmp_path / "trigger-form.png"), full_page=True)
            form.get_by_test_id("trigger-dag-submit").click()
            expect(page.get_by_text("Dag Run Triggered")).to_be_visible()
            page.screenshot(path=str(tmp_path / "triggered.png"), full_page=True)
        finally:
            browser.close()
    runs = _api(services, token, "GET", "/dags/windowlib_backfill/dagRuns")["dag_runs"]
    new = [r for r in runs if r["dag_run_id"] not in before]
    assert len(new) == 1, new
    assert new[0]["triggered_by"] == "ui" and new[0]["conf"] == {
        "pipeline": "clickstream_demo", "first": "2024-03-01T00", "last": "2024-03-01T01",
        "mode": "rebuild", "dry_run": True, "root": None}
    run = _wait_run(services, token, "windowlib_backfill", new[0]["dag_run_id"], 1800)
    assert run["state"] == "success", run
    value = _xcom(services, token, "windowlib_backfill", new[0]["dag_run_id"], "backfill")
    assert value["status"] == "dry_run" and value["mode"] == "rebuild"
    assert value["partitions"] == ["2024-03-01T00", "2024-03-01T01"]
    assert value["files_consumed"] == 2
    assert (tmp_path / "triggered.png").stat().st_size > 0
