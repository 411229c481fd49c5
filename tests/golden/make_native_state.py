"""Writes the golden native window state (``native_windows_v<N>/``) for
``tests/spark/test_native_state_golden.py``.

Run by hand (``python tests/golden/make_native_state.py``) when ``NATIVE_STATE_FORMAT`` is
bumped, to add the new version's folder; an existing folder is never overwritten. The folder
pins the format it was written in: the test restores it forever and continues a run from it,
which must equal the reference engine over the whole history.

Files: ``state.parquet`` (the window state after ``FIRST`` — what a native incremental run
commits) and ``clock.json`` (watermark, processing time and largest event time after it).
Do not edit ``pipeline``, ``FIRST`` or ``RESUME`` once a folder exists for them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import windowlib as wl
from windowlib import aggregates as agg

HERE = Path(__file__).resolve().parent
# (arrival, processing time, [(key, ts, value), ...]) per bundle, in ms
FIRST = [(0, 10_000, [("a", 1_000, 2), ("a", 2_000, 3), ("b", 5_000, 4)]),
         (1, 20_000, [("a", 15_000, 1)])]
RESUME = [(2, 30_000, [("a", 3_000, 10), ("b", 12_000, 1), ("a", 25_000, 7),
                       ("c", 3_500, 9)])]


def pipeline() -> wl.Pipeline:
    """Tumbling 10 s, 20 s of lateness, retracting: the state holds accumulators, flags and the
    last firing's results."""
    return (wl.Pipeline("golden_native", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10_000)).allowed_lateness(20_000)
            .accumulation("accumulating_and_retracting")
            .aggregate(agg.sum("value").alias("total"), agg.count(),
                       agg.max("value").alias("peak")))


def frame(spark, bundles) -> object:
    rows = [(k, ts, v, arrival, i) for arrival, _, elements in bundles
            for i, (k, ts, v) in enumerate(elements)]
    return spark.createDataFrame(rows, "key string, ts long, value long, arrival long, "
                                       "seq long")


def processing_times(bundles) -> dict:
    return {arrival: p for arrival, p, _ in bundles}


def main() -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from windowlib.engines.spark.native_incremental import (
        NATIVE_STATE_FORMAT,
        run_native_incremental,
    )
    from windowlib.engines.spark.session import get_or_create_session

    folder = HERE / f"native_windows_v{NATIVE_STATE_FORMAT}"
    if folder.exists():
        print(f"{folder} exists: the format it pins must not change", file=sys.stderr)
        return 1
    spark = get_or_create_session()
    run = run_native_incremental(pipeline(), frame(spark, FIRST), "arrival",
                                 watermark=wl.BoundedOutOfOrderness(0), order_by="seq",
                                 processing_time=processing_times(FIRST))
    state = run.windows.filter("__wl_keeps").select("__wl_state.*")
    folder.mkdir()
    table = pa.Table.from_pylist([r.asDict() for r in state.collect()],
                                 schema=pa.schema([(f.name, _arrow(f.dataType))
                                                   for f in state.schema.fields]))
    pq.write_table(table, folder / "state.parquet")
    plan = run.plan
    (folder / "clock.json").write_text(json.dumps({
        "watermark": plan.watermarks[-1], "processing_time": plan.processing_times[-1],
        "max_event_ts": plan.max_event_ts[-1]}, indent=2) + "\n")
    print(f"wrote {folder}")
    return 0


def _arrow(dtype) -> object:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(dtype)


if __name__ == "__main__":
    sys.exit(main())
