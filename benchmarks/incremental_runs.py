"""Successive hourly incremental runs against Spark Structured Streaming, in one process.

Over the synthetic clickstream (``benchmarks/clickstream.py``: ``--hours`` hourly
``arrival_hour`` partitions, ~2 % of events hours late, ~0.5 % a day late) this times, in one
warm session:

- windowlib: one ``run_incremental`` per hourly partition (checkpoint and outputs on
  ``file://``): tumbling 5 min, sum + count + max, default trigger, 1 h allowed lateness,
  ``BoundedOutOfOrderness(10 min)``, no GX gate (its cost is measured separately by the
  DAGs). Prints each run's time, Spark job and task counts (per-job and per-task scheduling
  latency is what a small run pays most) and state size, then run N / run 1 (goal ≤ 1.2x:
  cost follows new data plus live state, not history).
- Structured Streaming with ``trigger(availableNow=True)``, ``withWatermark('ts', '70 minutes')``
  (10 min out-of-orderness + 1 h lateness) and a file checkpoint, the hour's partition added to
  the stream's input before each run. Prints the per-run median ratio windowlib / SSS (goal
  ≤ 1.0x, then ≤ 0.5x), the mean one (which counts the runs that also compact the output
  tables) and how many input rows SSS dropped silently (its
  ``numRowsDroppedByWatermark``, and input rows neither in an emitted window nor in one still
  open at its final watermark) versus windowlib's late output. If a Structured Streaming
  run fails (its state store runs out of memory at 10M events), the failure is printed and
  the ratio covers the runs both completed. The load average is printed next to the figures
  (timings on a shared 2-core machine vary several-fold with it).

The two sides run hour by hour (``--order interleaved``, the default), the side that goes first
alternating, so that the JVM's warm-up and changes in the machine's load hit both alike, and
the run-by-run ratio compares two runs of the same hour made at the same moment.
``--order windowlib-first`` / ``sss-first`` time all runs of one side first (the order before
2026-11-30).

    .venv/bin/python benchmarks/incremental_runs.py --events 1000000 --keys 10000 --hours 48

Each windowlib run also prints the Java classes Spark's code generator compiled for it (a warm
run of the same pipeline should compile none: the run's clocks are not literals in its
plan). ``--interpreted-rows N`` overrides ``run_outputs.INTERPRETED_RUN_ROWS`` (runs of at most
N new plus state rows are evaluated without generated code; -1: never), and a small
``--events`` gives tiny runs, e.g. ``--events 10000 --keys 100`` (about 200 events per
hourly run).

``--runs N`` times only the first N hours (both sides) of the same data set. ``--early N``
adds early firings every N on-time elements per window (``CountTrigger.at_least(N)``, the
demo pipeline's trigger; Structured Streaming keeps its append-mode query) and ``--path``
forces windowlib's path, e.g. ``--early 20 --path general`` against ``--early 20``
(native: the early count carried in the window state).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from clickstream import code_source, ensure_clickstream, in_turn

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.jobs import spark_jobs
from windowlib.engines.spark.session import get_or_create_session


def pipeline(early: int | None = None) -> wl.Pipeline:
    p = (wl.Pipeline("bench_incremental", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5))))
    if early:
        p = p.trigger(wl.EventTimeTrigger.after_end_of_window()
                      .with_early_trigger(wl.CountTrigger.at_least(early)))
    return (p.allowed_lateness(wl.Time.hours(1))
            .aggregate(agg.sum("value").alias("total"), agg.count(), agg.max("value")))


class WindowlibRuns:
    """windowlib's side: one ``run_incremental`` per hourly partition (``run``)."""

    def __init__(self, spark, data: str, work: str, early: int | None = None,
                 path: str = "auto") -> None:
        self.spark, self.work, self.path = spark, work, path
        self.pipeline = pipeline(early)
        self.source = wl.PartitionedSource(f"file://{data}", partition="arrival_hour")
        self.times: list[float] = []
        self.summaries: list = []
        self.jobs: list = []
        self.compiled: list = []

    def run(self, hour: str) -> None:
        with spark_jobs(self.spark, "windowlib-run") as count:     # None over Spark Connect
            start = time.perf_counter()
            summary = wl.run_incremental(self.pipeline, self.source,
                                         f"file://{self.work}/checkpoints",
                                         f"file://{self.work}/windows", partitions=(hour, hour),
                                         watermark=wl.BoundedOutOfOrderness("10 minutes"),
                                         spark=self.spark, path=self.path)
            self.times.append(time.perf_counter() - start)
        self.summaries.append(summary)
        self.jobs.append(count.jobs)
        self.compiled.append(count.compiled)
        tasks = sum(map(sum, count.tasks))
        print(f"  windowlib {hour}: {self.times[-1]:6.2f} s  {self.jobs[-1]} Spark jobs "
              f"({tasks} tasks, {count.compiled} classes compiled)  "
              f"inputs {summary.inputs:>8}  late {summary.late:>6}  firings {summary.firings:>7}  "
              f"state {summary.state_rows} keys / {summary.state_bytes / 1e6:.1f} MB",
              flush=True)


