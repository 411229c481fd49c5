"""``run_incremental`` end to end on real S3-compatible servers over loopback (SeaweedFS and
moto in server mode): input, checkpoints and outputs all live in a bucket.

One scenario per server, the registered ``clickstream_demo`` job over the synthetic clickstream
(``jobs.synthetic``): two scheduled runs, a run with nothing new, then files that land late in
an already-consumed partition — placed for the pipeline's current watermark — and a rerun of
that partition: LATE firings whose pane indices continue each window's, rows beyond allowed
lateness in the late output, ``read_latest`` showing the LATE panes, ``job_status`` counting
versions and consumed files. (``tests/spark/test_incremental.py`` covers the same behaviour on
``file://``; ``tests/airflow/test_dag_runs_s3.py`` one DAG run on moto.)
"""

from __future__ import annotations

from collections import defaultdict

import duckdb
import pytest
from s3_servers import use_env

from jobs.registry import get
from jobs.synthetic import DATA_PATH, land_late_files, write_synthetic
from windowlib.runs.operations import run_job
from windowlib.runs.outputs import latest_query, read_firings, read_late, read_latest
from windowlib.runs.status import job_status
from windowlib.runs.tables import open_table

pytestmark = [pytest.mark.spark, pytest.mark.s3]

T00, T01 = "2024-03-01T00", "2024-03-01T01"


def windows(rows) -> dict[tuple, list]:
    out: dict[tuple, list] = defaultdict(list)
    for r in rows:
        out[(r["key"], r["window_start"])].append(r)
    return out


@pytest.mark.parametrize("server", ["seaweed_s3", "moto_s3"])
def test_runs_reruns_and_late_files_on_s3(spark, request, server):
    s3 = request.getfixturevalue(server)
    bucket = s3.create_bucket("incr")
    root = f"s3://{bucket}/lake"
    job = get("clickstream_demo")
    with use_env(s3.env()):
        write_synthetic(f"{root}/{DATA_PATH}", hours=2, events_per_hour=40, keys=4,
                        late_fraction=0.0, very_late_fraction=0.0)
        first = run_job(job, root, partitions=(T00, T00), spark=spark, validate=False)
        second = run_job(job, root, spark=spark, validate=False)
        assert (first.status, second.status) == ("published", "published")
        assert (first.version, second.version) == (1, 2)
        assert second.partitions == [T01] and second.files_consumed == 1
        again = run_job(job, root, spark=spark, validate=False)
        assert again.status == "nothing_new" and again.version == 2

        status = job_status(job, root)
        assert status["version"] == 2 and status["files_consumed_total"] == 2
        assert status["output"].startswith(f"s3://{bucket}/lake/")
        output = status["output"]
        before = read_firings(output, spark=spark).collect()
        assert {r["run_id"] for r in before} == {first.run_id, second.run_id}

        # a re-delivery lands in the consumed partition 00: 9 rows within allowed lateness
        # of the current watermark, 3 beyond it
        late_file = land_late_files(f"{root}/{DATA_PATH}", T00, n=12, keys=4,
                                    watermark=status["watermark"],
                                    allowed_lateness="30 minutes", window="5 minutes",
                                    too_late=3)
        rerun = run_job(job, root, partitions=(T00, T00), spark=spark, validate=False)
        assert rerun.status == "published" and rerun.version == 3
        assert rerun.files_consumed == 1 and rerun.partitions == [T00]
        assert (rerun.inputs, rerun.processed, rerun.late, rerun.rejects) == (12, 9, 3, 0)
        assert set(rerun.firings_by_timing) == {"LATE"} and rerun.firings == 9

        firings = read_firings(output, spark=spark).collect()
        new = [r for r in firings if r["run_id"] == rerun.run_id]
        assert len(new) == 9 and {r["timing"] for r in new} == {"LATE"}
        old = windows(before)
        continued = 0
        for win, rows in windows(new).items():
            start = max((r["pane_index"] for r in old.get(win, [])), default=-1) + 1
            assert sorted(r["pane_index"] for r in rows) == list(range(start, start + len(rows)))
            continued += win in old
        assert continued > 0                        # LATE panes continue existing windows
        latest = windows(read_latest(output, spark=spark).collect())
        for win, rows in windows(new).items():
            top = max(rows, key=lambda r: r["pane_index"])
            assert [(r["pane_index"], r["total"]) for r in latest[win]] == [
                (top["pane_index"], top["total"])]
        assert len(latest) == len(old.keys() | windows(new).keys())

        late = [r for r in read_late(output, spark=spark).collect()
                if r["event_id"] >= 1_000_000_000]
        assert len(late) == 3 and {r["reason"] for r in late} == {"too_late"}

        status = job_status(job, root)
        assert status["version"] == 3 and status["files_consumed_total"] == 3
        assert status["runs"][0]["late"] == 3 and status["runs"][0]["files"] == 1
        keys = [o["Key"] for o in s3.client().list_objects_v2(
            Bucket=bucket, Prefix="lake/_windowlib/checkpoints/")["Contents"]]
        assert any("commits/" in k for k in keys)
        assert late_file.endswith(f"arrival_hour={T00}/late-0001.parquet")

        # the outputs are Delta tables in the bucket: a non-Spark reader (DuckDB over the
        # Delta table, credentials from the environment) agrees with read_latest
        tables = {t["output"]: t for t in status["tables"]}
        assert tables["firings"]["version"] == 3
        assert tables["firings"]["location"].startswith(f"s3://{bucket}/lake/_windowlib/")
        assert rerun.tables["firings"]["version"] == 3
        table = open_table(output, "firings")
        firings_ds = table.to_pyarrow_dataset()  # noqa: F841 (DuckDB scans it by name)
        cols = [f.name for f in table.schema().to_arrow()]
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        res = con.execute(f"select key, window_start, pane_index, total from "
                          f"({latest_query(cols, 'firings_ds', dialect='duckdb')})")
        in_duckdb = sorted((k, w.replace(tzinfo=None), p, t) for k, w, p, t in res.fetchall())
        want = sorted((r["key"], r["window_start"].replace(tzinfo=None), r["pane_index"],
                       r["total"]) for r in read_latest(output, spark=spark).collect())
        assert in_duckdb == want
