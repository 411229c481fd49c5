"""Spark general-path throughput against hand-written Spark SQL, in one process.

Generates a synthetic clickstream in Spark (``--events`` events, ``--keys`` keys with a skewed
distribution, hourly ``arrival_hour`` partitions, ~2 % of events arriving hours late), writes
it to Parquet once, then times over the same Parquet (median of ``--repeat`` runs, warm
session, ``noop`` sink so nothing is collected):

- native: ``groupBy(key, window(ts, '5 minutes')).agg(sum, count)`` — the hand-written baseline;
- general path, declarative: tumbling 5 min ``sum`` + ``count``, default trigger, 1 h lateness,
  ``BoundedOutOfOrderness(10 min)``, all three outputs (firings, late, rejects);
- general path, Python: the same window with a ``ProcessWindowFunction`` and an early
  ``CountTrigger.at_least(5)``.

    .venv/bin/python benchmarks/spark_general_path.py [--events N] [--keys K] [--repeat R]
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

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import get_or_create_session


class Summary(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        total = 0
        for e in elements:
            total += e["value"]
        yield {"n": len(elements), "total": total, "pane": context.pane.index}


def generate(spark, path: str, events: int, keys: int) -> None:
    from pyspark.sql import functions as F

    hours = 48
    span_s = hours * 3600
    df = (spark.range(events)
          # skewed keys: the square of a uniform number favours small key ids
          .withColumn("u", F.rand(11))
          .withColumn("key", F.concat(F.lit("user"), (F.col("u") * F.col("u") * keys)
                                      .cast("int").cast("string")))
          .withColumn("ts_s", (F.col("id") * span_s / events).cast("long")
                      - (F.rand(12) * 120).cast("long"))
          .withColumn("late_s", F.when(F.rand(13) < 0.02, (F.rand(14) * 6 * 3600).cast("long"))
                      .otherwise(F.lit(0)))
          .withColumn("ts", F.timestamp_seconds(F.lit(1_709_251_200) + F.col("ts_s")))
          .withColumn("arrival_hour", F.date_format(
              F.timestamp_seconds(F.lit(1_709_251_200) + F.col("ts_s") + F.col("late_s")
                                  + F.lit(60)), "yyyy-MM-dd'T'HH"))
          .withColumn("value", (F.col("id") % 100).cast("long"))
          .select("key", "ts", "value", "arrival_hour"))
    df.write.mode("overwrite").parquet(path)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from pyspark.sql import functions as F

    spark = get_or_create_session(app_name="windowlib-bench")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events")
        generate(spark, path, args.events, args.keys)
        events = spark.read.parquet(path)
        n = events.count()
        bundles = events.select("arrival_hour").distinct().count()
        print(f"{n:,} events, {args.keys:,} keys (skewed), {bundles} hourly bundles, "
              f"local[2], median of {args.repeat}")

        def native():
            (spark.read.parquet(path)
             .groupBy("key", F.window("ts", "5 minutes"))
             .agg(F.sum("value").alias("total"), F.count(F.lit(1)).alias("n"))
             .write.format("noop").mode("overwrite").save())

        declarative = (wl.Pipeline("bench", timestamp="ts").key_by("key")
                       .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
                       .allowed_lateness(wl.Time.hours(1))
                       .aggregate(wl.aggregates.sum("value").alias("total"),
                                  wl.aggregates.count()))
        python = (wl.Pipeline("bench_py", timestamp="ts").key_by("key")
                  .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
                  .trigger(wl.EventTimeTrigger.after_end_of_window()
                           .with_early_trigger(wl.CountTrigger.at_least(5)))
                  .allowed_lateness(wl.Time.hours(1))
                  .process(Summary()))

        def general(pipeline):
            def run():
                result = run_dataframe(pipeline, spark.read.parquet(path), "arrival_hour",
                                       watermark=wl.BoundedOutOfOrderness("10 minutes"),
                                       finalize=True)
                result.general.tagged.write.format("noop").mode("overwrite").save()
                result.unpersist()
            return run

        native()  # warm-up
        t_native = timed(native, args.repeat)
        t_decl = timed(general(declarative), args.repeat)
        t_py = timed(general(python), args.repeat)
        print(f"{'hand-written Spark SQL (groupBy key, window 5 min; sum, count)':<64}"
              f"{t_native:7.2f} s {n / t_native:>12,.0f} events/s")
        for label, t in (("general path, declarative sum+count (all outputs)", t_decl),
                         ("general path, ProcessWindowFunction + early count trigger", t_py)):
            print(f"{label:<64}{t:7.2f} s {n / t:>12,.0f} events/s   {t / t_native:5.1f}x "
                  "native")
    spark.stop()


if __name__ == "__main__":
    main()
