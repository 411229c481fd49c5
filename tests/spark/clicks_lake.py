"""The small hourly clickstream lake that incremental-run tests share: its schema, first hour,
one pipeline (named per test module, so Spark catalog names never collide in a shared
session), how a partition file is written and where a run's checkpoint and outputs go."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import windowlib as wl
from windowlib import aggregates as agg

T0 = dt.datetime(2024, 3, 1, 0, 0, tzinfo=dt.UTC)
SCHEMA = pa.schema([("key", pa.string()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("value", pa.int64())])
# the rows of ``arriving_rows``: with their arrival order
SEQ_SCHEMA = pa.schema([("seq", pa.int64()), ("key", pa.string()),
                        ("ts", pa.timestamp("ms", tz="UTC")), ("value", pa.int64())])


def clicks_pipeline(name: str) -> wl.Pipeline:
    """30-minute tumbling sum and count, early firings every 3 elements, 3 h lateness."""
    return (wl.Pipeline(name, timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(3)))
            .allowed_lateness(wl.Time.hours(3))
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def hour_value(hour: int, t0: dt.datetime = T0) -> str:
    """The ``arrival_hour`` partition value of hour ``hour`` after ``t0``."""
    return (t0 + dt.timedelta(hours=hour)).strftime("%Y-%m-%dT%H")


def write_table(root, hour: int, table: pa.Table, name: str = "part-0",
                t0: dt.datetime = T0) -> None:
    """``table`` as ``arrival_hour=<t0 + hour>/<name>.parquet`` under ``root``."""
    folder = root / f"arrival_hour={hour_value(hour, t0)}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / f"{name}.parquet")


def write_partition(root, hour: int, rows: list[tuple], name: str = "part-0") -> None:
    """``rows`` of ``(key, ts, value)`` as ``arrival_hour=<T0 + hour>/<name>.parquet``."""
    write_table(root, hour, pa.Table.from_pylist(
        [{"key": k, "ts": t, "value": v} for k, t, v in rows], schema=SCHEMA), name)


def write_arrivals(root, hour: int, rows: list[dict], name: str = "part-0",
                   t0: dt.datetime = T0) -> None:
    """``rows`` of ``arriving_rows`` (``{seq, key, ts, value}``) as
    ``arrival_hour=<t0 + hour>/<name>.parquet``."""
    write_table(root, hour, pa.Table.from_pylist(rows, schema=SEQ_SCHEMA), name, t0)


def locations(lake, tag: str) -> dict:
    """``run_incremental`` keywords for the lake's ``events`` source under ``tag``."""
    return {"source": wl.PartitionedSource(f"file://{lake}/events", partition="arrival_hour"),
            "checkpoint": f"file://{lake}/{tag}/checkpoints",
            "output": f"file://{lake}/{tag}/windows"}


def arriving_rows(rng: Any, start: dt.datetime, first_seq: int, count: int, keys: str, *,
                  on_time: float, within: float, late: tuple[int, int],
                  beyond: tuple[int, int]) -> list[dict]:
    """``count`` rows ``{seq, key, ts, value}`` arriving in the hour from ``start`` (``seq``
    from ``first_seq``: the arrival order): with probability ``on_time`` on time and out of
    order (-10..59 minutes from ``start``), else up to ``within`` late by ``late`` minutes
    (within the lateness), else by ``beyond`` minutes (beyond it)."""
    rows = []
    for seq in range(first_seq, first_seq + count):
        u = rng.random()
        minutes = (rng.randint(-10, 59) if u < on_time else rng.randint(*late) if u < within
                   else rng.randint(*beyond))
        rows.append({"seq": seq, "key": rng.choice(keys),
                     "ts": start + dt.timedelta(minutes=minutes), "value": rng.randint(1, 9)})
    return rows
