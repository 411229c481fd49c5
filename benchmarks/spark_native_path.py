"""Spark native path against hand-written Spark SQL, in one process.

Reads the synthetic clickstream of ``clickstream.py`` (``ensure_clickstream``: ``--events``
events, ``--keys`` skewed keys, 48 hourly ``arrival_hour`` partitions, ~2 % of events hours
late, ~0.5 % more than a day late; generated once and cached under ``--data``) and times over
the same Parquet, warm session (``--warmup`` untimed rounds of both sides first), ``noop``
sink (nothing collected), median of ``--repeat`` (runs alternate, the side that goes first
changing every round, so load changes on a shared machine hit both sides alike):

- hand-written SQL: ``groupBy(key, window(ts, ...)).agg(sum, count, max)``;
- the native path (``run_dataframe(..., path="native")``): the same aggregates, default trigger,
  1 h allowed lateness, ``BoundedOutOfOrderness(10 min)``, finalized; its firings (on-time and
  late panes) written to the noop sink, plus the late and rejects outputs in ``--all-outputs``;
  the time includes planning (the bundle plan: Parquet footers, or one small aggregate job),
  printed separately too, with the shape the firings took (``NativeRun.shape``: the shared
  scan for sparse keys, else the partial aggregate). Both sides' times include
  ``spark.read.parquet`` (listing the partitions and reading a footer for the schema: ~0.25 s
  for the 48 partitions here), printed apart as ``read``, not as windowlib's planning.

Cases: tumbling 5 min; sliding 1 h every 5 min; ``sessions``: windowlib session windows (30 min
gap; the planner's path: the pane path's session walker) against Spark's ``session_window``;
``sessions_general``: the same on the general path (the core's driver per element). Prints each
time, the ratio windowlib / hand and the machine load (``os.getloadavg``) next to every figure.

    .venv/bin/python benchmarks/spark_native_path.py [--events N] [--keys K] [--repeat R]
        [--warmup W] [--data DIR] [--cases tumbling,sliding,sessions,sessions_general]
        [--all-outputs]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from clickstream import ensure_clickstream, in_turn, load

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import get_or_create_session

CASES = {"tumbling": ("5 minutes", None), "sliding": ("1 hour", "5 minutes"),
         "sessions": ("30 minutes", "session"), "sessions_general": ("30 minutes", "session")}


def timed(runs: dict, repeat: int) -> dict:
    """Median seconds per run; the runs alternate, so load changes on a shared machine hit
    every run alike, the one that goes first changing every round (``in_turn``)."""
    times: dict = {name: [] for name in runs}
    for i in range(repeat):
        for name in in_turn(list(runs), i):
            t0 = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - t0)
            print(f"    {name}: {times[name][-1]:.2f} s ({load()})", flush=True)
    return {name: statistics.median(t) for name, t in times.items()}


def pipeline(size: str, slide: str | None) -> wl.Pipeline:
    if slide == "session":
        assigner = wl.EventTimeSessionWindows.with_gap(size)
    elif slide is None:
        assigner = wl.TumblingEventTimeWindows.of(size)
    else:
        assigner = wl.SlidingEventTimeWindows.of(size, slide)
    return (wl.Pipeline("bench_native", timestamp="ts").key_by("key").window(assigner)
            .allowed_lateness(wl.Time.hours(1))
            .aggregate(wl.aggregates.sum("value").alias("total"), wl.aggregates.count(),
                       wl.aggregates.max("value").alias("peak")))


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def bench_case(frame, case: str, repeat: int, all_outputs: bool, warmup: int = 1) -> None:
    """Time hand-written SQL and windowlib for one case (alternating, after ``warmup``
    untimed rounds of both); print one line."""
    from pyspark.sql import functions as F

    size, slide = CASES[case]
    p = pipeline(size, slide)
    path = "native" if slide != "session" else "general" if case.endswith("general") \
        else "auto"
    plan_times: list[float] = []
    read_times: list[float] = []
    sources: list[str] = []

    def hand():
        if slide == "session":
            window = F.session_window("ts", size)
        else:
            window = F.window("ts", size) if slide is None else F.window("ts", size, slide)
        noop(frame().groupBy("key", window).agg(
            F.sum("value").alias("total"), F.count(F.lit(1)).alias("count"),
            F.max("value").alias("peak")))

    def ours():
        t0 = time.perf_counter()
        df = frame()        # timed with the run, as hand SQL's own read is
        read_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = run_dataframe(p, df, "arrival_hour",
                               watermark=wl.BoundedOutOfOrderness("10 minutes"),
                               finalize=True, path=path)
        plan_times.append(time.perf_counter() - t0)
        if result.native is not None:
            sources.append(f"{result.native.plan_source}; firings: {result.native.shape}")
        noop(result.firings)
        if all_outputs:
            noop(result.late)
            noop(result.rejects)
        result.unpersist()

    from windowlib.engines.spark.planner import choose_path

    name = "native path" if path == "native" else \
        f"windowlib ({choose_path(p, path).path} path)"
    for _ in range(warmup):     # warm-up (JIT, file listing cache)
        hand()
        ours()
    plan_times.clear()
    read_times.clear()
    sources.clear()
    median = timed({"hand SQL": hand, name: ours}, repeat)
    t_hand = median["hand SQL"]
    label = f"{case} {size}" + (f" / {slide}" if slide and slide != "session" else "")
    print(f"  {label:<22} hand SQL {t_hand:7.2f} s   {name} {median[name]:7.2f} s "
          f"(read {statistics.median(read_times):.2f} s, planning "
          f"{statistics.median(plan_times):.2f} s; bundle plan from "
          f"{sources[-1] if sources else '-'})   ratio {median[name] / t_hand:5.2f}x   "
          f"[{load()}]", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed rounds of both sides first (the JVM's JIT speeds "
                             "both up over the first 4-6 rounds)")
    parser.add_argument("--data", default=None)
    parser.add_argument("--cases", default="tumbling,sliding,sessions")
    parser.add_argument("--all-outputs", action="store_true",
                        help="also write the late and rejects outputs of the native path")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    if set(cases) - set(CASES):
        parser.error(f"unknown cases; choose from {', '.join(CASES)}")

    spark = get_or_create_session(app_name="windowlib-bench-native")
    data = args.data or os.path.join(tempfile.gettempdir(), "windowlib-bench",
                                     f"clickstream-e{args.events}-k{args.keys}")
    t0 = time.perf_counter()
    path = ensure_clickstream(data, events=args.events, keys=args.keys, spark=spark)
    print(f"data: {path} (ready in {time.perf_counter() - t0:.1f} s); "
          f"{spark.sparkContext.master if hasattr(spark, 'sparkContext') else 'connect'}; "
          f"median of {args.repeat}; {load()}; shared machine: absolute times vary with load")

    def frame():
        return spark.read.parquet(path)

    for case in cases:
        bench_case(frame, case, args.repeat, args.all_outputs, args.warmup)
    spark.stop()


if __name__ == "__main__":
    main()
