"""Where the JVM's CPU goes while a one-shot run works: Java Flight Recorder samples by kind
of work, in one process.

Runs ``spark_general_path.py``'s pipeline ``--case`` on ``--path`` over the clickstream
``--warmup`` times unrecorded, then ``--runs`` times under a JFR recording (the JDK's own
sampling profiler, recording CPU samples every 10 ms, started from Python through py4j: no
agent, no restart) of the driver JVM,
which in ``local[*]`` runs the tasks too. Each run is timed as ``pane_stages.py`` times it
(``run_dataframe`` and a ``noop`` write of the tagged, ``late`` and ``rejects`` outputs,
the kept output released after the run). Prints, over all sampled Java threads, the
share of samples per kind of work (the first matching frame from the top of each stack: the
sort, Arrow both ways, the in-memory cache, projections, shuffle, Parquet) and the leaf
methods of the rest. Python's own time is not in these samples (``walker_replay.py``
measures the walkers' Python).

    .venv/bin/python benchmarks/jvm_profile.py [--case python] [--path panes|general|native]
        [--runs 4] [--warmup 3] [--events N] [--keys K] [--data DIR] [--keep FILE.jfr]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from clickstream import ensure_clickstream
from spark_general_path import pipelines, ship_pipelines

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import get_or_create_session

# (kind, substrings of a frame's class or method): a sample counts for the first kind one of
# its frames matches, looking from the top of the stack (the method running) downwards
KINDS = (
    ("sort", ("UnsafeInMemorySorter", "TimSort", "UnsafeExternalSorter",
              "UnsafeExternalRowSorter")),
    ("in-memory cache: column statistics", ("ColumnStats",)),
    ("in-memory cache: building and reading batches", ("ColumnBuilder", "columnar.compression",
                                                       "CachedBatch", "ColumnAccessor")),
    ("Arrow to rows (Python's output)", ("ArrowColumnVector", "ArrowReader", "ColumnarBatch",
                                         "PythonArrowOutput", "VectorLoader",
                                         "MessageChannelReader")),
    ("rows to Arrow (Python's input)", ("ArrowWriter", "PythonArrowInput", "VectorUnloader",
                                        "ArrowStreamWriter")),
    ("shuffle write", ("ShuffleWriter", "ShuffleExternalSorter")),
    ("shuffle read", ("ShuffleBlockFetcher", "UnsafeRowSerializer", "LZ4")),
    ("Parquet scan", ("parquet",)),
    ("code generation (compiling)", ("codehaus", "CodeGenerator", "GenerateUnsafe",
                                     "GenerateOrdering", "GeneratePredicate")),
    ("row projections", ("UnsafeRowWriter", "UnsafeWriter", "SpecificUnsafeProjection")),
    ("socket and stream IO", ("SocketOutputStream", "SocketInputStream", "BufferedOutputStream",
                              "BufferedInputStream", "DataOutputStream", "DataInputStream")),
    ("query planning (analyzer, optimizer)", ("catalyst.analysis", "catalyst.optimizer",
                                              "catalyst.rules", "QueryExecution")),
)
_FRAME = re.compile(r"^\s+([\w$.<>/]+)\(", re.M)


def kinds_of(samples_text: str) -> tuple[collections.Counter, collections.Counter, int]:
    """``(samples per kind, leaf methods of the unmatched ones, samples)`` of the text of
    ``jfr print --events jdk.ExecutionSample``."""
    per_kind: collections.Counter = collections.Counter()
    others: collections.Counter = collections.Counter()
    events = samples_text.split("jdk.ExecutionSample {")[1:]
    for event in events:
        frames = _FRAME.findall(event)
        kind = next((name for frame in frames for name, marks in KINDS
                     if any(mark in frame for mark in marks)), None)
        if kind is None:
            kind = "other"
            others[frames[0] if frames else "?"] += 1
        per_kind[kind] += 1
    return per_kind, others, len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="python", help="a pipeline of spark_general_path.py")
    parser.add_argument("--path", default="panes", choices=("panes", "general", "native"))
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--data", default=None,
                        help="clickstream directory (default: a cache under the temp dir)")
    parser.add_argument("--keep", default=None, help="keep the recording in this .jfr file")
    args = parser.parse_args()

    spark = get_or_create_session(app_name="windowlib-jvm-profile")
    ship_pipelines(spark)
    data = args.data or os.path.join(tempfile.gettempdir(), "windowlib-bench",
                                     f"clickstream-e{args.events}-k{args.keys}")
    path = ensure_clickstream(data, events=args.events, keys=args.keys, spark=spark)
    pipeline = pipelines()[args.case]

    def run() -> float:
        started = time.perf_counter()
        result = run_dataframe(pipeline, spark.read.parquet(path), "arrival_hour",
                               watermark=wl.BoundedOutOfOrderness("10 minutes"),
                               finalize=True, path=args.path)
        for out in (result.firings, result.late, result.rejects):
            out.write.format("noop").mode("overwrite").save()
        result.unpersist()
        return time.perf_counter() - started

    jvm = spark.sparkContext._jvm

    def recording() -> object:
        """A JFR recording of CPU samples only (every 10 ms): little overhead."""
        made = jvm.jdk.jfr.Recording()
        made.enable("jdk.ExecutionSample").withPeriod(jvm.java.time.Duration.ofMillis(10))
        return made

    # the JVM's first recording slows the run after it about twofold (compiled code is
    # redone): a first one before the warm-up runs takes that cost
    first = recording()
    first.start()
    first.stop()
    first.close()
    warm = [run() for _ in range(args.warmup)]
    recorded = recording()
    recorded.start()
    took = [run() for _ in range(args.runs)]
    recorded.stop()
    target = args.keep or os.path.join(tempfile.mkdtemp(prefix="wl-jfr-"), "run.jfr")
    recorded.dump(jvm.java.io.File(target).toPath())
    recorded.close()
    tool = os.path.join(jvm.java.lang.System.getProperty("java.home"), "bin", "jfr")
    text = subprocess.run([tool, "print", "--events", "jdk.ExecutionSample", "--stack-depth",
                           "64", target], capture_output=True, text=True, check=True).stdout
    per_kind, others, n = kinds_of(text)
    print(f"{args.case} on the {args.path} path, {path}: {args.runs} runs of "
          f"{', '.join(f'{t:.2f}' for t in took)} s recorded (warm-up "
          f"{', '.join(f'{t:.2f}' for t in warm)} s); {n} JVM CPU samples"
          + (f" (recording kept in {target})" if args.keep else ""))
    for kind, count in per_kind.most_common():
        print(f"  {count / max(n, 1):6.1%}  {kind}")
    print("  the most frequent methods running in 'other':")
    for method, count in others.most_common(8):
        print(f"  {count / max(n, 1):6.1%}    {method}")
    spark.stop()


if __name__ == "__main__":
    main()
