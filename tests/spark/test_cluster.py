"""windowlib on a real Spark standalone cluster (master + 2 workers on 127.0.0.1, the
``spark_cluster`` fixture) with checkpoints and outputs on a real S3 server (SeaweedFS).

The workers start without ``AWS_*`` variables or ``PYTHONPATH``, and their executors run from
their own work directories, so everything an executor needs comes from the application: the
code (windowlib and the registry's package, shipped as zips), the S3 endpoint and the
credentials (forwarded in the pickled task closures, never in the Spark configuration).

- ``jobs/run_pipeline.py --master spark://...`` (``--no-validate``; the GX gate on a cluster
  runs in ``tests/airflow/test_dag_spark_submit.py``): an incremental run over three
  partitions, then files that land late in a consumed partition and a rerun; the firings,
  late output and checkpoint (clock and every key's pane state) equal those of the same runs
  on ``local[2]`` (the shared ``spark`` fixture, ``on_local``), compared as data. No secret
  appears in the runs' output or in any log of the cluster (master, workers, executors'
  stdout/stderr and launch commands).
- ``cluster_app.py`` (one application): executors import the shipped windowlib, not the one
  installed in their environment; a one-shot ``Pipeline.run`` whose function lives in an
  unshipped module fails with ``MODULE_UNAVAILABLE`` naming it and, once shipped, equals the
  same run on ``local[2]``; with credential forwarding off the executors cannot read S3.
- A Spark Connect server whose master is the cluster (code shipped as Connect artifacts):
  ``tests/airflow/test_dag_spark_submit.py`` runs a whole pipeline DAG through one.

Applications run in subprocesses: this process holds the local ``spark`` session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from s3_servers import use_env

from jobs.registry import get
from jobs.synthetic import DATA_PATH, land_late_files, write_synthetic
from windowlib.runs.operations import run_job
from windowlib.runs.status import job_status

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
T00, T02 = "2024-03-01T00", "2024-03-01T02"
HOURS, EVENTS, KEYS = 3, 40, 4


def driver_env(s3) -> dict[str, str]:
    """The driver's environment: the S3 server's ``AWS_*`` variables (the workers have none)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYTHONPATH")}
    env.update(s3.env(), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    return env


def run_pipeline(master: str, root: str, env: dict[str, str], *args: str) -> tuple[dict, str]:
    proc = subprocess.run(
        [sys.executable, "jobs/run_pipeline.py", "--master", master, "--pipeline",
         "clickstream_demo", "--root", root, "--json", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout), proc.stdout + proc.stderr


def land_late(root: str, watermark: str) -> None:
    land_late_files(f"{root}/{DATA_PATH}", T00, n=12, keys=KEYS, watermark=watermark,
                    allowed_lateness="30 minutes", window="5 minutes", too_late=3)


def observed(spark, root: str) -> dict:
    """What readers and the next run see: firings, late rows (without run ids), the clock and
    every key's pane state of the latest commit."""
    from pyspark.sql.types import StructType

    import windowlib as wl
    from windowlib.runs.frames import FrameInfo, read_frame
    from windowlib.runs.incremental import open_checkpoint

    job = get("clickstream_demo")
    checkpoint, output = job.locations(root)

    def rows(frame) -> list:
        return sorted((tuple(r) for r in frame.drop("run_id").collect()), key=repr)

    head = open_checkpoint(job.pipeline, checkpoint).latest()
    state = read_frame(spark, FrameInfo.from_dict(head.extra["frames"]["state"]),
                       StructType.fromJson(head.extra["state_schema"]))
    firings = wl.read_firings(output, spark=spark)
    return {"firings": rows(firings),
            "timings": sorted({r["timing"] for r in firings.select("timing").collect()}),
            "late": rows(wl.read_late(output, spark=spark)),
            "clock": (head.version, head.watermark_ms, head.processing_time_ms,
                      head.max_event_time_ms),
            "state": sorted((tuple(r) for r in state.collect()), key=repr)}


@pytest.fixture(scope="module")
def lake(seaweed_s3):
    bucket = seaweed_s3.create_bucket("cluster")
    roots = {"cluster": f"s3://{bucket}/cluster", "local": f"s3://{bucket}/local"}
    with use_env(seaweed_s3.env()):
        for root in roots.values():
            write_synthetic(f"{root}/{DATA_PATH}", hours=HOURS, events_per_hour=EVENTS,
                            keys=KEYS, late_fraction=0.1, very_late_fraction=0.05)
    return roots


@pytest.fixture(scope="module")
def on_local(spark, seaweed_s3, lake) -> dict:
    """The reference: the same two runs on ``local[2]`` (the shared session) — summaries of
    both runs and what readers and the next run see afterwards."""
    job = get("clickstream_demo")
    with use_env(seaweed_s3.env()):
        first = run_job(job, lake["local"], partitions=(T00, T02), spark=spark, validate=False)
        land_late(lake["local"], job_status(job, lake["local"])["watermark"])
        rerun = run_job(job, lake["local"], partitions=(T00, T00), spark=spark, validate=False)
        seen = observed(spark, lake["local"])
    assert seen["late"] and seen["state"] and {"ON_TIME", "LATE"} <= set(seen["timings"])
    return {"runs": [first, rerun], "observed": seen}


def test_incremental_runs_on_the_cluster_equal_local_runs(spark, spark_cluster, seaweed_s3,
                                                          lake, on_local):
    env = driver_env(seaweed_s3)
    job = get("clickstream_demo")
    first, out1 = run_pipeline(spark_cluster.master_url, lake["cluster"], env,
                               "--first", T00, "--last", T02, "--no-validate")
    assert first["status"] == "published" and first["partitions"] == [
        "2024-03-01T00", "2024-03-01T01", "2024-03-01T02"]
    with use_env(seaweed_s3.env()):
        land_late(lake["cluster"], job_status(job, lake["cluster"])["watermark"])
    rerun, out2 = run_pipeline(spark_cluster.master_url, lake["cluster"], env,
                               "--first", T00, "--last", T00, "--no-validate")
    assert rerun["status"] == "published" and rerun["version"] == 2
    assert rerun["files_consumed"] == 1 and rerun["late"] == 3
    assert set(rerun["firings_by_timing"]) == {"LATE"}
    apps = spark_cluster.status()["completedapps"]
    assert sum(a["name"] == "windowlib-run-pipeline" and a["cores"] == 2 for a in apps) >= 2

    for got, want in zip((first, rerun), on_local["runs"], strict=True):
        for key in ("inputs", "processed", "late", "rejects", "firings", "watermark_ms"):
            assert got[key] == getattr(want, key), key
    with use_env(seaweed_s3.env()):
        assert observed(spark, lake["cluster"]) == on_local["observed"]

    secrets = (seaweed_s3.secret_access_key,)
    for text in (out1, out2):
        assert not any(s in text for s in secrets)
    logs = spark_cluster.log_files()
    assert any(p.name == "stderr" for p in logs), "executor logs are checked too"
    for path in logs:
        text = path.read_text(errors="replace")
        assert not any(s in text for s in secrets), path


def test_code_ships_and_credentials_forward_only_through_the_application(
        spark_cluster, seaweed_s3, lake, on_local):
    """Reads the output the local reference runs committed on S3."""
    output = get("clickstream_demo").locations(lake["local"])[1]
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("cluster_app.py")),
                           spark_cluster.master_url, output],
                          cwd=REPO, env={**driver_env(seaweed_s3), "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line, = (x for x in proc.stdout.splitlines() if x.startswith("REPORT "))
    report = json.loads(line.removeprefix("REPORT "))
    assert report["master"] == spark_cluster.master_url
    assert report["local_master"] == "local[2]"
    # the executors import the shipped zip, not the windowlib installed in their environment
    assert report["executor_windowlib"] and all(
        ".zip" in path and "/windowlib-" in path for path in report["executor_windowlib"])
    unshipped = report["unshipped"] or ""
    assert unshipped.startswith("[MODULE_UNAVAILABLE]") and "'cluster_funcs'" in unshipped
    assert report["shipped"] == [n for n in report["shipped"] if n.startswith("cluster_funcs-")]
    assert report["cluster_rows"] and report["cluster_rows"] == report["local_rows"]
    assert sorted(n.split("-")[0] for n in report["local_shipped"]) == ["cluster_funcs",
                                                                        "windowlib"]
    assert report["local_shipped_again"] == []             # once per session
    # executors have no credentials of their own: only the forwarded ones reach S3
    assert isinstance(report["read_without_credentials"], str), report
    assert report["read_with_credentials"] > 0
    assert seaweed_s3.secret_access_key not in proc.stdout + proc.stderr
