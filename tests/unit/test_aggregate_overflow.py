"""An integral sum that leaves the 64-bit range of its column is ``AGGREGATE_OVERFLOW`` naming
the aggregate, the key and the window, on every engine (Spark's long columns cannot hold it;
Python's integers could, so the reference engine checks). Floating-point sums are not limited.
``tests/spark/test_aggregate_overflow_spark.py`` runs the Spark paths, with Spark's ANSI mode
on and off."""

from __future__ import annotations

import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.unit

BIG = 2**62


def pipeline(*aggregates) -> wl.Pipeline:
    return (wl.Pipeline("overflow", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)).allowed_lateness(30)
            .aggregate(*aggregates))


def bundle(*values) -> Bundle:
    return Bundle([{"key": "a", "ts": i + 1, "value": v} for i, v in enumerate(values)])


def test_an_integral_sum_beyond_64_bits_is_aggregate_overflow():
    for values in ((BIG, BIG), (-BIG, -BIG, -1)):
        with pytest.raises(wl.ExecutionError) as err:
            run_bundles(pipeline(agg.sum("value").alias("total")), [bundle(*values)],
                        finalize=True)
        assert err.value.code == "AGGREGATE_OVERFLOW"
        text = str(err.value)
        assert "'total'" in text and "key 'a'" in text and "TimeWindow(0, 10)" in text, text


def test_a_late_element_that_takes_a_sum_beyond_64_bits_is_aggregate_overflow():
    bundles = [Bundle([{"key": "a", "ts": 1, "value": BIG}], watermark=20),
               Bundle([{"key": "a", "ts": 2, "value": BIG}])]
    with pytest.raises(wl.ExecutionError) as err:
        run_bundles(pipeline(agg.sum("value").alias("total")), bundles, finalize=True)
    assert err.value.code == "AGGREGATE_OVERFLOW"


def test_a_mean_whose_integral_sum_leaves_64_bits_is_aggregate_overflow():
    with pytest.raises(wl.ExecutionError) as err:
        run_bundles(pipeline(agg.mean("value").alias("avg")), [bundle(BIG, BIG)], finalize=True)
    assert err.value.code == "AGGREGATE_OVERFLOW" and "'avg'" in str(err.value)


def test_sums_at_the_64_bit_edges_and_float_sums_are_exact():
    p = pipeline(agg.sum("value").alias("total"), agg.mean("value").alias("avg"))
    for values, total in (((BIG, BIG - 1), 2**63 - 1), ((-BIG, -BIG), -2**63),
                          ((1e300, 1e300), 2e300)):
        rows = run_bundles(p, [bundle(*values)], finalize=True)
        assert [r["total"] for r in rows] == [total]
        assert rows[0]["avg"] == pytest.approx(total / 2)
