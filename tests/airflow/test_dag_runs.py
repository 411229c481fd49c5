"""``dag.test()`` end to end on the synthetic clickstream with a ``file://`` root (real Spark,
real Great Expectations, real Airflow metadata DB in a temporary home).

Scheduled runs over two hours, then files land late in an old partition and that run is
cleared and rerun (same DAG run id, a new try): the rerun consumes only the new files, emits
LATE firings that validate, and drops what is beyond allowed lateness. A deliberately impossible
expectation (a test registry via ``WINDOWLIB_REGISTRY``) blocks the publish."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import wl_lineage as ol

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

T0 = datetime(2024, 3, 1, 0, tzinfo=UTC)


def _states(dr) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}


def _run(dag, hour: int, root: str, **conf):
    """One run of the interval ``[T0+hour-1h, T0+hour)``; the same ``hour`` gives the same DAG
    run id (``dag.test`` clears and reruns it, like clearing a run in the UI)."""
    at = T0 + timedelta(hours=hour)
    return dag.test(logical_date=at, run_after=at, run_conf={"root": root, **conf})


def _land_redelivery(dataset: Path, partition: str, minutes: tuple[int, int], n: int) -> Path:
    """A re-delivered file in an existing partition whose events lie inside the partition's
    hour (``minutes`` after its start): near the watermark, so within allowed lateness."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    start = datetime.strptime(partition, "%Y-%m-%dT%H").replace(tzinfo=UTC)
    ts = [start + timedelta(minutes=minutes[0] + i * (minutes[1] - minutes[0]) / n)
          for i in range(n)]
    table = pa.table({"event_id": pa.array([2_000_000_000 + i for i in range(n)], pa.int64()),
                      "key": pa.array([f"user{i % 3}" for i in range(n)], pa.string()),
                      "ts": pa.array(ts, pa.timestamp("ms", tz="UTC")),
                      "value": pa.array([7] * n, pa.int64())})
    path = dataset / f"arrival_hour={partition}" / "redelivered-0001.parquet"
    pq.write_table(table, path)
    return path


def test_scheduled_runs_then_late_files_and_a_cleared_rerun(airflow_db, pipelines_module,
                                                            tmp_path):
    from pyspark.sql import functions as F

    from jobs.registry import get
    from jobs.synthetic import DATA_PATH, land_late_files, write_synthetic
    from windowlib.runs.outputs import read_firings
    from windowlib.runs.status import job_status

    lake = tmp_path / "lake"
    write_synthetic(lake / DATA_PATH, hours=2, events_per_hour=60, late_fraction=0.0,
                    very_late_fraction=0.0)
    root = lake.as_uri()
    job = get("clickstream_demo")
    dag = pipelines_module.windowlib_clickstream_demo

    start = ol.mark()
    for hour in (1, 2):
        dr = _run(dag, hour, root)
        assert str(dr.state) == "success", _states(dr)
        assert set(_states(dr).values()) == {"success"}, _states(dr)
    status = job_status(job, root)
    assert status["version"] == 2 and status["files_consumed_total"] == 2
    # OpenLineage (file transport): START and COMPLETE of every task of both runs, with the
    # source's partitions and files in and the output tables out
    events = ol.events_since(start)
    for task in ("plan", "run", "audit", "publish", "report"):
        assert len(ol.of(events, task, "START")) == len(ol.of(events, task, "COMPLETE")) == 2
    source = ol.of(events, "plan", "COMPLETE")[0]["inputs"][0]
    assert (source["namespace"], source["name"]) == ("file", str(lake / DATA_PATH))
    consumed = source["inputFacets"]["windowlib_input"]
    assert [p["partition"] for p in consumed["partitions"]] == ["2024-03-01T00"]
    assert consumed["fileCount"] == 1
    published = ol.of(events, "publish", "COMPLETE")[1]
    tables = ol.outputs(published)
    assert set(tables) == {"firings", "late", "rejects", "side_outputs"}
    assert tables["firings"]["facets"]["version"]["datasetVersion"] == "2"
    assert tables["firings"]["outputFacets"]["outputStatistics"]["rowCount"] > 0
    assert ol.run_facet(published)["checkpointVersionAfter"] == 2
    assert published["inputs"][0]["inputFacets"]["windowlib_input"]["rowCount"] == 60
    audited = ol.of(events, "audit", "COMPLETE")[0]["inputs"][0]["inputFacets"]
    assert audited["dataQualityAssertions"]["assertions"]
    assert all(a["success"] for a in audited["dataQualityAssertions"]["assertions"])
    for task in ("run", "publish", "report"):
        assert ol.of(events, task, "START")[0]["outputs"], task
    assert (lake / "_windowlib" / "reports" / "clickstream_demo.html").is_file()

    # nothing new: the plan short-circuits, every other task is skipped, nothing is committed
    dr = _run(dag, 2, root)
    assert str(dr.state) == "success"
    states = _states(dr)
    assert states["plan"] == "success" and {states[t] for t in states if t != "plan"} == {
        "skipped"}
    assert job_status(job, root)["version"] == 2

    # files land late in the partitions of the last run after it ran: a re-delivery into
    # 2024-03-01T01 (event times near the watermark: within allowed lateness) and late events
    # into 2024-03-01T00 (beyond it). The run of [01:00, 02:00) (lookback 1: partitions
    # 00..01) is cleared and rerun: its plan starts from version 2, so its key is new.
    _land_redelivery(lake / DATA_PATH, "2024-03-01T01", (35, 50), n=12)
    land_late_files(lake / DATA_PATH, "2024-03-01T00", n=5, max_delay=10 * 60_000)
    start = ol.mark()
    dr = _run(dag, 2, root)
    assert str(dr.state) == "success", _states(dr)
    assert set(_states(dr).values()) == {"success"}
    status = job_status(job, root)
    assert status["version"] == 3 and status["files_consumed_total"] == 4
    rerun = status["runs"][0]
    assert rerun["run_id"].endswith("@v2") and "manual__2024-03-01T02:00:00" in rerun["run_id"]
    assert rerun["files"] == 2 and rerun["late"] == 5   # land_late_files: beyond lateness

    firings = read_firings(status["output"])
    late = firings.filter((F.col("run_id") == rerun["run_id"]) & (F.col("timing") == "LATE"))
    n_late = late.count()
    assert n_late > 0
    assert late.filter(F.col("window_end") > datetime(2024, 3, 1, 1, 35)).count() == n_late
    from windowlib.runs.status import run_history

    last = run_history(job, root)[-1]
    assert last["validation"]["success"] is True and last["firings_by_timing"]["LATE"] == n_late
    # the rerun's lineage: the new version, the two late files and the LATE firings
    rerun_event = ol.of(ol.events_since(start), "publish", "COMPLETE")[0]
    facet = ol.run_facet(rerun_event)
    assert facet["checkpointVersionBefore"] == 2 and facet["checkpointVersionAfter"] == 3
    assert facet["lateRerun"] is True and facet["counts"]["firingsByTiming"]["LATE"] == n_late
    assert facet["counts"]["late"] == 5 and facet["runId"] == rerun["run_id"]
    assert ol.outputs(rerun_event)["firings"]["facets"]["version"]["datasetVersion"] == "3"
    files = rerun_event["inputs"][0]["inputFacets"]["windowlib_input"]
    assert files["fileCount"] == 2
    assert datetime.fromisoformat(last["finished_at"].replace("Z", "+00:00")).year >= 2026

    # the daily maintenance DAG: a crashed run's staging (idle beyond the grace period) goes,
    # everything committed stays; one mapped gc task per registered pipeline
    import importlib
    import time

    from windowlib.runs.incremental import open_checkpoint
    from windowlib.state.stores import open_store

    checkpoint, _ = job.locations(root)
    crashed = open_checkpoint(job.pipeline, checkpoint).begin("crashed")
    open_store(crashed.uri("state"), None).write_bytes("part-0.parquet", b"partial")
    old = time.time() - 7 * 3600
    for path in (lake / "_windowlib").rglob("*"):
        if crashed.key.split("/")[-1] in str(path) and path.is_file():
            os.utime(path, (old, old))
    n_firings = read_firings(status["output"]).count()
    maintenance = importlib.import_module("windowlib_maintenance").dag
    at = datetime(2024, 3, 2, 3, 30, tzinfo=UTC)
    start = ol.mark()
    dr = maintenance.test(logical_date=at, run_after=at, run_conf={"root": root})
    gc_done = ol.of(ol.events_since(start), "gc", "COMPLETE")
    assert gc_done and all(e["outputs"] for e in gc_done)
    tis = dr.get_task_instances()
    assert str(dr.state) == "success" and {str(ti.state) for ti in tis} == {"success"}
    from jobs.registry import registry

    assert len(tis) == len(registry())
    assert not list(open_store(crashed.uri("state"), None).list())
    assert job_status(job, root)["version"] == 3
    assert read_firings(status["output"]).count() == n_firings


