"""Synthetic clickstream for the Spark benchmarks, generated in Spark and cached as Parquet.

``ensure_clickstream(path, events=..., keys=..., hours=..., seed=...)`` writes (once) a Parquet
dataset partitioned by ``arrival_hour`` (strings like ``2024-03-01T05``; exactly ``hours``
partitions) with columns ``key`` (string), ``ts`` (TimestampType, UTC) and ``value`` (long).
Every row is produced by Spark expressions over ``spark.range`` — no rows pass through the
driver. Invariants of the data:

- keys ``user0`` … ``user{keys-1}`` follow a Zipf-like rank/frequency law (``key = floor(keys
  · u²)`` for uniform ``u``: frequency ∝ rank^-0.5; ``user0`` is the hottest key);
- arrival times are spread evenly over ``hours`` hours from 2024-03-01T00:00Z; an event's time
  is its arrival time minus a delay: 0-2 min for ~97.5 % (so event times fall mostly inside the
  arrival hour, slightly out of order), 1-6 h for ~2 %, 24-36 h for ~0.5 % (more than a day
  late);
- the output is deterministic for given parameters (fixed seeds and partitioning);
- ``ts`` is stored as Parquet INT64 ``TIMESTAMP_MICROS`` (what pyarrow, Arrow-based writers and
  Spark with ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS`` write), not Spark's
  default INT96, which carries no min/max statistics; the native path reads the bundle plan
  from those statistics (``windowlib/engines/spark/bundle_stats.py``).

A marker file ``_clickstream.json`` (ignored by Parquet readers) names the parameters; a later
call with the same parameters returns at once. A directory holding anything but a previous
clickstream is never overwritten.

    .venv/bin/python benchmarks/clickstream.py --events 10000000 --out /tmp/clickstream
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

MARKER = "_clickstream.json"
FORMAT_VERSION = 2  # 2: ts stored as INT64 TIMESTAMP_MICROS (was Spark's default INT96)
START_EPOCH_S = 1_709_251_200  # 2024-03-01T00:00:00Z
LATE_HOURS_SHARE = 0.02
LATE_DAY_SHARE = 0.005


def load() -> str:
    """The machine's load average, printed next to every figure the benchmarks time."""
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def code_source() -> str:
    """Where the timed ``windowlib`` comes from, printed next to the figures: the driver's
    package, and a warning when local Python workers would import another one. They start
    as ``python -m ...``, which puts the working directory first on their path, so a
    ``windowlib/`` there wins over ``PYTHONPATH`` in the tasks (an A/B of two checkouts
    must run each from its own directory, ``docs/performance.md``)."""
    import windowlib

    driver = os.path.dirname(os.path.realpath(windowlib.__file__))
    here = os.path.realpath(os.path.join(os.getcwd(), "windowlib"))
    if os.path.isfile(os.path.join(here, "__init__.py")) and here != driver:
        return (f"windowlib from {driver} (driver); WARNING: the local Python workers import "
                f"{here}, the working directory's")
    return f"windowlib from {driver}"


def in_turn(sides: list, round_index: int) -> list:
    """``sides`` in the order they are timed in round ``round_index``: the side that goes
    first changes every round (a run's place in a round moved identical runs by ~40 ms)."""
    return list(sides) if round_index % 2 == 0 else list(sides)[::-1]


def _parameters(events: int, keys: int, hours: int, seed: int) -> dict[str, int]:
    for name, value in (("events", events), ("keys", keys), ("hours", hours)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return {"version": FORMAT_VERSION, "events": events, "keys": keys, "hours": hours,
            "seed": int(seed)}


def _read_marker(path: str) -> dict | None:
    try:
        with open(os.path.join(path, MARKER), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _check_overwritable(path: str) -> None:
    """Refuse to overwrite a directory that holds anything but a (partial) clickstream."""
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise ValueError(f"{path!r} exists and is not a directory")
    allowed = ("arrival_hour=", "_SUCCESS", "._SUCCESS", "_temporary", MARKER)
    foreign = [n for n in os.listdir(path) if not n.startswith(allowed)]
    if foreign:
        raise ValueError(f"{path!r} holds files that are not a clickstream ({foreign[:3]}); "
                         "choose an empty or new directory")


def clickstream_frame(spark: Any, events: int, keys: int, hours: int, seed: int) -> Any:
    """The clickstream as a lazy DataFrame (``key``, ``ts``, ``value``, ``arrival_hour``)."""
    from pyspark.sql import functions as F

    params = _parameters(events, keys, hours, seed)
    seed = params["seed"] * 100
    span_ms = hours * 3_600_000
    # a fixed partition count keeps rand() (seeded per partition) deterministic per parameters
    partitions = max(2, min(64, events // 500_000))
    u_key, u_jitter, u_kind, u_delay, u_value = (F.rand(seed + i) for i in range(5))
    arrival_ms = (F.lit(START_EPOCH_S * 1000)
                  + (F.col("id") * F.lit(span_ms) / F.lit(events)).cast("long")
                  + (u_jitter * F.lit(max(1, span_ms // events))).cast("long"))
    delay_ms = (F.when(u_kind < LATE_DAY_SHARE, (24 + u_delay * 12) * 3_600_000)
                .when(u_kind < LATE_DAY_SHARE + LATE_HOURS_SHARE, (1 + u_delay * 5) * 3_600_000)
                .otherwise(u_delay * 120_000)).cast("long")
    return (spark.range(0, events, 1, partitions)
            .select(
                F.concat(F.lit("user"), (u_key * u_key * F.lit(keys)).cast("long")
                         .cast("string")).alias("key"),
                arrival_ms.alias("arrival_ms"),
                delay_ms.alias("delay_ms"),
                (F.lit(1) + (u_value * 100).cast("long")).alias("value"))
            .select(
                "key",
                F.timestamp_millis(F.col("arrival_ms") - F.col("delay_ms")).alias("ts"),
                "value",
                F.date_format(F.timestamp_millis("arrival_ms"), "yyyy-MM-dd'T'HH")
                .alias("arrival_hour")))


def ensure_clickstream(path: str, events: int = 10_000_000, keys: int = 100_000,
                       hours: int = 48, seed: int = 7, spark: Any = None) -> str:
    """Write the clickstream to ``path`` unless the marker there names the same parameters;
    returns ``path``. ``spark`` defaults to windowlib's local session."""
    path = os.path.abspath(path)
    params = _parameters(events, keys, hours, seed)
    if _read_marker(path) == params:
        return path
    _check_overwritable(path)
    if spark is None:
        from windowlib.engines.spark.session import get_or_create_session

        spark = get_or_create_session(app_name="windowlib-clickstream")
    marker = os.path.join(path, MARKER)
    if os.path.exists(marker):
        os.remove(marker)  # a half-rewritten dataset must not look complete
    df = clickstream_frame(spark, events, keys, hours, seed)
    conf = "spark.sql.parquet.outputTimestampType"
    previous = spark.conf.get(conf)
    spark.conf.set(conf, "TIMESTAMP_MICROS")
    try:
        (df.repartition("arrival_hour").write.mode("overwrite")
         .partitionBy("arrival_hour").parquet(path))
    finally:
        spark.conf.set(conf, previous)
    with open(marker, "w", encoding="utf-8") as f:
        json.dump(params, f)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory (Parquet)")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--hours", type=int, default=48)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    path = ensure_clickstream(args.out, args.events, args.keys, args.hours, args.seed)
    print(f"clickstream: {args.events:,} events, {args.keys:,} keys, {args.hours} hourly "
          f"partitions at {path} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
