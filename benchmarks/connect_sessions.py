"""What a new Spark Connect session costs before its first Python work (issue 16, item 5).

    .venv/bin/python benchmarks/connect_sessions.py [--sessions N]

A DAG run's ``run`` task opens a new server session (``dags/_windowlib_tasks.py``: one per
DAG run, shared by its tasks). A Spark Connect server isolates each session's artifacts, and
Spark keys its Python worker daemons by the session, so every new session starts a daemon
and workers that import PySpark, pyarrow and pandas again. This script starts a local server
(``infra/spark_connect.py``) and, for each of ``N`` new sessions, times the same small Python
jobs twice: a ``mapInArrow`` that builds its batch from Python values (as windowlib's walkers
and writers do; pyarrow imports pandas for that) and a pickled Python UDF. The baseline is
the second round in the same session: its workers are warm. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _arrow_job(session: object) -> None:
    def rebuild(batches):  # runs in the server's Python workers
        import pyarrow as pa

        for batch in batches:
            yield pa.RecordBatch.from_pylist(batch.to_pylist(), schema=batch.schema)

    session.range(10).mapInArrow(rebuild, "id long").collect()


def _udf_job(session: object) -> None:
    from pyspark.sql.connect import functions as F
    from pyspark.sql.types import LongType

    plus_one = F.udf(lambda x: x + 1, LongType())
    session.range(10).withColumn("y", plus_one(F.col("id"))).collect()


def _timed(job, session: object) -> float:
    start = time.perf_counter()
    job(session)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=4, help="new sessions (first is warm-up)")
    args = parser.parse_args(argv)

    from pyspark.sql.connect.session import SparkSession

    from infra.spark_connect import start_connect_server
    from windowlib.engines.spark.session import connect_url

    server = start_connect_server()
    try:
        first, again = [], []
        for i in range(args.sessions):
            session = SparkSession.builder.remote(connect_url(server.url, str(uuid.uuid4()))
                                                  ).create()
            session.range(1).collect()      # the session exists; no Python yet
            new = _timed(_arrow_job, session) + _timed(_udf_job, session)
            warm = _timed(_arrow_job, session) + _timed(_udf_job, session)
            print(f"  session {i}: first Python jobs {new:5.2f} s, same jobs again {warm:5.2f} s"
                  + ("   (warm-up: the server's first Python work)" if i == 0 else ""), flush=True)
            if i:
                first.append(new)
                again.append(warm)
        if first:
            f, a = statistics.median(first), statistics.median(again)
            print(f"new session / same session (medians of sessions 1-{len(first)}): "
                  f"{f:.2f} s / {a:.2f} s = {f / a:.1f}x; per new session +{f - a:.2f} s",
                  flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
