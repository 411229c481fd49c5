"""The pane path's time per stage against hand-written Spark SQL, in one process.

Over the clickstream of ``clickstream.py`` (the same data and pipelines as
``spark_general_path.py``), after ``--warmup`` untimed rounds of both sides (the JVM compiles
both over their first rounds: timed cold, hand SQL looks slower than it runs warm), ``--repeat``
rounds of hand SQL (``groupBy(key, window(ts, '5 minutes')).agg(sum, count)``) and a pane-path
run split into its stages, each timed (the side that goes first changes every round):

- ``run``: ``run_dataframe`` (planning, then the walker's pass into its kept output: Parquet
  files its tasks write on a local master, else the persisted frame);
- ``tagged``, ``late``, ``rejects``: a ``noop`` write of the walker output and of the two
  element outputs (``late`` and ``rejects`` read the kept output: one input scan in all).

Prints the medians and ``total / hand SQL``. The kept output is released after every run, so
no run reads another's.

    .venv/bin/python benchmarks/pane_stages.py [--case python_batch|python] [--repeat 5]
        [--warmup 3] [--events N] [--keys K] [--data DIR]
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

from clickstream import code_source, ensure_clickstream, in_turn, load
from spark_general_path import pipelines, ship_pipelines

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import get_or_create_session

STAGES = ("hand", "run", "tagged", "late", "rejects", "total")


def _timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="python_batch", choices=("python_batch", "python"),
                        help="the BatchWindowFunction or the ProcessWindowFunction pipeline")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed rounds of both sides first (hand SQL gets ~40 %% faster "
                             "over its first 4-6 rounds as the JVM compiles it)")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--data", default=None,
                        help="clickstream directory (default: a cache under the temp dir)")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    spark = get_or_create_session(app_name="windowlib-pane-stages")
    ship_pipelines(spark)
    data = args.data or os.path.join(tempfile.gettempdir(), "windowlib-bench",
                                     f"clickstream-e{args.events}-k{args.keys}")
    path = ensure_clickstream(data, events=args.events, keys=args.keys, spark=spark)

    def frame():
        return spark.read.parquet(path)

    def hand() -> None:
        (frame().groupBy("key", F.window("ts", "5 minutes"))
         .agg(F.sum("value"), F.count(F.lit(1))).write.format("noop").mode("overwrite").save())

    def noop(df) -> None:
        df.write.format("noop").mode("overwrite").save()

    pipeline = pipelines()[args.case]

    def ours() -> dict[str, float]:
        took, result = _timed(lambda: run_dataframe(
            pipeline, frame(), "arrival_hour", watermark=wl.BoundedOutOfOrderness("10 minutes"),
            finalize=True, path="panes"))
        times = {"run": took}
        for stage, out in (("tagged", result.run.detail.tagged), ("late", result.late),
                           ("rejects", result.rejects)):
            times[stage] = _timed(lambda out=out: noop(out))[0]
        times["total"] = sum(times[s] for s in ("run", "tagged", "late", "rejects"))
        result.unpersist()
        return times

    for _ in range(args.warmup):      # untimed: the JIT speeds both sides up for a few rounds
        hand()
        ours()
    seen: dict[str, list[float]] = {stage: [] for stage in STAGES}
    sides = {"hand": lambda: {"hand": _timed(hand)[0]}, "windowlib": ours}
    for i in range(args.repeat):
        for side in in_turn(list(sides), i):
            for stage, took in sides[side]().items():
                seen[stage].append(took)
        print(f"    hand {seen['hand'][-1]:.2f} s  windowlib {seen['total'][-1]:.2f} s "
              f"({load()})", flush=True)
    medians = {stage: statistics.median(values) for stage, values in seen.items()}
    print(f"{args.case}: {path}, median of {args.repeat} after {args.warmup} warm-up rounds; "
          f"{load()}; {code_source()}")
    print("  " + "  ".join(f"{stage} {medians[stage]:.2f} s" for stage in STAGES)
          + f"  ratio {medians['total'] / medians['hand']:.2f}x hand SQL", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