def test_failed_audit_blocks_publishing_and_names_the_expectation(airflow_db, tmp_path,
                                                                  monkeypatch, capfd):
    import importlib
    import sys

    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib.runs.operations import get_job
    from windowlib.runs.status import job_status

    monkeypatch.setenv("WINDOWLIB_REGISTRY", "wl_blocking_registry")
    sys.modules.pop("windowlib_pipelines", None)
    module = importlib.import_module("windowlib_pipelines")
    try:
        lake = tmp_path / "lake"
        write_synthetic(lake / DATA_PATH, hours=1, events_per_hour=40, late_fraction=0.0,
                        very_late_fraction=0.0)
        root = lake.as_uri()
        start = ol.mark()
        dr = _run(module.windowlib_clickstream_demo, 1, root)
        states = _states(dr)
        # lineage: the publish task FAILs with the failed expectation as an assertion
        failed = ol.of(ol.events_since(start), "publish", "FAIL")
        assert len(failed) == 1 and ol.run_facet(failed[0])["status"] == "staged"
        assert failed[0]["run"]["facets"]["windowlib_error"]["code"] == "BLOCKED"
        checks = {a.get("column"): a["success"] for e in failed[0]["inputs"]
                  for a in e.get("inputFacets", {}).get("dataQualityAssertions", {}).get(
                      "assertions", [])}
        assert checks.get("clicks") is False and any(checks.values())
        assert str(dr.state) == "failed"
        assert states["audit"] == "success" and states["publish"] == "failed"
        assert states["report"] == "upstream_failed"
        job = get_job("clickstream_demo")
        assert job_status(job, root)["version"] is None          # nothing published
        staging = [p for p in (lake / "_windowlib").rglob("pending.json")]
        assert staging == []                                      # staged files removed
        text = capfd.readouterr()
        log = text.out + text.err
        assert "the audit failed, nothing was published" in log
        assert "clicks" in log and "Data Docs:" in log
        assert "index.html" in log
    finally:
        sys.modules.pop("windowlib_pipelines", None)
        os.environ.pop("WINDOWLIB_REGISTRY", None)
