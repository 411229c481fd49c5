"""Issue-18 semantics through ``wl.run_incremental`` on Spark, one run per partition and one run
for all: a ``TimeEvictor`` evicting after the function removes the element exactly on the
cutoff, and the evicted pane is what the checkpoint carries to the next run; the window
function's context shows ``None`` for a watermark not known yet (a fresh checkpoint), never the
-inf sentinel. (The same scenario is the transcript
``evictors.yaml::time_evictor_evicts_the_element_exactly_on_the_cutoff_after_the_function``.)"""

from __future__ import annotations

import datetime as dt
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

import windowlib as wl

pytestmark = pytest.mark.spark
cloudpickle.register_pickle_by_value(sys.modules[__name__])

T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
MINUTE = 60_000
T0_MS = int(T0.timestamp() * 1000)


class Collect(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"values": [e["value"] for e in elements], "wm": context.current_watermark}


def pipeline() -> wl.Pipeline:
    return (wl.Pipeline("evict_incremental", timestamp="ts").key_by("key")
            .window(wl.GlobalWindows.create()).trigger(wl.CountTrigger.of(3))
            .evictor(wl.TimeEvictor.of("5 minutes", do_evict_after=True))
            .process(Collect()))


@pytest.fixture
def lake(tmp_path):
    minutes = [(1, 1), (5, 2), (6, 3)], [(8, 4), (10, 5), (11, 6)], [(12, 7), (13, 8), (16, 9)]
    for hour, rows in enumerate(minutes):
        folder = tmp_path / "events" / f"arrival_hour=2024-03-01T{hour:02d}"
        folder.mkdir(parents=True)
        table = pa.Table.from_pylist(
            [{"seq": i, "key": "a", "ts": T0 + dt.timedelta(minutes=m), "value": v}
             for i, (m, v) in enumerate(rows)],
            schema=pa.schema([("seq", pa.int64()), ("key", pa.string()),
                              ("ts", pa.timestamp("ms", tz="UTC")), ("value", pa.int64())]))
        pq.write_table(table, folder / "part-0.parquet")
    return tmp_path


def firings(spark, lake, tag: str, runs: list) -> list[tuple]:
    source = wl.PartitionedSource(f"file://{lake}/events", partition="arrival_hour",
                                  order_by=["seq"])
    where = (source, f"file://{lake}/{tag}/ck", f"file://{lake}/{tag}/out")
    for partitions in runs:
        summary = wl.run_incremental(pipeline(), *where, partitions=partitions, spark=spark,
                                     watermark=wl.MonotonousTimestamps())
        assert summary.status == "published" and summary.path == "general"
    rows = wl.read_firings(where[2], spark=spark).orderBy("pane_index").collect()
    return [(r["pane_index"], json.loads(r["result_json"])) for r in rows]


def test_time_evictor_cutoff_and_unknown_watermark_across_incremental_runs(spark, lake):
    expected = [
        (0, {"values": [1, 2, 3], "wm": None}),                  # ts 1 (on the cutoff) goes
        (1, {"values": [2, 3, 4, 5, 6], "wm": T0_MS + 6 * MINUTE - 1}),   # then 5 and 6 go
        (2, {"values": [4, 5, 6, 7, 8, 9], "wm": T0_MS + 11 * MINUTE - 1}),
    ]
    hourly = [(f"2024-03-01T{h:02d}", f"2024-03-01T{h:02d}") for h in range(3)]
    assert firings(spark, lake, "hourly", hourly) == expected
    assert firings(spark, lake, "once", [None]) == expected     # one run: the same
