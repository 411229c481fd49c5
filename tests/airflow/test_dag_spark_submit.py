"""The ``SparkSubmitOperator`` path, executed: with ``WINDOWLIB_SPARK_CONN_ID`` naming a Spark
connection at parse time, a pipeline DAG is ``plan -> run -> report`` and ``run`` submits
``jobs/run_pipeline.py`` with ``spark-submit`` (a real Spark application on ``local[2]``).

``dag.test()`` runs in a subprocess (the DAG must be parsed with the connection variable set):
a run publishes under the plan's idempotency key — in an application with Hive support on
(``spark-defaults.conf``), naming its tables in a Derby metastore without leaving directories
behind — and a second run of the same DAG run id finds nothing new. With the connection
pointing at a real standalone cluster (the ``spark_cluster`` fixture: 2 workers without
``AWS_*`` variables) and the lake on SeaweedFS, the submitted application runs on the
cluster's executors and publishes; no secret reaches the task's output. With a Spark Connect
server whose master is that cluster named by a ``spark_connect`` connection instead, the
five-task DAG runs as thin Connect clients on the cluster. (A failed audit makes the submitted
``run_pipeline.py`` exit 1, which fails the task; ``tests/jobs/test_jobs_run_pipeline_spark.py``
pins that exit code and its message in-process instead of paying a second ``spark-submit``
here.)"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from wl_airflow_env import REPO, subprocess_env

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

PROBE = """
import json, pathlib, sys
from datetime import UTC, datetime
import windowlib_pipelines as m

dag = m.windowlib_clickstream_demo
at = datetime(2024, 3, 1, 1, tzinfo=UTC)
dr = dag.test(logical_date=at, run_after=at, run_conf={"root": sys.argv[1]})
pathlib.Path(sys.argv[2]).write_text(json.dumps(
    {"state": str(dr.state), "run_id": dr.run_id,
     "tasks": {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}}))
