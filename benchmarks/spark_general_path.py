"""Spark general-path throughput against hand-written Spark SQL, in one process.

Reads the synthetic clickstream of ``clickstream.py`` (generated once in Spark and cached under
``--data``; ``--events`` events, ``--keys`` keys with a Zipf-like skew, 48 hourly
``arrival_hour`` partitions, ~2 % of events hours late, ~0.5 % more than a day late) and times
over the same Parquet (median of ``--repeat`` runs, warm session, ``noop`` sink so nothing is
collected):

- native: ``groupBy(key, window(ts, '5 minutes')).agg(sum, count)`` — the hand-written baseline;
- native_path: windowlib's native path on the declarative pipeline below (all three outputs);
- general path, declarative: tumbling 5 min ``sum`` + ``count``, default trigger, 1 h lateness,
  ``BoundedOutOfOrderness(10 min)``, all three outputs (firings, late, rejects);
- general path, Python: the same window with a ``ProcessWindowFunction`` and an early
  ``CountTrigger.at_least(5)``;
- pane path (``python_panes``): that pipeline as the planner runs it one-shot — the function
  once per firing (all three outputs); ``python_batch``: the same function written as a
  ``BatchWindowFunction`` (Arrow compute over thousands of panes per call);
- ``count_window`` / ``count_window_panes``: Flink's ``countWindow(10)`` (``GlobalWindows``, a
  purging ``CountTrigger.of(10)``) with the same function, on the general and the pane path;
- ``history`` / ``history_panes``: each key's whole history in one pane (``GlobalWindows`` and
  their default ``NeverTrigger``, fired at the end of the finalized input) with the same
  function, on the general and the pane path;
- ``proc_early`` / ``proc_early_panes``: the Python case's window with early firings by
  processing time instead of by count (``ProcessingTimeTrigger.after_first_element(10 min)``:
  the hour after the first element's arrival), on the general and the pane path;
- ``--hour``: the same three over one hourly partition (one bundle, ~100k distinct keys at the
  default size), where the fixed cost per key and per Python call dominates.

    .venv/bin/python benchmarks/spark_general_path.py [--events N] [--keys K] [--repeat R]
        [--data DIR] [--cases native,native_path,declarative,python,python_panes,python_batch,
                          count_window,count_window_panes,history,history_panes,
                          proc_early,proc_early_panes]
        [--hour 2024-03-01T05] [--result-schema]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from clickstream import code_source, ensure_clickstream

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import get_or_create_session
from windowlib.engines.spark.shipping import ship_code

CASES = ("native", "native_path", "declarative", "python", "python_panes", "python_batch",
         "count_window", "count_window_panes", "history", "history_panes", "proc_early",
         "proc_early_panes")
RESULT_SCHEMA = "n long, total long, pane long"


class Summary(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        total = 0
        for e in elements:
            total += e["value"]
        yield {"n": len(elements), "total": total, "pane": context.pane.index}


class SummaryBatch(wl.BatchWindowFunction):
    """``Summary`` for many panes per call (Arrow compute over the whole batch)."""

    result_schema = RESULT_SCHEMA

    def process_panes(self, panes):
        import pyarrow as pa

        grouped = panes.group_by("pane_id").aggregate(
            [("value", "count"), ("value", "sum"), ("pane_index", "max")])
        return pa.table({"pane_id": grouped.column("pane_id"),
                         "n": grouped.column("value_count"),
                         "total": grouped.column("value_sum"),
                         "pane": grouped.column("pane_index_max")})


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ship_pipelines(spark) -> None:
    """Make this module and ``clickstream`` importable by ``spark``'s Python workers, for
    scripts that import ``pipelines`` from here: their functions are then pickled by
    reference to this module (run as a script, they travel by value)."""
    ship_code(spark, ["spark_general_path", "clickstream"], force=True)


def pipelines() -> dict:
    declarative = (wl.Pipeline("bench", timestamp="ts").key_by("key")
                   .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
                   .allowed_lateness(wl.Time.hours(1))
                   .aggregate(wl.aggregates.sum("value").alias("total"),
                              wl.aggregates.count()))

    def early_counts(name: str) -> wl.Pipeline:
        return (wl.Pipeline(name, timestamp="ts").key_by("key")
                .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
                .trigger(wl.EventTimeTrigger.after_end_of_window()
                         .with_early_trigger(wl.CountTrigger.at_least(5)))
                .allowed_lateness(wl.Time.hours(1)))

    python = early_counts("bench_py").process(Summary())
    batch = early_counts("bench_batch").process_panes(SummaryBatch())
    # Flink's countWindow(10): GlobalWindows, a purging CountTrigger
    count_window = (wl.Pipeline("bench_cw", timestamp="ts").key_by("key")
                    .window(wl.GlobalWindows.create())
                    .trigger(wl.PurgingTrigger.of(wl.CountTrigger.of(10))).process(Summary()))
    # a key's whole history: GlobalWindows' default NeverTrigger fires once, at the end
    history = (wl.Pipeline("bench_history", timestamp="ts").key_by("key")
               .window(wl.GlobalWindows.create()).process(Summary()))
    proc_early = (wl.Pipeline("bench_proc", timestamp="ts").key_by("key")
                  .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
                  .trigger(wl.EventTimeTrigger.after_end_of_window().with_early_trigger(
                      wl.ProcessingTimeTrigger.after_first_element(wl.Time.minutes(10))))
                  .allowed_lateness(wl.Time.hours(1)).process(Summary()))
    return {"declarative": declarative, "python": python, "python_batch": batch,
            "count_window": count_window, "history": history, "proc_early": proc_early}


def bench(spark, frame, label: str, cases: list[str], repeat: int,
          result_schema: bool = False, warmup: int = 4) -> None:
    """Time ``cases`` over ``frame()`` (a fresh read each run) and print one line each; the
    baseline after ``warmup`` untimed runs (the JVM compiles it over its first runs)."""
    from pyspark.sql import functions as F

    n = frame().count()
    keys = frame().select("key").distinct().count()
    print(f"{label}: {n:,} events, {keys:,} distinct keys, median of {repeat}")

    def native():
        (frame().groupBy("key", F.window("ts", "5 minutes"))
         .agg(F.sum("value").alias("total"), F.count(F.lit(1)).alias("n"))
         .write.format("noop").mode("overwrite").save())

    def general(pipeline):
        # typed result columns instead of result_json (the Python case only)
        schema = RESULT_SCHEMA if result_schema and pipeline.name in (
            "bench_py", "bench_cw", "bench_history", "bench_proc") else None

        def run():
            result = run_dataframe(pipeline, frame(), "arrival_hour",
                                   watermark=wl.BoundedOutOfOrderness("10 minutes"),
                                   finalize=True, result_schema=schema, path="general")
            result.general.tagged.write.format("noop").mode("overwrite").save()
            result.unpersist()
        return run

    def native_path():
        result = run_dataframe(pipelines()["declarative"], frame(), "arrival_hour",
                               watermark=wl.BoundedOutOfOrderness("10 minutes"),
                               finalize=True, path="native")
        for out in (result.firings, result.late, result.rejects):
            out.write.format("noop").mode("overwrite").save()

    def pane_path(name: str):
        def run():
            schema = RESULT_SCHEMA if result_schema and name in (
                "python", "count_window", "history", "proc_early") else None
            result = run_dataframe(pipelines()[name], frame(), "arrival_hour",
                                   watermark=wl.BoundedOutOfOrderness("10 minutes"),
                                   finalize=True, result_schema=schema, path="panes")
            for out in (result.run.detail.tagged, result.late, result.rejects):
                out.write.format("noop").mode("overwrite").save()
            result.unpersist()
        return run

    runs = {"native": native, "native_path": native_path, "python_panes": pane_path("python"),
            "python_batch": pane_path("python_batch"),
            "count_window_panes": pane_path("count_window"),
            "history_panes": pane_path("history"),
            "proc_early_panes": pane_path("proc_early"),
            **{k: general(p) for k, p in pipelines().items() if k != "python_batch"}}
    labels = {"native": "hand-written Spark SQL (groupBy key, window 5 min; sum, count)",
              "native_path": "windowlib native path, declarative sum+count (all outputs)",
              "declarative": "general path, declarative sum+count (all outputs)",
              "python": "general path, ProcessWindowFunction + early count trigger",
              "python_panes": "pane path, the same ProcessWindowFunction (all outputs)",
              "python_batch": "pane path, the same as a BatchWindowFunction (all outputs)",
              "count_window": "general path, count windows of 10 (purging), the same function",
              "count_window_panes": "pane path, the same count windows (all outputs)",
              "history": "general path, each key's whole history, the same function",
              "history_panes": "pane path, the same whole histories (all outputs)",
              "proc_early": "general path, early firings by processing time, the same fn",
              "proc_early_panes": "pane path, the same early firings (all outputs)"}
    for _ in range(warmup):
        native()
    t_native = timed(native, repeat)
    print(f"  {labels['native']:<64}{t_native:7.2f} s {n / t_native:>12,.0f} events/s")
    t_path = None
    for case in cases:
        if case == "native":
            continue
        t = timed(runs[case], repeat)
        if case == "native_path":
            t_path = t
        versus = f"   {t / t_path:5.1f}x native path" if t_path and case != "native_path" else ""
        print(f"  {labels[case]:<64}{t:7.2f} s {n / t:>12,.0f} events/s   "
              f"{t / t_native:5.1f}x hand SQL{versus}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=4,
                        help="untimed runs of the hand-written baseline before it is timed "
                             "(cold, it runs ~40 %% slower than warm)")
    parser.add_argument("--data", default=None,
                        help="clickstream directory (default: a cache under the temp dir)")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--hour", default=None,
                        help="also time one arrival_hour partition, e.g. 2024-03-01T05")
    parser.add_argument("--result-schema", action="store_true",
                        help=f"Python case: pass result_schema={RESULT_SCHEMA!r} (typed "
                        "columns) instead of the default result_json")
    parser.add_argument("--skip-full", action="store_true",
                        help="time only the --hour partition")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; choose from {', '.join(CASES)}")

    import tempfile

    spark = get_or_create_session(app_name="windowlib-bench")
    data = args.data or os.path.join(tempfile.gettempdir(), "windowlib-bench",
                                     f"clickstream-e{args.events}-k{args.keys}")
    t0 = time.perf_counter()
    path = ensure_clickstream(data, events=args.events, keys=args.keys, spark=spark)
    print(f"data: {path} (ready in {time.perf_counter() - t0:.1f} s); local[2]; "
          f"{code_source()}")
    if not args.skip_full:
        bench(spark, lambda: spark.read.parquet(path), "all partitions", cases, args.repeat,
              args.result_schema, args.warmup)
    if args.hour:
        hour = args.hour
        if not hour.replace("-", "").replace("T", "").isdigit():
            parser.error("--hour looks like 2024-03-01T05")
        part = os.path.join(path, f"arrival_hour={hour}")
        if not os.path.isdir(part):
            parser.error(f"no partition {part}")
        from pyspark.sql import functions as F

        bench(spark, lambda: spark.read.option("basePath", path).parquet(part)
              .withColumn("arrival_hour", F.col("arrival_hour").cast("string")),
              f"one hourly partition ({hour})", cases, args.repeat, args.result_schema,
              args.warmup)
    spark.stop()


if __name__ == "__main__":
    main()
