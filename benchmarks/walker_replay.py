"""The pane walker's Python alone: capture once what Spark hands it, then replay it in one
process (CPU of one core, no Spark in the timing).

``capture`` runs the pane path of ``spark_general_path.py``'s pipeline (``--case``) once over
the clickstream and saves the walker's input rows (Parquet, one file per partition, in
order) and the walker function (cloudpickle). ``time`` replays every partition through the
function ``--repeat`` times and prints each wall and CPU time; ``profile`` runs it once under
cProfile; ``sample`` runs it once (after one unrecorded replay) under a CPU-time interval
timer (``--interval`` ms) and prints each function's share of the samples, counting each
sample for the innermost ``windowlib`` (or pipeline) function on the stack, whatever it called
outside (pyarrow, builtins): cProfile adds a fixed cost to every Python call, so it inflates the
per-firing functions' share, which sampling does not. Replays read the code on
``PYTHONPATH``, so two checkouts can be compared over the same captured input; only the
partition function itself (``walker.make_walker``'s ``walk``, with the garbage collector
setting around the walk) was saved by value: capture again to measure a change to it.

    PYTHONPATH=<checkout>:<checkout>/benchmarks .venv/bin/python benchmarks/walker_replay.py \\
        capture|time|profile|sample [--case python|python_batch] [--data DIR] [--out DIR]
        [--events N --keys K (capture)] [--repeat R (time)] [--interval MS --top N (sample)]
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import pickle
import shutil
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def capture(case: str, data: str, out: str, events: int = 1_000_000, keys: int = 100_000
            ) -> None:
    from clickstream import ensure_clickstream
    from pyspark import cloudpickle
    from spark_general_path import pipelines, ship_pipelines

    from windowlib.engines.spark import run_dataframe, walker_files
    from windowlib.engines.spark.session import get_or_create_session, scoped_conf

    spark = get_or_create_session()
    ship_pipelines(spark)
    frame = spark.read.parquet(ensure_clickstream(data, events, keys, spark=spark))
    original = walker_files.map_in_arrow

    def saved(rows, fn, schema):
        shutil.rmtree(out, ignore_errors=True)
        rows.write.parquet(os.path.join(out, "rows"))
        with open(os.path.join(out, "walker.pkl"), "wb") as f:
            cloudpickle.dump(fn, f)
        return original(rows, fn, schema)

    walker_files.map_in_arrow = saved
    try:    # the cached walker output: the walker itself goes to mapInArrow, not a file writer
        with scoped_conf(spark, {walker_files.WALKER_OUTPUT_CONF: "cache"}):
            result = run_dataframe(pipelines()[case], frame, arrival="arrival_hour",
                                   finalize=True, path="panes")
            result.unpersist()
    finally:
        walker_files.map_in_arrow = original


def replay(out: str) -> int:
    """Every captured partition through the walker function; the output rows' count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(os.path.join(out, "walker.pkl"), "rb") as f:
        walk = pickle.load(f)

    def as_spark_sends(schema):      # Parquet gives nanoseconds; Arrow from Spark UTC micros
        return pa.schema([pa.field(f.name, pa.timestamp("us", tz="UTC"))
                          if pa.types.is_timestamp(f.type) else f for f in schema])

    n = 0
    for path in sorted(glob.glob(os.path.join(out, "rows", "*.parquet"))):
        batches = (b.cast(as_spark_sends(b.schema))
                   for b in pq.ParquetFile(path).iter_batches(batch_size=10_000))
        for batch in walk(batches):
            n += batch.num_rows
    return n


def sampled(fn, interval: float) -> tuple[collections.Counter, float]:
    """Run ``fn`` under a CPU-time interval timer (``ITIMER_PROF``, every ``interval``
    seconds); return the samples per ``file:function`` (the innermost frame of a
    ``windowlib`` module or of the pipeline's own module; ``(outside windowlib)`` when none
    is on the stack) and the CPU seconds ``fn`` took. A signal is handled between bytecodes,
    so time in a C function (pyarrow, a builtin) counts for the Python function that called
    it."""
    import signal

    import spark_general_path

    import windowlib

    package = os.path.dirname(os.path.abspath(windowlib.__file__)) + os.sep
    pipelines = os.path.abspath(spark_general_path.__file__)
    counts: collections.Counter = collections.Counter()

    def ours(filename: str) -> bool:     # (``<windowlib ...>``: code windowlib compiled)
        return (filename.startswith(package) or filename.startswith("<windowlib")
                or filename == pipelines)

    def handler(_signum, frame) -> None:
        while frame is not None and not ours(frame.f_code.co_filename):
            frame = frame.f_back
        counts[f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}"
               if frame is not None else "(outside windowlib)"] += 1

    previous = signal.signal(signal.SIGPROF, handler)
    c0 = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, interval, interval)
    try:
        fn()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, previous)
    return counts, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("capture", "time", "profile", "sample"))
    parser.add_argument("--case", default="python", choices=("python", "python_batch"))
    parser.add_argument("--data", default="/tmp/wl-bench-1m", help="clickstream directory")
    parser.add_argument("--out", default=None, help="capture directory "
                        "(default: /tmp/wl-walker-<case>)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--events", type=int, default=1_000_000, help="capture: input events")
    parser.add_argument("--keys", type=int, default=100_000, help="capture: distinct keys")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="sample: CPU milliseconds between samples")
    parser.add_argument("--top", type=int, default=25, help="sample: functions printed")
    args = parser.parse_args()
    out = args.out or f"/tmp/wl-walker-{args.case}"
    if args.step == "capture":
        capture(args.case, args.data, out, args.events, args.keys)
    elif args.step == "profile":
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.runcall(replay, out)
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    elif args.step == "sample":
        replay(out)     # unrecorded: imports, first calls
        counts, cpu = sampled(lambda: replay(out), args.interval / 1000)
        total = sum(counts.values())
        print(f"{total} samples over {cpu:.2f} s CPU (one per {1000 * cpu / max(total, 1):.1f} "
              f"ms; asked {args.interval:g} ms: the kernel's timer tick can bound it); each "
              f"counted for the innermost windowlib or pipeline function on the stack")
        for where, n in counts.most_common(args.top):
            print(f"{100 * n / max(total, 1):6.1f} %  {where}")
    else:
        for _ in range(args.repeat):     # CPU time too: on a busy machine wall time is noise
            t0, c0 = time.perf_counter(), time.process_time()
            n = replay(out)
            print(f"{n} output rows in {time.perf_counter() - t0:.2f} s "
                  f"({time.process_time() - c0:.2f} s CPU)")


if __name__ == "__main__":
    main()
