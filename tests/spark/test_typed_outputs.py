"""Outputs of Python functions on Spark are typed as declared and equal the reference engine's:
late and rejected elements as they were given (datetimes included), typed result columns from
a function's ``result_schema``, side outputs on every entry point (one-shot result,
``run_bundles``, incremental runs)."""

from __future__ import annotations

import datetime as dt
import sys

import pytest
from pyspark import cloudpickle

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.testing import run_bundles_on_spark
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark
cloudpickle.register_pickle_by_value(sys.modules[__name__])

BASE = dt.datetime(2024, 3, 10, 12, 0)


class Values(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"values": sorted(e["value"] for e in elements)}


def P(name: str = "p") -> wl.Pipeline:
    return wl.Pipeline(name, timestamp="ts").key_by("key").window(
        wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))


# --- late and rejected elements come back as they were given ------------------------------------

def datetime_bundles() -> list[Bundle]:
    """``at`` mixes datetimes (naive and aware) with strings: the harness carries it as JSON."""
    aware = dt.datetime(2024, 3, 10, 13, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    return [
        Bundle([{"key": "a", "ts": BASE + dt.timedelta(minutes=10), "value": 1, "at": BASE,
                 "seen": BASE}]),
        Bundle([{"key": "a", "ts": BASE, "value": 2, "at": aware, "seen": BASE},
                {"key": "a", "ts": BASE, "value": 3, "at": "not a time", "seen": BASE},
                {"key": "b", "ts": None, "value": 4, "at": BASE, "seen": BASE},
                {"key": None, "ts": BASE, "value": 5, "at": dt.date(2024, 3, 10),
                 "seen": BASE}]),
    ]


@pytest.mark.parametrize(("path", "function"), [
    ("native", "declarative"), ("general", "declarative"), ("general", "process")])
def test_late_and_rejected_datetimes_equal_the_reference_records(spark, path, function):
    p = P().aggregate(agg.count()) if function == "declarative" else P().process(Values())
    bundles = datetime_bundles()
    _, late, rejects = run_bundles(p, bundles, engine="reference", with_late=True,
                                   with_rejects=True)
    assert [r["value"] for r in late] == [2, 3] and [r["value"] for r in rejects] == [4, 5]
    _, got_late, got_rejects = run_bundles_on_spark(p, bundles, path=path)
    assert got_late == late
    assert got_rejects == rejects
    assert isinstance(got_late[0]["at"], dt.datetime)
