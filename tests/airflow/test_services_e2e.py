"""The real services: Airflow 3 api-server, scheduler and dag-processor on 127.0.0.1
(``infra/airflow_services.py``), started once for this module (``services`` fixture) over a
two-hour synthetic lake and the test registry ``wl_single_registry`` (two pipeline DAGs):

* a scheduled catch-up run of ``windowlib_clickstream_demo`` (its one interval [00:00, 01:00))
  and a run of ``windowlib_backfill`` triggered through REST API v2, all waited for; backfill
  dry runs show how an Airflow-native backfill treats the existing scheduled run
  (``reprocess_behavior``);
* a real Airflow-native backfill (``POST /api/v2/backfills``, ``max_active_runs=1``) of
  ``windowlib_clickstream_history`` over two hourly intervals. That DAG's schedule starts in
  2100, so every run of it is a backfill run: one backfill run per interval, all succeed,
  logical dates ascending, one at a time in order (run i+1 starts after run i ends), and each
  run did its interval's work — its ``plan``/``publish`` XComs name the partitions it scanned
  and consumed, and the pipeline's checkpoint in the lake holds exactly those two commits, in
  that order;
  each backfill run's ``publish`` emitted the pipeline's output Asset event, each run missed
  its 5 s deadline and the scheduler's deadline alert reached the notifier naming the run, and
  the real task logs of ``run``/``audit`` have one summary line each, no GX registration noise
  and nothing at ERROR;
* a browser test: headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright,
  which never downloads a browser) logs in, opens the backfill DAG's Trigger dialog, fills the
  Params form and starts a real backfill (over a re-delivered file); once the REST API shows
  it succeeded with the typed values as its conf, the DAG run page's "windowlib report" tab
  shows the regenerated report naming this run, its "Data Docs" tab opens GX's Data Docs, and
  the pipeline's output Asset page lists the backfill's event (screenshots under the test's
  tmp dir).

Every service is stopped at the end of the module."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.request
import warnings
from datetime import datetime
from pathlib import Path

import pytest
from wl_airflow_env import HERE, REPO

pytestmark = [pytest.mark.e2e, pytest.mark.airflow, pytest.mark.slow]
CHROMIUM = "/usr/bin/chromium"
HISTORY_DAG = "windowlib_clickstream_history"  # see wl_single_registry: backfill runs only
# the flags NOTES.md found to work on these machines (the user-data dir is fresh per test)
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


TRANSIENT = (500, 502, 503, 504)


class TransientAPIError(AssertionError):
    """A call that still failed with a 5xx or a timeout after its attempts."""


def _api(services, token: str, method: str, path: str, body: dict | None = None, *,
         attempts: int | None = None) -> dict:
    """One REST v2 call. Reads and dry runs (idempotent) are retried on transient failures
    (5xx, timeouts: a 2-core machine running Spark beside the services); other calls are
    tried once unless ``attempts`` says otherwise. Failures name the API's own message."""
    if attempts is None:
        attempts = 4 if method == "GET" or path.endswith("/dry_run") else 1
    for attempt in range(1, attempts + 1):
        req = urllib.request.Request(
            f"{services.url}/api/v2{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = f"{method} {path}: HTTP {exc.code} {exc.read()[:2000]!r}"
            if exc.code not in TRANSIENT:
                raise AssertionError(detail) from exc
            if attempt == attempts:
                raise TransientAPIError(detail) from exc
        except (TimeoutError, urllib.error.URLError) as exc:
            detail = f"{method} {path}: {exc!r}"
            if attempt == attempts:
                raise TransientAPIError(detail) from exc
        services.check_alive()  # a dead api-server fails now, not after every retry
        print(f"retrying after a transient failure: {detail}", file=sys.stderr)
        time.sleep(5 * attempt)
    raise AssertionError("unreachable")


def _when(text: str | None) -> datetime:
    assert text, "the API returned no timestamp"
    return datetime.fromisoformat(text)


def _wait_run(services, token, dag_id: str, run_id: str | None, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        services.check_alive()  # a crashed service fails within one poll, with its log's tail
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
    from infra import airflow_services
    from infra.ports import free_port
    from jobs.synthetic import DATA_PATH, write_synthetic

    base = tmp_path_factory.mktemp("airflow-services")
    lake = base / "lake"
    write_synthetic(lake / DATA_PATH, hours=2, events_per_hour=40)
    extra = {"WINDOWLIB_REGISTRY": "wl_single_registry",
             # + the preload hook (infra/airflow_settings): tasks inherit GX, Spark, windowlib
             "PYTHONPATH": os.pathsep.join(map(str, (HERE, REPO, airflow_services.SETTINGS))),
             "WINDOWLIB_DAG_START_DATE": "2024-03-01T00:00:00+00:00",
             "WINDOWLIB_DAG_END_DATE": "2024-03-01T00:00:00+00:00",
             # the real scheduler runs the pipelines' deadline alerts (dag.test() cannot);
             # the notifier writes each event to a file the tests read
             "WINDOWLIB_DEADLINE_ALERTS": "on",
             "WINDOWLIB_NOTIFIER": "wl_notifier:record",
             "WL_NOTIFIER_FILE": str(base / "alerts.jsonl")}
    running = airflow_services.start(base / "home", free_port(), lake.as_uri(),
                                     timeout=900, extra_env=extra)
    try:
        yield running
    finally:
        running.stop()
    assert all(p.poll() is not None for p in running.processes.values())
    # task processes (own process groups inside the services' sessions) are gone too
    assert airflow_services._session_groups(running.sessions) == set()
    for restart in running.restarts:  # an upstream race the supervisor absorbed: visible
        warnings.warn(f"restarted during the e2e tests: {restart.report}", stacklevel=1)


def _xcom(services, token: str, dag_id: str, run_id: str, task_id: str) -> dict:
    xcom = _api(services, token, "GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/"
                f"{task_id}/xcomEntries/return_value")
    return xcom["value"] if isinstance(xcom["value"], dict) else json.loads(xcom["value"])


@pytest.mark.spark
@pytest.mark.usefixtures("history_backfill")  # started early: its runs overlap these
def test_services_run_a_scheduled_dag_and_a_rest_triggered_backfill(services):
    token = services.token()
    # the scheduler catches up the one interval [00:00, 01:00) between start and end date
    run = _wait_run(services, token, "windowlib_clickstream_demo", None, 1800)
    assert run["state"] == "success", run
    # the scheduler imported every task module once, for the task processes it forks
    log = (services.home / "logs" / "scheduler.log").read_text(errors="replace")
    assert re.search(r"windowlib preload: (\d+) of \1 modules", log), log[-3000:]
    # the backfill DAG, triggered with a Params form payload (validated server-side)
    created = _api(services, token, "POST", "/dags/windowlib_backfill/dagRuns", {
        "logical_date": None, "conf": {"pipeline": "clickstream_demo",
                                       "first": "2024-03-01T00", "last": "2024-03-01T01",
                                       "mode": "incremental", "dry_run": False}})
    run = _wait_run(services, token, "windowlib_backfill", created["dag_run_id"], 1800)
    assert run["state"] == "success", run
    value = _xcom(services, token, "windowlib_backfill", created["dag_run_id"], "backfill")
    assert value["status"] == "published" and value["partitions"] == ["2024-03-01T01"]
    # Airflow-native backfill over the scheduled interval: an existing successful run is only
    # re-run when reprocess_behavior says so (dry runs: the runs it would create)
    body = {"dag_id": "windowlib_clickstream_demo", "from_date": "2024-03-01T00:00:00Z",
            "to_date": "2024-03-01T00:00:00Z", "max_active_runs": 1}
    none = _api(services, token, "POST", "/backfills/dry_run",
                {**body, "reprocess_behavior": "none"})
    completed = _api(services, token, "POST", "/backfills/dry_run",
                     {**body, "reprocess_behavior": "completed"})
    assert none["total_entries"] == 0, none
    assert [_when(b["logical_date"]) for b in completed["backfills"]] == [
        _when("2024-03-01T00:00:00+00:00")]


HISTORY_HOURS = ["2024-03-01T00", "2024-03-01T01"]
HISTORY_BACKFILL = {"dag_id": HISTORY_DAG, "from_date": "2024-03-01T00:00:00Z",
                    "to_date": "2024-03-01T01:00:00Z", "run_backwards": False,
                    "dag_run_conf": {}, "reprocess_behavior": "none", "max_active_runs": 1}


@pytest.fixture(scope="module")
def history_backfill(services) -> dict:
    """The Airflow-native backfill of ``windowlib_clickstream_history`` over two hourly
    intervals, created through REST as soon as the services are up (the first test requests
    it), so its runs overlap the other tests' runs; its own runs still go one at a time."""
    token = services.token()
    deadline = time.monotonic() + 600  # "healthy" does not wait for the dag-processor
    while True:
        services.check_alive()
        if dags := _api(services, token, "GET", f"/dags?dag_id_pattern={HISTORY_DAG}")["dags"]:
            break
        assert time.monotonic() < deadline, f"{HISTORY_DAG} not parsed after 600 s"
        time.sleep(2)
    assert dags[0]["dag_id"] == HISTORY_DAG and not dags[0]["is_paused"], dags
    dry = _api(services, token, "POST", "/backfills/dry_run", HISTORY_BACKFILL)
    assert [_when(b["logical_date"]) for b in dry["backfills"]] == [
        _when(f"{h}:00:00+00:00") for h in HISTORY_HOURS]
    for attempt in range(6):   # a loaded 2-core machine: the API answers 503 for a while
        try:
            return _api(services, token, "POST", "/backfills", HISTORY_BACKFILL)
        except TransientAPIError:
            # a create that timed out or failed transiently may still have been committed:
            # take that backfill rather than asking for a second one
            existing = _api(services, token, "GET", f"/backfills?dag_id={HISTORY_DAG}")
            if existing.get("backfills"):
                return existing["backfills"][0]
            if attempt == 5:
                raise
            time.sleep(10 * (attempt + 1))
    raise AssertionError("unreachable")


def _wait_backfill(services, token, backfill_id: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        services.check_alive()
        backfill = _api(services, token, "GET", f"/backfills/{backfill_id}")
        if backfill["completed_at"] is not None:
            return backfill
        time.sleep(5)
    raise TimeoutError(f"backfill {backfill_id} not completed after {timeout} s")


@pytest.mark.spark
def test_native_backfill_runs_each_interval_once_in_order_and_does_the_work(services,
                                                                           history_backfill):
    from _windowlib_factory import run_key
    from wl_single_registry import HISTORY, get

    from windowlib.runs.status import job_status

    token = services.token()
    hours = HISTORY_HOURS
    expected = [_when(f"{h}:00:00+00:00") for h in hours]
    assert history_backfill["dag_id"] == HISTORY_DAG and history_backfill["max_active_runs"] == 1
    done = _wait_backfill(services, token, history_backfill["id"], 1800)
    assert done["completed_at"] is not None and done["is_paused"] is False

    runs = _api(services, token, "GET", f"/dags/{HISTORY_DAG}/dagRuns")["dag_runs"]
    # the DAG's schedule starts in 2100: every run is one of this backfill's
    assert sorted(r["run_type"] for r in runs) == ["backfill", "backfill"], runs
    runs.sort(key=lambda r: _when(r["logical_date"]))
    assert [_when(r["logical_date"]) for r in runs] == expected
    assert [r["state"] for r in runs] == ["success", "success"], runs
    assert [_when(r["data_interval_end"]) for r in runs] == [expected[1],
                                                              _when("2024-03-01T02:00:00Z")]
    first, second = runs
    assert _when(first["start_date"]) <= _when(first["end_date"]) \
        <= _when(second["start_date"]) <= _when(second["end_date"]), runs

    # each run did its interval's work: the plan scanned the interval plus the job's lookback of
    # one hour; publish committed the one new partition (the other was the earlier run's)
    scanned = [["2024-02-29T23", hours[0]], hours]
    for i, run in enumerate(runs):
        plan = _xcom(services, token, HISTORY_DAG, run["dag_run_id"], "plan")
        assert plan["partitions"] == scanned[i] and plan["plan"]["parent_version"] == (i or None)
        published = _xcom(services, token, HISTORY_DAG, run["dag_run_id"], "publish")
        assert published["status"] == "published" and published["version"] == i + 1, published
        assert published["partitions"] == [hours[i]] and published["files_consumed"] == 1
        assert published["inputs"] > 0 and published["firings"] > 0, published

    # and the lake agrees: the pipeline's checkpoint holds exactly these two commits, in order
    status = job_status(get(HISTORY), services.env["WINDOWLIB_ROOT"])
    assert status["version"] == 2 and status["files_consumed_total"] == 2, status
    assert [(c["version"], c["run_id"], c["files"]) for c in reversed(status["runs"])] == [
        (i + 1, f"{run_key(HISTORY_DAG, run['dag_run_id'])}@v{i}", 1)
        for i, run in enumerate(runs)]
    # the same backfill again creates nothing: both intervals have a successful run
    again = _api(services, token, "POST", "/backfills/dry_run", HISTORY_BACKFILL)
    assert again["total_entries"] == 0, again
    # each backfill run's publish emitted the pipeline's output Asset event, as scheduled runs do
    events = _api(services, token, "GET",
                  f"/assets/events?source_dag_id={HISTORY_DAG}&order_by=timestamp")
    extras = sorted((e["source_run_id"], e["extra"]["version"]) for e in events["asset_events"])
    assert extras == sorted((r["dag_run_id"], i + 1) for i, r in enumerate(runs)), events
    # each run missed its 5 s deadline: the scheduler's deadline alert called the notifier
    # with the run it was about (the callback runs on the executor, some time after the miss)
    _wait_deadline_alerts(services, {r["dag_run_id"] for r in runs})
    # a real task log (the supervisor's): one summary line for the stage, no GX registration
    # noise, nothing logged at ERROR (Spark's JVM stderr goes to the log at DEBUG/WARNING)
    for task_id in ("run", "audit"):
        log = _task_log(services, token, HISTORY_DAG, first["dag_run_id"], task_id)
        lines = [str(e.get("event", "")) for e in log]
        assert not [e for e in log if e.get("level") in ("error", "critical")], log
        assert not [t for t in lines if "Skipping registering function" in t]
        assert sum(t.startswith(f"windowlib {task_id} {HISTORY}:") for t in lines) == 1, lines


def _wait_deadline_alerts(services, run_ids: set[str], timeout: float = 300) -> None:
    from wl_single_registry import HISTORY, HISTORY_DEADLINE

    alerts = Path(services.env["WL_NOTIFIER_FILE"])
    deadline = time.monotonic() + timeout
    while True:
        services.check_alive()
        lines = alerts.read_text().splitlines() if alerts.exists() else []
        missed = [e for e in map(json.loads, lines) if e["kind"] == "deadline_missed"]
        if {e.get("run_id") for e in missed} >= run_ids or time.monotonic() > deadline:
            break
        time.sleep(5)
    mine = [e for e in missed if e.get("run_id") in run_ids]
    assert {e["run_id"] for e in mine} == run_ids, lines
    for event in mine:
        assert event["dag_id"] == HISTORY_DAG and event["pipeline"] == HISTORY, event
        assert event["limit"] == str(HISTORY_DEADLINE) and event["deadline"], event


def _task_log(services, token: str, dag_id: str, run_id: str, task_id: str) -> list[dict]:
    """The structured log of try 1 of a task instance (``content``: one dict per event)."""
    from urllib.parse import quote

    data = _api(services, token, "GET", f"/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/"
                f"taskInstances/{task_id}/logs/1?full_content=true")
    content = data.get("content") or []
    return [e if isinstance(e, dict) else {"event": str(e)} for e in content]


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


def _login(page, services, next_path: str) -> None:
    from urllib.parse import quote

    page.goto(f"{services.url}/auth/login?next={quote(next_path, safe='')}")
    page.locator("input[name=username]").fill(services.username)
    page.locator("input[name=password]").fill(services.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**{next_path}")


def _land_redelivery(services, partition: str) -> None:
    """A re-delivered file in an existing partition of the services' lake."""
    from datetime import UTC, timedelta

    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.synthetic import DATA_PATH
    from windowlib.state.uri import Uri

    start = datetime.strptime(partition, "%Y-%m-%dT%H").replace(tzinfo=UTC)
    n = 12
    table = pa.table({
        "event_id": pa.array([3_000_000_000 + i for i in range(n)], pa.int64()),
        "key": pa.array([f"user{i % 3}" for i in range(n)], pa.string()),
        "ts": pa.array([start + timedelta(minutes=40 + i) for i in range(n)],
                       pa.timestamp("ms", tz="UTC")),
        "value": pa.array([5] * n, pa.int64())})
    lake = Path(Uri.parse(services.env["WINDOWLIB_ROOT"]).arrow_path)
    pq.write_table(table, lake / DATA_PATH / f"arrival_hour={partition}" / "redelivered-ui.parquet")


def test_browser_backfill_from_the_form_updates_the_report_asset_and_links(services, tmp_path):
    """Issue 17: a real backfill (incremental, over a re-delivered file) triggered from the UI
    form; then, in the browser, the DAG run's "windowlib report" link shows the regenerated
    report naming this run, its "Data Docs" link opens GX's Data Docs, and the pipeline's
    output Asset lists the backfill's event."""
    _browser_or_skip()
    from playwright.sync_api import expect, sync_playwright

    token = services.token()
    before = {r["dag_run_id"] for r in _api(services, token, "GET",
                                            "/dags/windowlib_backfill/dagRuns")["dag_runs"]}
    _land_redelivery(services, "2024-03-01T01")   # new data for the backfill to publish
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000})
        try:
            page = browser.new_page()
            page.set_default_timeout(120_000)          # a loaded 2-core machine
            expect.set_options(timeout=120_000)        # expect() has its own 5 s default
            _login(page, services, "/dags/windowlib_backfill")
            page.get_by_role("button", name="Trigger").first.click()
            form = page.get_by_role("dialog")
            expect(form.get_by_text("Run Parameters")).to_be_visible()
            expect(form.get_by_text("First partition", exact=True)).to_be_visible()  # titles
            form.get_by_role("combobox", name="pipeline").click()
            page.get_by_role("option", name="clickstream_demo").click()
            form.locator("input[name=element_first]").fill("2024-03-01T00")
            form.locator("input[name=element_last]").fill("2024-03-01T01")
            expect(form.locator("input[name=element_mode]")).to_have_value("incremental")
            expect(form.locator("input[name=element_dry_run]")).not_to_be_checked()
            page.screenshot(path=str(shots / "trigger-form.png"), full_page=True)
            form.get_by_test_id("trigger-dag-submit").click()
            expect(page.get_by_text("Dag Run Triggered").first).to_be_visible()

            runs = _api(services, token, "GET", "/dags/windowlib_backfill/dagRuns")["dag_runs"]
            new = [r for r in runs if r["dag_run_id"] not in before]
            assert len(new) == 1, new
            run_id = new[0]["dag_run_id"]
            assert new[0]["triggered_by"] == "ui" and new[0]["conf"] == {
                "pipeline": "clickstream_demo", "first": "2024-03-01T00",
                "last": "2024-03-01T01", "mode": "incremental", "dry_run": False,
                "root": None}
            run = _wait_run(services, token, "windowlib_backfill", run_id, 1800)
            assert run["state"] == "success", run
            value = _xcom(services, token, "windowlib_backfill", run_id, "backfill")
            assert value["status"] == "published" and value["mode"] == "incremental", value
            assert "2024-03-01T01" in value["partitions"] and value["files_consumed"] >= 1
            key = value["run_id"]
            assert key.startswith("windowlib_backfill:")

            # the DAG run page: one click to the regenerated report, one to the Data Docs
            from urllib.parse import quote

            plugins = _api(services, token, "GET", "/plugins")["plugins"]
            assert "windowlib_links" in [p["name"] for p in plugins], plugins
            page.goto(f"{services.url}/dags/windowlib_backfill/runs/{quote(run_id, safe='')}")
            page.locator("a[href$='plugin/windowlib_report_dag_run']").first.click()
            report = page.frame_locator("iframe").first
            expect(report.get_by_text(key).first).to_be_visible()
            page.screenshot(path=str(shots / "report-link.png"), full_page=True)
            page.locator("a[href$='plugin/windowlib_docs_dag_run']").first.click()
            docs = page.frame_locator("iframe").first
            expect(docs.locator("body")).to_contain_text("Validation Results")
            page.screenshot(path=str(shots / "data-docs-link.png"), full_page=True)

            # the pipeline's output Asset lists the backfill's event
            page.goto(f"{services.url}/assets")
            page.get_by_role("link", name="windowlib_clickstream_demo_output").click()
            expect(page.get_by_text("windowlib_backfill").first).to_be_visible()
            page.screenshot(path=str(shots / "asset-events.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(shots / "failure.png"), full_page=True)
            (shots / "failure.html").write_text(page.content())
            raise
        finally:
            browser.close()
    events = _api(services, token, "GET", "/assets/events?source_dag_id=windowlib_backfill")
    mine = [e for e in events["asset_events"] if e["source_run_id"] == run_id]
    assert [e["extra"]["run_id"] for e in mine] == [key], events
    assert (shots / "asset-events.png").stat().st_size > 0