class StreamingRuns:
    """Structured Streaming's side: one availableNow query per hour over a growing input
    folder, restarted from its file checkpoint each time (as a scheduled job would be);
    after a failed run (``failed``), ``run`` does nothing."""

    def __init__(self, spark, data: str, work: str) -> None:
        self.spark, self.data, self.work = spark, data, work
        self.inbox = os.path.join(work, "sss_input")
        os.makedirs(self.inbox)
        self.schema = spark.read.parquet(data).schema
        self.times: list[float] = []
        self.dropped, self.watermark, self.failed = 0, None, None

    def run(self, hour: str) -> None:
        from pyspark.sql import functions as F

        if self.failed:
            return
        shutil.copytree(os.path.join(self.data, f"arrival_hour={hour}"),
                        os.path.join(self.inbox, f"arrival_hour={hour}"))
        stream = (self.spark.readStream.schema(self.schema).parquet(self.inbox)
                  .withWatermark("ts", "70 minutes")
                  .groupBy("key", F.window("ts", "5 minutes"))
                  .agg(F.sum("value").alias("total"), F.count(F.lit(1)).alias("count"),
                       F.max("value").alias("max")))
        start = time.perf_counter()
        query = (stream.writeStream.format("parquet").outputMode("append")
                 .option("path", os.path.join(self.work, "sss_out"))
                 .option("checkpointLocation", os.path.join(self.work, "sss_checkpoint"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination()
        except Exception as exc:       # e.g. AGGREGATE_OUT_OF_MEMORY as its state grows
            reason = str(exc).strip().splitlines()[0][:200]
            print(f"  SSS {hour}: FAILED after {time.perf_counter() - start:.2f} s: {reason}",
                  flush=True)
            self.failed = f"run {len(self.times) + 1} ({hour}): {reason}"
            return
        self.times.append(time.perf_counter() - start)
        for progress in query.recentProgress:      # every micro-batch of this run
            for op in progress.get("stateOperators") or []:
                self.dropped += int(op.get("numRowsDroppedByWatermark") or 0)
            self.watermark = (progress.get("eventTime") or {}).get("watermark", self.watermark)
        print(f"  SSS {hour}: {self.times[-1]:6.2f} s  dropped by watermark so far "
              f"{self.dropped:,}", flush=True)

    def outcome(self) -> dict:
        """Rows in emitted windows, and rows of windows append mode has not emitted yet (end
        > the final watermark); after runs that all completed."""
        from pyspark.sql import functions as F

        out = self.spark.read.parquet(os.path.join(self.work, "sss_out"))
        emitted = out.agg(F.sum("count")).first()[0] or 0
        rows = self.spark.read.parquet(self.inbox)
        pending = rows.filter(F.window("ts", "5 minutes").end
                              > F.to_timestamp(F.lit(self.watermark))).count() \
            if self.watermark else 0
        return {"emitted": int(emitted), "pending": int(pending)}


def schedule(hours: list[str], order: str, skip_sss: bool) -> list[tuple[str, str]]:
    """The runs in the order they are timed: ``(side, hour)``. ``interleaved``: hour by hour,
    the side that goes first alternating (the module docstring)."""
    if skip_sss:
        return [("windowlib", h) for h in hours]
    if order == "windowlib-first":
        return [("windowlib", h) for h in hours] + [("sss", h) for h in hours]
    if order == "sss-first":
        return [("sss", h) for h in hours] + [("windowlib", h) for h in hours]
    return [(side, h) for i, h in enumerate(hours) for side in in_turn(["windowlib", "sss"], i)]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--hours", type=int, default=48)
    parser.add_argument("--data", default=None, help="clickstream directory (cached)")
    parser.add_argument("--runs", type=int, default=None,
                        help="run only the first RUNS hourly partitions (both sides)")
    parser.add_argument("--skip-sss", action="store_true")
    parser.add_argument("--order", default="interleaved",
                        choices=("interleaved", "windowlib-first", "sss-first"),
                        help="interleaved (default): hour by hour, alternating which side "
                             "goes first; the others time all runs of one side first")
    parser.add_argument("--early", type=int, default=None,
                        help="early firings every EARLY on-time elements of a window")
    parser.add_argument("--path", default="auto", choices=("auto", "native", "general"))
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--interpreted-rows", type=int, default=None,
                        help="override run_outputs.INTERPRETED_RUN_ROWS (-1: never interpret)")
    args = parser.parse_args()
    if args.interpreted_rows is not None:
        from windowlib.runs import run_outputs

        run_outputs.INTERPRETED_RUN_ROWS = args.interpreted_rows
    # Structured Streaming's HDFS state store keeps recent state versions on the JVM heap:
    # with the local default (1 GB) its runs slowed down and failed with OutOfMemoryError
    # after ~35 hours of this data, so both sides get 4 GB
    spark = get_or_create_session(app_name="windowlib-bench-incremental",
                                  conf={"spark.driver.memory": args.driver_memory})
    data = args.data or os.path.join(tempfile.gettempdir(), "windowlib-bench",
                                     f"clickstream-e{args.events}-k{args.keys}-h{args.hours}")
    ensure_clickstream(data, events=args.events, keys=args.keys, hours=args.hours, spark=spark)
    hours = sorted(d.split("=", 1)[1] for d in os.listdir(data) if d.startswith("arrival_hour="))
    hours = hours[:args.runs] if args.runs else hours
    with tempfile.TemporaryDirectory(prefix="wl-bench-inc-") as work:
        print(load())
        print(code_source())
        print(f"{len(hours)} hourly runs over {args.events:,} events, {args.keys:,} keys")
        print(f"order: {'windowlib only' if args.skip_sss else args.order}")
        ours = WindowlibRuns(spark, data, os.path.join(work, "wl"), early=args.early,
                             path=args.path)
        sss = None if args.skip_sss else StreamingRuns(spark, data, os.path.join(work, "sss"))
        for side, hour in schedule(hours, args.order, args.skip_sss):
            (ours if side == "windowlib" else sss).run(hour)
        times, summaries, jobs = ours.times, ours.summaries, ours.jobs
        compiled = ours.compiled
        if len(compiled) > 2 and None not in compiled:
            print(f"classes compiled per warm run (runs 3-{len(compiled)}): "
                  f"{min(compiled[2:])}-{max(compiled[2:])}")
        print(f"windowlib path: {summaries[-1].path}"
              + (f"; early firings every {args.early} on-time elements" if args.early else ""))
        inputs = sum(s.inputs for s in summaries)
        late = sum(s.late for s in summaries)
        rejects = sum(s.rejects for s in summaries)
        first = statistics.median(times[1:4]) if len(times) > 4 else times[0]
        last = statistics.median(times[-3:])
        print(f"windowlib: run 1 {times[0]:.2f} s (cold), runs 2-4 median {first:.2f} s, last 3 "
              f"runs median {last:.2f} s -> ratio {last / first:.2f} (goal <= 1.2); median "
              f"{statistics.median(times):.2f} s/run; inputs {inputs:,} = processed "
              f"{inputs - late - rejects:,} + late {late:,} + rejects {rejects:,}")
        if all(j is not None for j in jobs):
            print(f"Spark jobs per windowlib run: {min(jobs)}-{max(jobs)} (median "
                  f"{statistics.median(jobs):g})")
        warm = summaries[1:] or summaries
        names = dict.fromkeys(k for s in warm for k in s.phases)
        print("where a warm run's time goes (RunSummary.phases, median seconds of runs 2-): "
              + ", ".join(f"{k} {statistics.median(s.phases.get(k, 0.0) for s in warm):.2f}"
                          for k in names))
        sizes = [s.state_bytes for s in summaries]
        keys = [s.state_rows for s in summaries]
        half = len(sizes) // 2
        print(f"state: run 1 {keys[0]:,} keys / {sizes[0] / 1e6:.2f} MB, max {max(keys):,} keys "
              f"/ {max(sizes) / 1e6:.2f} MB, last {keys[-1]:,} keys / {sizes[-1] / 1e6:.2f} MB; "
              f"mean MB second half / first half "
              f"{statistics.mean(sizes[half:]) / max(statistics.mean(sizes[:half] or [1]), 1):.2f}"
              " (bounded: ~1.0, growing with history: ~3)")
        print(load(), flush=True)
        if sss is None:
            return
        sss_times = sss.times
        if len(sss_times) < 2:
            print(f"Structured Streaming failed: {sss.failed}")
            return
        done = len(sss_times)       # compare the runs both sides completed
        ratio = statistics.median(times[1:done]) / statistics.median(sss_times[1:])
        per_run = statistics.median(w / s for w, s in zip(times[1:done], sss_times[1:],
                                                           strict=True))
        print(f"Structured Streaming: run 1 {sss_times[0]:.2f} s, median "
              f"{statistics.median(sss_times):.2f} s/run over {done} runs; windowlib / SSS "
              f"per-run median ratio {ratio:.2f} (runs 2-{done}, run by run: {per_run:.2f}; "
              "goal <= 1.0, then <= 0.5)")
        # the mean counts the runs that also compact the output tables (the median leaves
        # them out): what a day of hourly runs costs
        means = statistics.mean(times[1:done]), statistics.mean(sss_times[1:])
        print(f"mean s/run, runs 2-{done} (what a day of runs costs): windowlib {means[0]:.2f}, "
              f"Structured Streaming {means[1]:.2f}, ratio {means[0] / means[1]:.2f}")
        if sss.failed:
            print(f"Structured Streaming FAILED at {sss.failed}; its own counter had dropped "
                  f"{sss.dropped:,} rows with no record by then (windowlib completed all "
                  f"{len(times)} runs: {late:,} late rows, each in its late output)")
            print(load(), flush=True)
            return
        seen = sss.outcome()
        silent = inputs - seen["emitted"] - seen["pending"]
        print(f"SSS: {seen['emitted']:,} rows in emitted windows, {seen['pending']:,} in windows "
              f"still open at its final watermark {sss.watermark}, {silent:,} rows "
              f"({silent / inputs:.2%}) dropped with no record (its own "
              f"numRowsDroppedByWatermark: {sss.dropped:,}); windowlib: {late:,} late rows, "
              "each in its late output with the reason")
        print(load(), flush=True)

if __name__ == "__main__":
    main()