"""


def _dag_test(root: str, **env: str) -> tuple[dict, str]:
    """``dag.test()`` in a subprocess; its result goes through a file, not stdout, where task
    logs and lineage messages from other threads interleave with it."""
    env = {"WINDOWLIB_SPARK_CONN_ID": "spark_local",
           "AIRFLOW_CONN_SPARK_LOCAL": json.dumps({"conn_type": "spark", "host": "local[2]"}),
           **env}
    with tempfile.TemporaryDirectory() as scratch:
        result = Path(scratch) / "result.json"
        done = subprocess.run(
            [sys.executable, "-c", PROBE, root, str(result)], capture_output=True, text=True,
            timeout=1200, cwd=str(REPO), env=subprocess_env(**env))
        assert result.exists(), \
            f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        return json.loads(result.read_text()), done.stdout + done.stderr


def _hive_conf(home: Path) -> Path:
    """A ``SPARK_CONF_DIR`` whose ``spark-defaults.conf`` turns Hive support on, with the
    embedded Derby metastore and the warehouse under ``home``."""
    conf = home / "conf"
    conf.mkdir(parents=True)
    (conf / "spark-defaults.conf").write_text(
        "spark.sql.catalogImplementation hive\n"
        f"spark.sql.warehouse.dir {home / 'warehouse'}\n"
        f"spark.driver.extraJavaOptions -Dderby.system.home={home}\n")
    return conf


def test_spark_submit_run_publishes_under_the_plans_key_and_a_rerun_is_a_no_op(airflow_db,
                                                                               tmp_path):
    from _windowlib_factory import run_key

    from jobs.registry import get
    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib.runs.status import job_status

    lake = tmp_path / "lake"
    write_synthetic(lake / DATA_PATH, hours=1, events_per_hour=40, late_fraction=0.0,
                    very_late_fraction=0.0)
    root = lake.as_uri()
    # the submitted application has Hive support (spark-defaults.conf), as on many clusters:
    # the catalog names go into a real (Derby) metastore
    result, log = _dag_test(root, SPARK_CONF_DIR=str(_hive_conf(tmp_path / "hive")))
    assert result["state"] == "success", result
    assert result["tasks"] == {"plan": "success", "run": "success", "report": "success"}
    assert (tmp_path / "hive" / "metastore_db").is_dir()      # the Hive catalog was used
    # its tables are Spark-specific in the metastore: Hive would have made a directory of each
    # table's glob location below the table roots (and failed to chmod it)
    assert not [p for p in lake.rglob("*") if "{" in p.name]
    assert "Illegal file pattern" not in log
    status = job_status(get("clickstream_demo"), root)
    assert status["version"] == 1 and status["files_consumed_total"] == 1, status
    key = f"{run_key('windowlib_clickstream_demo', result['run_id'])}@v0"
    assert [c["run_id"] for c in status["runs"]] == [key]      # the plan's idempotency key
    assert (lake / "_windowlib" / "reports" / "clickstream_demo.html").is_file()

    again, _ = _dag_test(root)           # the same DAG run id: nothing new, nothing committed
    assert again["state"] == "success" and again["tasks"]["plan"] == "success", again
    assert again["tasks"]["run"] == "skipped", again
    assert job_status(get("clickstream_demo"), root)["version"] == 1


@pytest.mark.s3
@pytest.mark.e2e
def test_the_dag_submits_to_a_spark_cluster_through_the_spark_connection(
        airflow_db, spark_cluster, seaweed_s3):
    from s3_servers import use_env

    from jobs.registry import get
    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib.runs.status import job_status

    root = f"s3://{seaweed_s3.create_bucket('dagcluster')}/lake"
    with use_env(seaweed_s3.env()):
        write_synthetic(f"{root}/{DATA_PATH}", hours=1, events_per_hour=40,
                        late_fraction=0.0, very_late_fraction=0.0)
    host, port = spark_cluster.master_url.rsplit(":", 1)

    def submitted() -> list[dict]:
        return [a for a in spark_cluster.status()["completedapps"]
                if a["name"] == "windowlib-clickstream_demo"]

    before = len(submitted())
    result, output = _dag_test(root, AIRFLOW_CONN_SPARK_LOCAL=json.dumps(
        {"conn_type": "spark", "host": host, "port": int(port)}), **seaweed_s3.env())
    assert result["state"] == "success", output[-5000:]
    assert result["tasks"] == {"plan": "success", "run": "success", "report": "success"}
    apps = submitted()
    assert len(apps) == before + 1 and {a["cores"] for a in apps} == {spark_cluster.cores}
    with use_env(seaweed_s3.env()):
        status = job_status(get("clickstream_demo"), root)
    assert status["version"] == 1 and status["files_consumed_total"] == 1, status
    assert seaweed_s3.secret_access_key not in output


@pytest.mark.s3
@pytest.mark.e2e
def test_the_dag_runs_through_a_connect_server_attached_to_the_cluster(
        airflow_db, spark_cluster, seaweed_s3):
    """The other way a DAG reaches a cluster: its tasks are thin Spark Connect clients of a
    server whose master is the cluster (an Airflow ``spark_connect`` connection names it). The
    whole plan -> run -> audit -> publish -> report chain runs on the cluster's executors."""
    from s3_servers import use_env

    from infra.spark_connect import start_connect_server
    from jobs.registry import get
    from jobs.synthetic import DATA_PATH, write_synthetic
    from windowlib.runs.status import job_status, run_history

    root = f"s3://{seaweed_s3.create_bucket('dagconnectcluster')}/lake"
    with use_env(seaweed_s3.env()):
        write_synthetic(f"{root}/{DATA_PATH}", hours=1, events_per_hour=40,
                        late_fraction=0.0, very_late_fraction=0.0)
    with start_connect_server(master=spark_cluster.master_url) as server:
        host, port = server.url[len("sc://"):].split(":")
        result, output = _dag_test(
            root, WINDOWLIB_SPARK_CONN_ID="", SPARK_REMOTE="",
            WINDOWLIB_SPARK_CONNECT_CONN_ID="wl_connect_cluster",
            AIRFLOW_CONN_WL_CONNECT_CLUSTER=json.dumps(
                {"conn_type": "spark_connect", "host": host, "port": int(port)}),
            **seaweed_s3.env())
        apps = [a for a in spark_cluster.status()["activeapps"]
                if a["name"] == "windowlib Spark Connect server"]
        log = server.log_path.read_text(errors="replace")
    assert result["state"] == "success", output[-5000:]
    assert result["tasks"] == {t: "success" for t in ("plan", "run", "audit", "publish",
                                                      "report")}, output[-5000:]
    assert len(apps) == 1 and apps[0]["cores"] == spark_cluster.cores, apps
    with use_env(seaweed_s3.env()):
        status = job_status(get("clickstream_demo"), root)
        last = run_history(get("clickstream_demo"), root)[-1]
    assert status["version"] == 1 and status["files_consumed_total"] == 1, status
    assert last["validation"]["success"] is True and last["firings"] > 0, last
    assert seaweed_s3.secret_access_key not in output + log
