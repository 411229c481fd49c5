"""The operator's side of the DAGs with ``dag.test()`` and the real metadata DB (issue 17):

* a ``windowlib_backfill`` run regenerates the pipeline's HTML report and emits an event of the
  pipeline's output Asset with the same ``extra`` as a scheduled publish; a downstream DAG
  scheduled on that Asset is queued by it (``AssetDagRunQueue``);
* XCom holds one small summary object per task (no per-key rows);
* the task log has one ``windowlib <stage> <pipeline>:`` line per stage and none of GX's
  "Skipping registering function" lines."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime

import pytest
import wl_lineage

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

DOWNSTREAM = '''
from datetime import datetime, UTC
from airflow.sdk import DAG, task
from _windowlib_factory import output_asset

with DAG("wl_test_downstream", schedule=[output_asset("clickstream_demo")],
         start_date=datetime(2024, 1, 1, tzinfo=UTC)) as dag:
    @task
    def consume():
        return None
    consume()
'''


def _sync_downstream(folder) -> None:
    """Parse a downstream DAG file and write it to the metadata DB as the dag-processor would."""
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    folder.mkdir()
    (folder / "wl_test_downstream.py").write_text(DOWNSTREAM)
    bag = DagBag(dag_folder=str(folder), bundle_path=folder)
    assert bag.import_errors == {} and "wl_test_downstream" in bag.dags
    sync_bag_to_db(bag, "dags-folder", None)


def _xcom_rows(dag_id: str, run_id: str) -> list[tuple[str, str, int]]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(select(XComModel.task_id, XComModel.key, XComModel.value)
                               .where(XComModel.dag_id == dag_id,
                                      XComModel.run_id == run_id)).all()
    return [(t, k, len(v if isinstance(v, str | bytes) else json.dumps(v))) for t, k, v in rows]


def _asset_events(name: str) -> list:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        events = session.scalars(select(AssetEvent).join(AssetModel,
                                                         AssetEvent.asset_id == AssetModel.id)
                                 .where(AssetModel.name == name)
                                 .order_by(AssetEvent.id)).all()
        return [(e.source_dag_id, e.source_task_id, e.source_run_id, dict(e.extra))
                for e in events]


def _queued_for(dag_id: str) -> int:
    from airflow.models.asset import AssetDagRunQueue
    from airflow.utils.session import create_session
    from sqlalchemy import func, select

    with create_session() as session:
        return session.scalar(select(func.count()).select_from(AssetDagRunQueue)
                              .where(AssetDagRunQueue.target_dag_id == dag_id))


def test_backfill_dag_regenerates_the_report_and_emits_the_output_asset_event(
        airflow_db, backfill_module, pipelines_module, tmp_path, capfd, caplog):
    from jobs.registry import get
    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib.runs.status import job_status

    lake = tmp_path / "lake"
    write_synthetic(lake / DATA_PATH, hours=2, events_per_hour=40, late_fraction=0.0,
                    very_late_fraction=0.0)
    root = lake.as_uri()
    job = get("clickstream_demo")
    asset = "windowlib_clickstream_demo_output"
    before = _asset_events(asset)

    # a scheduled run of the first hour: its publish emits the Asset event, report written
    at = datetime(2024, 3, 1, 1, tzinfo=UTC)
    scheduled = pipelines_module.windowlib_clickstream_demo.test(
        logical_date=at, run_after=at, run_conf={"root": root})
    assert str(scheduled.state) == "success"
    report = lake / "_windowlib" / "reports" / "clickstream_demo.html"
    first_report = report.read_text()
    out = capfd.readouterr()
    first_log = out.out + out.err + caplog.text
    caplog.clear()
    _sync_downstream(tmp_path / "downstream")   # needs the bundle dag.test registered
    assert _queued_for("wl_test_downstream") == 0

    # the backfill DAG over the second hour (what the UI form triggers)
    start = wl_lineage.mark()
    dr = backfill_module.dag.test(run_conf={
        "pipeline": "clickstream_demo", "first": "2024-03-01T01", "last": "2024-03-01T01",
        "mode": "incremental", "dry_run": False, "root": root})
    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert str(dr.state) == "success" and states == {"backfill": "success",
                                                     "report": "success"}, states
    out = capfd.readouterr()
    log = out.out + out.err
    lines = [r.getMessage() for r in caplog.records if r.name == "windowlib.airflow"]
    status = job_status(job, root)
    assert status["version"] == 2
    backfill_run = status["runs"][0]["run_id"]
    assert backfill_run.startswith("windowlib_backfill:")
    # its lineage: START and COMPLETE of both tasks; the backfill names the version it published
    events = wl_lineage.events_since(start)
    for task in ("backfill", "report"):
        assert len(wl_lineage.of(events, task, "START")) == 1, task
        assert len(wl_lineage.of(events, task, "COMPLETE")) == 1, task
    done = wl_lineage.of(events, "backfill", "COMPLETE")[0]
    assert wl_lineage.run_facet(done)["checkpointVersionAfter"] == 2
    assert wl_lineage.run_facet(done)["runId"] == backfill_run
    assert wl_lineage.outputs(done)["firings"]["facets"]["version"]["datasetVersion"] == "2"

    # the report now lists the backfill's run
    page = report.read_text()
    assert html.escape(backfill_run) in page and html.escape(backfill_run) not in first_report

    # one event per published version, same extra keys; the backfill's names its version
    events = _asset_events(asset)[len(before):]
    assert [(e[0], e[1]) for e in events] == [("windowlib_clickstream_demo", "publish"),
                                              ("windowlib_backfill", "backfill")], events
    sched_extra, backfill_extra = events[0][3], events[1][3]
    assert set(sched_extra) == set(backfill_extra) == {"output", "version", "run_id", "firings"}
    _, output = job.locations(root)
    assert backfill_extra == {"output": output, "version": 2, "run_id": backfill_run,
                              "firings": status["runs"][0]["firings"]}
    assert events[1][2] == dr.run_id
    # a DAG scheduled on the pipeline's output Asset is queued by these events
    assert _queued_for("wl_test_downstream") == 1

    # XCom: one small object per task
    for run in (scheduled, dr):
        rows = _xcom_rows(run.dag_id, run.run_id)
        tasks = [t for t, _, _ in rows]
        assert sorted(tasks) == sorted(set(tasks)), rows            # one row per task
        assert {k for _, k, _ in rows} == {"return_value"}, rows
        assert all(size < 20_000 for _, _, size in rows), rows
    # the task log: one summary line per stage, none of GX's registration noise (GX is first
    # imported by the scheduled run's audit task when this module runs alone)
    assert "Skipping registering function" not in first_log + log + caplog.text
    assert [line.split(":")[0] for line in lines] == [
        "windowlib backfill clickstream_demo", "windowlib report clickstream_demo"], lines

    # the UI's links (windowlib_links plugin): the report and the Data Docs of these runs,
    # served by the API server; anonymous requests are refused
    _links_serve_the_report_and_data_docs(scheduled, dr, page)


def _links_serve_the_report_and_data_docs(scheduled, backfill, page: str) -> None:
    import windowlib_links as links
    from fastapi import HTTPException
    from fastapi.testclient import TestClient

    assert TestClient(links.app).get(
        f"/report/{scheduled.dag_id}/{scheduled.run_id}").status_code == 401
    for run in (scheduled, backfill):
        served = links.report(run.dag_id, run.run_id)
        assert served.media_type.startswith("text/html") and served.body.decode() == page
        to_docs = links.docs_of_run(run.dag_id, run.run_id)
        location = to_docs.headers["location"]
        assert location.startswith("/windowlib/files/clickstream_demo/index.html?")
        from urllib.parse import parse_qs, urlsplit

        assert parse_qs(urlsplit(location).query) == {"run": [run.run_id],
                                                      "dag": [run.dag_id]}
        index = links.docs_file("clickstream_demo", "index.html", run=run.run_id,
                                dag=run.dag_id)
        assert index.media_type == "text/html" and b"<html" in index.body.lower()
    for bad in ("../reports/clickstream_demo.html", "a/%2e%2e/b", "/etc/passwd", ""):
        with pytest.raises(HTTPException) as refused:
            links.docs_file("clickstream_demo", bad.replace("%2e", "."))
        assert refused.value.status_code == 400
    with pytest.raises(HTTPException) as refused:
        links.report("windowlib_maintenance", backfill.run_id)
    assert refused.value.status_code == 404
