"""A user module for ``cluster_app.py``: a pipeline whose window function lives here, so Spark
pickles it by reference and executors must import this module (shipped, or MODULE_UNAVAILABLE).
"""

from __future__ import annotations

import datetime as dt

import windowlib as wl

T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
SCHEMA = "key string, ts timestamp, value long, arrival string"
ROWS = [(f"k{i % 5}", T0 + dt.timedelta(minutes=7 * i), i, f"2024-03-01T0{i // 10}")
        for i in range(40)]


class Total(wl.ProcessWindowFunction):
    """Sum and count of a window's values."""

    def process(self, key, context, elements):
        yield {"total": sum(e["value"] for e in elements), "n": len(elements)}


def pipeline() -> wl.Pipeline:
    return (wl.Pipeline("cluster_oneshot", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
            .process(Total()))
