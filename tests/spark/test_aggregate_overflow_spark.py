"""An integral sum beyond 64 bits is ``AGGREGATE_OVERFLOW`` on every Spark path, with Spark's
ANSI mode on or off (``tests/unit/test_aggregate_overflow.py`` for the reference engine).

Before, the native path (and the pane path's declarative firings) summed with Spark's ``+``:
with ANSI on, a raw ``ArithmeticException`` whose message advises turning ANSI off; with ANSI
off, a silently wrapped sum (``-2**63`` for ``2**62 + 2**62``), published as a result. Its
sums now add with ``try_sum``/``try_add`` and raise the coded error themselves (through
``raise_error``), so that an action windowlib runs (``run_incremental``'s write) raises a
``wl.ExecutionError`` and one the caller runs on a lazy frame shows the same code."""

from __future__ import annotations

import os
import tempfile

import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.errors import windowlib_error
from windowlib.engines.spark.testing import run_bundles_on_spark
from windowlib.runs.incremental import open_checkpoint
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark

BIG = 2**62
ON_TIME = [Bundle([{"key": "a", "ts": 1, "value": BIG}, {"key": "a", "ts": 2, "value": BIG},
                   {"key": "b", "ts": 3, "value": 1}])]
# the on-time part fits; the late element takes the window's sum beyond 64 bits
LATE = [Bundle([{"key": "a", "ts": 1, "value": BIG}], watermark=20),
        Bundle([{"key": "a", "ts": 2, "value": BIG}])]


def pipeline(*aggregates) -> wl.Pipeline:
    return (wl.Pipeline("overflow", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)).allowed_lateness(30)
            .aggregate(*(aggregates or (agg.sum("value").alias("total"), agg.count()))))


@pytest.fixture(params=["true", "false"], ids=["ansi", "no-ansi"])
def ansi(spark, request):
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", request.param)
    yield request.param
    spark.conf.set("spark.sql.ansi.enabled", before)


@pytest.mark.parametrize("bundles", [ON_TIME, LATE], ids=["on-time", "late"])
def test_a_sum_beyond_64_bits_is_aggregate_overflow_on_every_path(spark, ansi, bundles):
    for p in (pipeline(), pipeline(agg.mean("value").alias("avg"))):
        with pytest.raises(wl.ExecutionError) as err:
            run_bundles(p, bundles, finalize=True)
        assert err.value.code == "AGGREGATE_OVERFLOW"
        for path in ("native", "general"):
            with pytest.raises(Exception) as err:
                run_bundles_on_spark(p, bundles, finalize=True, path=path)
            coded = windowlib_error(err.value)
            assert coded is not None and coded.code == "AGGREGATE_OVERFLOW", (path, err.value)
            assert "ansi" not in str(err.value).lower(), path   # never "turn ANSI off"


def test_sums_at_the_64_bit_edge_are_exact_on_every_path(spark, ansi):
    bundles = [Bundle([{"key": "a", "ts": 1, "value": BIG}, {"key": "a", "ts": 2,
                                                              "value": BIG - 1}]),
               Bundle([{"key": "b", "ts": 3, "value": -BIG}], watermark=20),
               Bundle([{"key": "b", "ts": 4, "value": -BIG}])]
    p = pipeline(agg.sum("value").alias("total"), agg.mean("value").alias("avg"))
    expected = run_bundles(p, bundles, finalize=True)
    assert sorted(r["total"] for r in expected) == [-2**63, -BIG, 2**63 - 1]
    for path in ("native", "general"):
        assert run_bundles_on_spark(p, bundles, finalize=True, path=path)[0] == expected, path


def test_an_incremental_run_fails_coded_and_publishes_nothing(spark, ansi):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tempfile.mkdtemp()
    os.makedirs(f"{root}/src/hour=00")
    pq.write_table(pa.table({"key": ["a", "a"], "ts": [1, 2], "value": [BIG, BIG]}),
                   f"{root}/src/hour=00/part-0.parquet")
    source = wl.PartitionedSource(f"file://{root}/src", partition="hour")
    with pytest.raises(wl.ExecutionError) as err:
        wl.run_incremental(pipeline(), source, f"file://{root}/cp", f"file://{root}/out",
                           spark=spark)
    assert err.value.code == "AGGREGATE_OVERFLOW"
    assert "'total'" in str(err.value)
    assert open_checkpoint(pipeline(), f"file://{root}/cp").latest() is None
