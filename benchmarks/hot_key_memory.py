"""Memory per key: one key with ``--elements`` elements in one window, against Spark's own
grouped function, in one process.

The pipeline is issue 16's memory case (``tests/spark/test_hot_key_memory.py``): a
``ProcessWindowFunction`` that buffers every element of its pane (count, sum, first and last
timestamp), one tumbling day, four bundles, finalized, on the general path and on the pane
path. The baseline is what a user would write by hand for the same key: ``groupBy("key")
.applyInPandas`` with the same four results, which holds the group as one pandas frame.

A sampler thread reads the resident memory (``VmRSS``) of every Python worker Spark starts
(the children of the worker daemon the JVM starts) every 20 ms. The session runs with
``spark.python.worker.reuse=false``, so each run's workers are new processes and one run's
memory does not carry into the next. Prints, per run: the wall time, the largest worker's
peak, all workers' peak together, the largest worker's peak per element, and the ratios to
the baseline. The JVM keeps its default memory (local mode: 1 GiB).

    .venv/bin/python benchmarks/hot_key_memory.py [--elements N] [--runs general,panes]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import get_or_create_session

PAGE = os.sysconf("SC_PAGE_SIZE")


class Span(wl.ProcessWindowFunction):
    """Buffers the whole pane (the worst case for memory per key)."""

    result_schema = "n long, total long, first_ts long, last_ts long"

    def process(self, key, context, elements):
        yield {"n": len(elements), "total": sum(e["value"] for e in elements),
               "first_ts": elements[0]["ts"], "last_ts": elements[-1]["ts"]}


def span_by_hand(pdf):
    """The baseline's function: the same four results over the group's pandas frame."""
    import pandas as pd

    pdf = pdf.sort_values("ts")
    return pd.DataFrame({"key": [pdf["key"].iloc[0]], "n": [len(pdf)],
                         "total": [int(pdf["value"].sum())],
                         "first_ts": [int(pdf["ts"].iloc[0])],
                         "last_ts": [int(pdf["ts"].iloc[-1])]})


def _children(pids: set[int]) -> set[int]:
    """The processes whose parent is in ``pids``."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent in pids:
            found.add(int(entry))
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


class WorkerMemory:
    """Samples the resident memory of the JVM's Python workers (the daemon's children) while
    a block runs: ``largest`` one worker's peak, ``together`` the peak of their sum (bytes)."""

    def __init__(self, jvm_pid: int, every_s: float = 0.02) -> None:
        self.jvm_pid, self.every_s = jvm_pid, every_s
        self.largest = self.together = 0
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.is_set():
            daemons = _children({self.jvm_pid})
            sizes = [_rss(pid) for pid in _children(daemons)]
            if sizes:
                self.largest = max(self.largest, max(sizes))
                self.together = max(self.together, sum(sizes))
            self._stop.wait(self.every_s)

    def __enter__(self) -> WorkerMemory:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def hot_key(spark, n: int):
    """``n`` elements of the key ``hot`` in one day, in four bundles (``arrival``)."""
    return spark.range(n).selectExpr("'hot' AS key", "id AS ts", "id * 3 AS value",
                                     f"CAST(id DIV {max(1, n // 4)} AS INT) AS arrival")


def measure(jvm_pid: int, run) -> tuple[float, WorkerMemory, list]:
    """``run()``'s wall time, its workers' memory and its rows."""
    start = time.perf_counter()
    with WorkerMemory(jvm_pid) as memory:
        rows = run()
    return time.perf_counter() - start, memory, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, default=1_000_000)
    parser.add_argument("--runs", default="general,panes")
    args = parser.parse_args()
    n = args.elements
    spark = get_or_create_session(app_name="hot-key-memory",
                                  conf={"spark.python.worker.reuse": "false"})
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    p = (wl.Pipeline("hot", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.days(1))).process(Span()))
    columns = ["n", "total", "first_ts", "last_ts"]

    def by_hand():
        return hot_key(spark, n).groupBy("key").applyInPandas(
            span_by_hand, "key string, n long, total long, first_ts long, last_ts long"
        ).select(*columns).collect()

    def windowlib_on(path: str):
        def run():
            result = run_dataframe(p, hot_key(spark, n), "arrival", finalize=True,
                                   order_by="ts", path=path)
            rows = result.firings.select(*columns).collect()
            result.unpersist()
            return rows
        return run

    load = "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    print(f"one key, {n:,} elements in one window; {load}")
    by_hand()                                           # warm the session and the JVM
    seconds, base, expected = measure(jvm_pid, by_hand)
    print(f"{'applyInPandas (baseline)':28s} {seconds:6.2f} s  largest worker "
          f"{base.largest / 2**30:.2f} GB  all workers {base.together / 2**30:.2f} GB")
    for path in args.runs.split(","):
        seconds_p, memory, rows = measure(jvm_pid, windowlib_on(path))
        assert rows == expected, (path, rows, expected)
        print(f"{'windowlib, ' + path + ' path':28s} {seconds_p:6.2f} s  largest worker "
              f"{memory.largest / 2**30:.2f} GB  all workers {memory.together / 2**30:.2f} GB"
              f"  {memory.largest / n:.0f} bytes/element;  x baseline: time "
              f"{seconds_p / seconds:.2f}, largest worker {memory.largest / base.largest:.2f}")


if __name__ == "__main__":
    main()
