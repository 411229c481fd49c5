"""Where a run's fixed costs on the driver go: DataFrame operations, Spark's analyser and
optimiser rules, py4j round trips — against hand-written Spark SQL's, in one process.

Two measured runs, each after ``--warmup`` untimed ones over the synthetic clickstream
(``clickstream.py``):

- **one-shot**: the native path's planning (``run_dataframe(..., path="native")`` until it
  returns: bundle plan, frames; nothing runs), the pipeline of ``spark_native_path.py``
  (tumbling 5 min, sum/count/max, 1 h lateness), over ``--events`` events in 48 hourly
  partitions; the baseline is hand-written SQL's ``groupBy(key, window).agg(...)`` frame.
  Then what a write of each frame pays before its first stage: Spark's optimisation and
  physical planning of it (``optimised``);
- **hourly**: one ``run_incremental`` of ``incremental_runs.py``'s pipeline after
  ``--warm-hours`` hourly runs (its
  ``RunSummary.phases`` too); its one Spark job is the routed write's ``collect``, printed
  apart from the operations that only build frames.

For each: py4j round trips (count, time waiting), DataFrame operations (Spark analyses each
new frame eagerly: count, time, and the ``--top`` costliest by windowlib caller), and the
analyser/optimiser/physical rules' time (Spark's ``RuleExecutor`` metrics, reset before the
run; the one-shot's exclude the ``spark.read.parquet`` listing both sides share). The machine's
load average is printed with them. Classic (py4j) sessions only; nothing here changes what a
run does.

    .venv/bin/python benchmarks/planning_costs.py [--events N] [--keys K] [--hours H]
        [--warmup W] [--warm-hours N] [--top T] [--data DIR]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import os
import re
import sys
import tempfile
import time
import traceback

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from clickstream import ensure_clickstream, load

import windowlib as wl

PACKAGE = os.path.dirname(os.path.abspath(wl.__file__))
ACTIONS = ("collect", "count")      # run Spark jobs: timed apart from the frames' building
OPERATIONS = ("select", "selectExpr", "filter", "where", "withColumn", "withColumns",
              "withColumnRenamed", "withColumnsRenamed", "drop", "join", "crossJoin", "union",
              "unionByName", "repartition", "coalesce", "hint", "alias", "toDF", "distinct",
              "dropDuplicates", "sortWithinPartitions", "orderBy", "sort", "limit",
              "mapInArrow", "mapInPandas", "persist", "cache", *ACTIONS)
_RULE = re.compile(r"^(\S+)\s+(\d+) / (\d+)\s+\d+ / \d+\s*$")


class Costs:
    """Counts py4j round trips and DataFrame operations while ``active`` (wrappers installed
    once, on the classic DataFrame class and py4j's client connection)."""

    def __init__(self) -> None:
        self.active = False
        self.ops: collections.Counter = collections.Counter()
        self.op_time: collections.Counter = collections.Counter()
        self.calls, self.call_time = 0, 0.0
        self._inside = False
        self._install()

    def _install(self) -> None:
        from py4j.clientserver import ClientServerConnection
        from pyspark.sql.classic.dataframe import DataFrame
        from pyspark.sql.group import GroupedData

        send = ClientServerConnection.send_command

        def counted_send(connection, command):
            if not self.active:
                return send(connection, command)
            t0 = time.perf_counter()
            try:
                return send(connection, command)
            finally:
                self.calls += 1
                self.call_time += time.perf_counter() - t0

        ClientServerConnection.send_command = counted_send
        for cls, names in ((DataFrame, OPERATIONS), (GroupedData, ("agg",))):
            for name in names:
                if callable(getattr(cls, name, None)):
                    setattr(cls, name, self._timed(getattr(cls, name), name))

    def _timed(self, method, name: str):
        def timed(*args, **kwargs):
            if not self.active or self._inside:     # an operation inside another: its own
                return method(*args, **kwargs)
            self._inside = True
            t0 = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                key = (caller(), name)
                self.ops[key] += 1
                self.op_time[key] += time.perf_counter() - t0
                self._inside = False
        return timed

    @contextlib.contextmanager
    def measuring(self):
        """Count inside the block. Python's cyclic garbage collector is run before and kept
        off inside: py4j releases a Java object with a round trip when its Python wrapper
        is collected, so a collection during the run would count earlier runs' objects."""
        gc.collect()
        gc.disable()
        self.ops.clear()
        self.op_time.clear()
        self.calls, self.call_time = 0, 0.0
        self.active = True
        try:
            yield self
        finally:
            self.active = False
            gc.enable()

    def split(self) -> tuple[float, int, float]:
        """``(time of the actions, number of building operations, their time)``."""
        acts = sum(t for (_, name), t in self.op_time.items() if name in ACTIONS)
        n = sum(c for (_, name), c in self.ops.items() if name not in ACTIONS)
        return acts, n, sum(self.op_time.values()) - acts


def caller() -> str:
    """The innermost windowlib frame calling an operation (``file:line function``)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename.startswith(PACKAGE + os.sep):
            return f"{os.path.relpath(frame.filename, PACKAGE)}:{frame.lineno} {frame.name}"
    return "(outside windowlib)"


def rules(spark) -> tuple[float, list[tuple[str, float]]]:
    """Spark's rule metrics since the last reset: total seconds and ``(rule, seconds)``."""
    text = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.dumpTimeSpent()
    found = [(m.group(1).rsplit(".", 1)[-1], int(m.group(3)) / 1e9)
             for m in map(_RULE.match, text.splitlines()) if m]
    return sum(t for _, t in found), sorted(found, key=lambda r: -r[1])


def report(label: str, wall: float, costs: Costs, spark, top: int, detail: bool) -> None:
    acts, n_ops, op_time = costs.split()
    total, by_rule = rules(spark)
    print(f"  {label:<24} {wall:6.3f} s; py4j {costs.calls:5d} calls, {costs.call_time:6.3f} s; "
          f"DataFrame operations {n_ops:3d}, {op_time:6.3f} s"
          + (f" (+ its job {acts:.3f} s)" if acts else "")
          + f"; rules {total:6.3f} s   [{load()}]", flush=True)
    if not detail:
        return
    print("    costliest operations (windowlib caller, method): time / count")
    for (where, name), t in costs.op_time.most_common(top):
        print(f"      {t * 1000:7.1f} ms / {costs.ops[(where, name)]:2d}  {where} {name}")
    print("    costliest rules: " + ", ".join(f"{r} {t * 1000:.0f} ms"
                                                 for r, t in by_rule[:top]))


def optimised(frame) -> tuple[float, float, float]:
    """Seconds Spark takes to optimise ``frame``'s analysed plan, then to plan it physically
    (before adaptive execution's own rules, which run when a query starts), and the rules'
    share of both: what a write of ``frame`` pays before its first stage, on top of the
    building measured by ``Costs``. Nothing runs."""
    spark = frame.sparkSession
    meter = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    execution = frame._jdf.queryExecution()
    execution.analyzed()
    meter.resetMetrics()
    t0 = time.perf_counter()
    execution.optimizedPlan()
    t1 = time.perf_counter()
    execution.executedPlan()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, rules(spark)[0]


def one_shot(spark, path: str, costs: Costs, warmup: int, top: int) -> None:
    from pyspark.sql import functions as F
    from spark_native_path import pipeline

    from windowlib.engines.spark import run_dataframe

    meter = spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    p = pipeline("5 minutes", None)
    runs = []

    def ours(df):
        runs.append(run_dataframe(p, df, "arrival_hour", finalize=True, path="native",
                                  watermark=wl.BoundedOutOfOrderness("10 minutes")))
        return runs[-1].firings

    def hand(df):
        return df.groupBy("key", F.window("ts", "5 minutes")).agg(
            F.sum("value").alias("total"), F.count(F.lit(1)).alias("count"),
            F.max("value").alias("peak"))

    for _ in range(warmup):       # the optimiser's code warms up too
        for build in (hand, ours):
            optimised(build(spark.read.parquet(path)))
        runs.pop().unpersist()
    for label, build in (("hand SQL", hand), ("native path planning", ours)):
        df = spark.read.parquet(path)         # the shared listing, outside the measure
        meter.resetMetrics()
        with costs.measuring():
            t0 = time.perf_counter()
            frame = build(df)
            wall = time.perf_counter() - t0
        report(label, wall, costs, spark, top, detail=build is ours)
        optimise, physical, ruled = optimised(frame)
        print(f"    then, before a write's first stage: optimised in {optimise * 1000:.1f} ms, "
              f"planned physically in {physical * 1000:.1f} ms (rules {ruled * 1000:.1f} ms)",
              flush=True)
    runs.pop().unpersist()


def hourly(spark, data: str, costs: Costs, warm_hours: int, top: int) -> None:
    from incremental_runs import WindowlibRuns

    names = sorted(d.split("=", 1)[1] for d in os.listdir(data) if d.startswith("arrival_hour="))
    runs = WindowlibRuns(spark, data, tempfile.mkdtemp(prefix="wl-planning-"))
    warm = max(1, min(warm_hours, len(names) - 1))
    for hour in names[:warm]:
        runs.run(hour)
    hour = names[warm]
    spark._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.resetMetrics()
    with costs.measuring():
        runs.run(hour)
    phases = ", ".join(f"{k} {v:.2f}" for k, v in runs.summaries[-1].phases.items())
    report(f"hourly run {hour}", runs.times[-1], costs, spark, top, detail=True)
    print(f"    phases (RunSummary): {phases}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--hours", type=int, default=48)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--warm-hours", type=int, default=10,
                        help="hourly runs before the measured one (a process's first runs "
                             "compile generated code)")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--data", default=None)
    args = parser.parse_args()

    from windowlib.engines.spark.session import get_or_create_session

    spark = get_or_create_session(app_name="windowlib-bench-planning")
    data = args.data or os.path.join(tempfile.gettempdir(), "windowlib-bench",
                                     f"clickstream-e{args.events}-k{args.keys}")
    path = ensure_clickstream(data, events=args.events, keys=args.keys, hours=args.hours,
                              spark=spark)
    costs = Costs()
    print(f"data: {path}; {spark.sparkContext.master}; {load()}")
    print("one-shot (frames only; nothing runs):")
    one_shot(spark, path, costs, args.warmup, args.top)
    print("hourly incremental run (warm):")
    hourly(spark, path, costs, args.warm_hours, args.top)
    spark.stop()


if __name__ == "__main__":
    main()
