"""The same windowlib runs on a 2-worker Spark standalone cluster and on ``local[2]``: the ratio.

Generates (once, cached) the synthetic clickstream of ``clickstream.py`` (``--events`` events,
``--keys`` keys, 48 hourly partitions), starts a local standalone cluster (``infra.spark_cluster``:
a master and two workers of one core, 1 GiB each, on 127.0.0.1), then runs each master in its
own fresh process (``local[2]`` first, then the cluster) and times, after a warm-up query and
once every executor has registered, the median of ``--repeat`` runs of:

- ``native_path``: windowlib's native path, tumbling 5 min ``sum`` + ``count``, all outputs;
- ``general``: the general path (the core per key in Python on the executors), same pipeline.

Both read the same Parquet files (``file://``: shared here because the workers are on this
machine; a real cluster reads shared storage). Prints both times and cluster/local per case.
Same cores (2) on both sides, so the ratio is the cost of the cluster itself (executor JVMs
talking over RPC, shuffle through the block manager, shipped code), not more hardware.

    .venv/bin/python benchmarks/cluster_vs_local.py [--events 10000000] [--keys 100000]
        [--repeat 1] [--cases native_path,general] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

CASES = ("native_path", "general")


def _pipeline():
    import windowlib as wl

    return (wl.Pipeline("bench", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
            .allowed_lateness(wl.Time.hours(1))
            .aggregate(wl.aggregates.sum("value").alias("total"), wl.aggregates.count()))


def _wait_for_executors(spark, cores: int, timeout_s: float = 120.0) -> None:
    """Block until executors with ``cores`` cores in total have registered (cluster only)."""
    deadline = time.monotonic() + timeout_s
    status = spark.sparkContext._jsc.sc().statusTracker()
    while time.monotonic() < deadline:
        executors = [e for e in status.getExecutorInfos() if e.host() and e.port() > 0]
        if len(executors) - 1 >= cores:   # minus the driver
            return
        time.sleep(0.5)
    raise SystemExit(f"executors with {cores} cores did not register in {timeout_s:.0f} s")


def worker(master: str, data: str, cases: list[str], repeat: int, cores: int) -> dict:
    """Time ``cases`` on a new session of ``master`` (this process is new for each master)."""
    import windowlib as wl
    from windowlib.engines.spark import run_dataframe
    from windowlib.engines.spark.session import get_or_create_session

    spark = get_or_create_session(master, app_name="windowlib-bench-cluster")
    if not master.startswith("local"):
        _wait_for_executors(spark, cores)
    frame = lambda: spark.read.parquet(data)   # noqa: E731 - a fresh read per run
    frame().groupBy("key").count().write.format("noop").mode("overwrite").save()  # warm-up

    def run(case: str) -> None:
        result = run_dataframe(_pipeline(), frame(), "arrival_hour",
                               watermark=wl.BoundedOutOfOrderness("10 minutes"),
                               finalize=True, path="native" if case == "native_path"
                               else "general")
        for out in (result.firings, result.late, result.rejects):
            out.write.format("noop").mode("overwrite").save()
        result.unpersist()

    times = {}
    for case in cases:
        samples = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run(case)
            samples.append(time.perf_counter() - t0)
        times[case] = statistics.median(samples)
    spark.stop()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--data", default=None, help="clickstream directory (default: cached "
                        "under the temp dir)")
    parser.add_argument("--worker", nargs=2, metavar=("MASTER", "CORES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    if set(cases) - set(CASES):
        parser.error(f"cases are {', '.join(CASES)}")
    data = args.data or os.path.join(tempfile.gettempdir(), "windowlib-bench",
                                     f"clickstream-e{args.events}-k{args.keys}")
    if args.worker:
        master, cores = args.worker
        print("TIMES " + json.dumps(worker(master, data, cases, args.repeat, int(cores))))
        return

    from infra.spark_cluster import start_cluster

    t0 = time.perf_counter()   # generated (or found) in a child: this process stays JVM-free
    subprocess.run([sys.executable, str(HERE / "clickstream.py"), "--events", str(args.events),
                    "--keys", str(args.keys), "--out", data], check=True)
    print(f"data: {data} ({args.events:,} events, ready in {time.perf_counter() - t0:.1f} s); "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)

    def timed_in_child(master: str, cores: int) -> dict:
        cmd = [sys.executable, __file__, "--events", str(args.events), "--keys",
               str(args.keys), "--repeat", str(args.repeat), "--cases", ",".join(cases),
               "--data", data, "--worker", master, str(cores)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        line = [x for x in proc.stdout.splitlines() if x.startswith("TIMES ")]
        if proc.returncode or not line:
            raise SystemExit(f"{master} failed:\n{proc.stderr[-3000:]}")
        return json.loads(line[0].removeprefix("TIMES "))

    local = timed_in_child("local[2]", 2)
    with start_cluster(2, cores=1, memory="1g") as cluster:
        on_cluster = timed_in_child(cluster.master_url, cluster.cores)
    print(f"median of {args.repeat}; load average {os.getloadavg()[0]:.1f} at the end")
    for case in cases:
        ratio = on_cluster[case] / local[case]
        print(f"  {case:<12} local[2] {local[case]:8.2f} s   2-worker cluster "
              f"{on_cluster[case]:8.2f} s   cluster/local {ratio:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
