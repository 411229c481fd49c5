"""S3 through an Airflow AWS connection (``aws_conn_id``, the amazon provider) and Spark settings
through a Spark connection (issue 17), on a real S3 server that enforces authentication
(SeaweedFS): with no ``AWS_*`` variable in the environment, a real ``windowlib_maintenance``
DAG run (``dag.test``) reaches the bucket with the connection's credentials alone; the
credentials never reach the log and the environment is restored after each task."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
from s3_servers import use_env

pytestmark = [pytest.mark.airflow, pytest.mark.s3, pytest.mark.slow]

AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
            "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION")


@pytest.fixture
def no_aws_env(monkeypatch):
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")


def _aws_conn(server) -> str:
    return json.dumps({"conn_type": "aws", "login": server.access_key_id,
                       "password": server.secret_access_key,
                       "extra": {"endpoint_url": server.endpoint_url,
                                 "region_name": server.region}})


def test_maintenance_dag_reaches_s3_through_the_aws_connection_only(
        airflow_db, seaweed_s3, no_aws_env, monkeypatch, capfd, caplog):
    import importlib

    from _windowlib_ops import aws_connection_env

    from jobs.registry import get
    from windowlib.core.errors import WindowlibError
    from windowlib.runs.incremental import open_checkpoint
    from windowlib.state.stores import open_store

    bucket = seaweed_s3.create_bucket("wlconn")
    root = f"s3://{bucket}/lake"
    job = get("clickstream_demo")
    checkpoint, _ = job.locations(root)
    with use_env(seaweed_s3.env()):   # a crashed run's staging, written with the server's keys
        crashed = open_checkpoint(job.pipeline, checkpoint).begin("crashed")
        open_store(crashed.uri("state"), None).write_bytes("part-0.parquet", b"partial")

    # without credentials nothing is reachable: the server enforces them
    with pytest.raises(WindowlibError), \
            use_env({"AWS_ENDPOINT_URL_S3": seaweed_s3.endpoint_url}):
        list(open_store(crashed.uri("state"), None).list())
    monkeypatch.setenv("AIRFLOW_CONN_WL_S3_TEST", _aws_conn(seaweed_s3))
    maintenance = importlib.import_module("windowlib_maintenance").dag
    at = datetime(2024, 3, 2, 3, 30, tzinfo=UTC)
    monkeypatch.setenv("WINDOWLIB_AWS_CONN_ID", "wl_s3_test")
    # the DAG run's own log only: the test's S3 calls sign with the key, and botocore logs
    # those requests whenever an earlier test in the process left debug logging on
    capfd.readouterr()
    caplog.clear()
    dr = maintenance.test(logical_date=at, run_after=at,
                          run_conf={"root": root, "grace_hours": 0})
    out = capfd.readouterr()
    log = out.out + out.err + caplog.text
    states = {(ti.task_id, ti.map_index): str(ti.state) for ti in dr.get_task_instances()}
    assert str(dr.state) == "success", states
    with use_env(seaweed_s3.env()):
        assert not list(open_store(crashed.uri("state"), None).list())   # gc removed it
    assert "S3 through Airflow connection 'wl_s3_test'" in log
    assert seaweed_s3.secret_access_key not in log
    assert seaweed_s3.access_key_id not in log              # only its last 4 characters
    assert all(name not in os.environ for name in AWS_VARS)  # restored after each task
    with aws_connection_env() as conn_id:
        assert conn_id == "wl_s3_test"
        assert os.environ["AWS_ENDPOINT_URL_S3"] == seaweed_s3.endpoint_url
    assert "AWS_ENDPOINT_URL_S3" not in os.environ


def test_spark_session_settings_come_from_the_spark_connection(monkeypatch):
    from _windowlib_ops import spark_session_settings

    monkeypatch.delenv("WINDOWLIB_SPARK_SESSION_CONN_ID", raising=False)
    assert spark_session_settings() == (None, {})
    monkeypatch.setenv("AIRFLOW_CONN_WL_SPARK_TEST", json.dumps(
        {"conn_type": "spark", "host": "spark://10.0.0.5", "port": 7077,
         "extra": {"conf": {"spark.executor.memory": "2g", "spark.sql.shuffle.partitions": 8}}}))
    monkeypatch.setenv("WINDOWLIB_SPARK_SESSION_CONN_ID", "wl_spark_test")
    assert spark_session_settings() == ("spark://10.0.0.5:7077", {
        "spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "8"})
    monkeypatch.setenv("AIRFLOW_CONN_WL_SPARK_TEST", json.dumps(
        {"conn_type": "spark", "host": "local[2]"}))
    assert spark_session_settings() == ("local[2]", {})
