"""``dag.test()`` of a pipeline DAG with an ``s3://`` root on a real local S3 server (moto in
server mode on 127.0.0.1): the run publishes, the checkpoint and outputs live in the bucket
and the report task uploads the HTML report next to them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from s3_servers import use_env

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]


def test_pipeline_dag_on_an_s3_root(airflow_db, pipelines_module, moto_s3):
    from jobs.registry import get
    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib.runs.status import job_status, run_history

    bucket = moto_s3.create_bucket("wlaf")
    root = f"s3://{bucket}/lake"
    with use_env(moto_s3.env(bucket)):
        write_synthetic(f"{root}/{DATA_PATH}", hours=1, events_per_hour=40)
        at = datetime(2024, 3, 1, 1, tzinfo=UTC)
        dr = pipelines_module.windowlib_clickstream_demo.test(
            logical_date=at, run_after=at, run_conf={"root": root})
        states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
        assert str(dr.state) == "success", states
        assert set(states.values()) == {"success"}
        job = get("clickstream_demo")
        status = job_status(job, root)
        assert status["version"] == 1 and status["output"].startswith(f"s3://{bucket}/")
        history = run_history(job, root)
        assert history[-1]["validation"]["success"] is True
        head = moto_s3.client().head_object(
            Bucket=bucket, Key="lake/_windowlib/reports/clickstream_demo.html")
        assert head["ContentLength"] > 1000
