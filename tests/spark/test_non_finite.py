"""NaN and ±inf in a column a numeric aggregate reads are rejects with reason ``non_finite``
(they would poison the window's sum or max), the same on every engine and path; other columns
may hold them."""

from __future__ import annotations

import math

import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.testing import run_bundles_on_spark
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark

BUNDLES = [Bundle([{"key": "a", "ts": 1, "value": 1.5, "note": math.nan},
                   {"key": "a", "ts": 2, "value": math.nan, "note": 0.0},
                   {"key": "a", "ts": 3, "value": math.inf, "note": 0.0},
                   {"key": "b", "ts": 4, "value": -math.inf, "note": 0.0},
                   {"key": "b", "ts": 5, "value": 2.0, "note": math.inf}]),
           Bundle([], watermark=100)]


def pipeline(fn=None):
    return (wl.Pipeline("finite", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10))
            .aggregate(*(fn or (agg.sum("value").alias("total"), agg.max("value").alias("top"),
                                agg.count()))))


def test_non_finite_values_of_aggregated_columns_are_rejects_on_every_engine(spark):
    firings, rejects = run_bundles(pipeline(), BUNDLES, with_rejects=True)
    assert [(f["key"], f["total"], f["top"], f["count"]) for f in firings] == [
        ("a", 1.5, 1.5, 1), ("b", 2.0, 2.0, 1)]
    assert [(r["ts"], r["reason"]) for r in rejects] == [
        (2, "non_finite"), (3, "non_finite"), (4, "non_finite")]
    for path in ("native", "general"):
        got = run_bundles_on_spark(pipeline(), BUNDLES, path=path)
        assert got[0] == firings, path
        assert [(r["ts"], r["reason"]) for r in got[2]] == [(r["ts"], r["reason"])
                                                            for r in rejects], path


def test_a_count_alone_reads_no_values_so_nothing_is_rejected(spark):
    firings, rejects = run_bundles(pipeline([agg.count()]), BUNDLES, with_rejects=True)
    assert rejects == [] and sum(f["count"] for f in firings) == 5
