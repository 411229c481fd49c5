"""The pane path's rows sorted by Arrow in the Python workers (``walker_sort.py``).

- With a sort memory so small that every partition spills many sorted runs, the pane and
  session walkers give exactly the outputs Spark's own sort gives
  (``spark.windowlib.walker.sort=spark``): firings, late and rejects (null keys and null
  times sort first, a key's rows stay together across runs).
- The plan ships the arrival order as columns only when Arrow sorts; a bad setting is
  ``ARGUMENT_INVALID`` before anything runs.
"""

from __future__ import annotations

import random
import sys

import pytest
from spark_session import ship_by_value

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import scoped_conf

pytestmark = pytest.mark.spark

ship_by_value(sys.modules[__name__])


class Sizes(wl.ProcessWindowFunction):
    result_schema = "n long, total long, idx long, first_value long"

    def process(self, key, context, elements):
        yield {"n": len(elements), "total": sum(e["value"] for e in elements),
               "idx": context.pane.index, "first_value": elements[0]["value"]}


def _rows() -> list[tuple]:
    rng = random.Random(7)
    keys = [None, *(f"user{i:04d}" for i in range(40))]
    rows = []
    for hour in range(4):
        for i in range(300):
            ts = hour * 60_000 + rng.randrange(-45_000, 60_000)
            rows.append((rng.choice(keys), None if i % 97 == 0 else ts, hour * 1000 + i, hour))
    return rows


def _pipelines() -> dict[str, wl.Pipeline]:
    base = wl.Pipeline("sorted", timestamp="ts").key_by("key")
    return {
        "pane walker": (base.window(wl.TumblingEventTimeWindows.of(10_000))
                        .trigger(wl.EventTimeTrigger.after_end_of_window()
                                 .with_early_trigger(wl.CountTrigger.at_least(3)))
                        .allowed_lateness(15_000).process(Sizes())),
        "session walker": (base.window(wl.EventTimeSessionWindows.with_gap(2_000))
                           .allowed_lateness(5_000).process(Sizes())),
    }


def _in_order(frame) -> list[tuple]:
    return sorted((tuple(r) for r in frame.collect()),
                  key=lambda row: tuple((v is not None, v) for v in row))


def _outputs(spark, p, df, settings) -> tuple:
    with scoped_conf(spark, settings):
        result = run_dataframe(p, df, "hour", finalize=True, path="panes",
                               watermark=wl.BoundedOutOfOrderness(5_000))
        assert result.path == "panes"
        out = (_in_order(result.firings.drop("run_id")),
               _in_order(result.late.select("key", "ts", "value")),
               _in_order(result.rejects.select("key", "value", "reason")))
        result.unpersist()
    return out


@pytest.mark.parametrize("walker", ["pane walker", "session walker"])
def test_spilled_arrow_sorts_give_what_spark_s_sort_gives(spark, walker):
    df = spark.createDataFrame(_rows(), "key string, ts long, value long, hour int")
    p = _pipelines()[walker]
    small_batches = {"spark.sql.execution.arrow.maxRecordsPerBatch": "40"}
    by_spark = _outputs(spark, p, df, {**small_batches, "spark.windowlib.walker.sort": "spark"})
    # batches of 40 rows against 1 byte: a sorted run per batch, dozens merged
    by_arrow = _outputs(spark, p, df, {**small_batches,
                                       "spark.windowlib.walker.sortMemory": "1"})
    firings, late, rejects = by_spark
    assert len(firings) > 100 and late and rejects, "the data exercises every output"
    assert by_arrow == by_spark


def test_the_arrival_order_travels_as_columns_only_when_arrow_sorts(spark):
    from windowlib.engines.spark.panes import run_panes

    df = spark.createDataFrame(_rows()[:50], "key string, ts long, value long, hour int")
    p = _pipelines()["pane walker"]
    arrow = run_panes(p, df, "hour", finalize=True, persist=False)
    assert "__wl_o0" in arrow.walked.columns
    with scoped_conf(spark, {"spark.windowlib.walker.sort": "spark"}):
        jvm = run_panes(p, df, "hour", finalize=True, persist=False)
    assert not any(c.startswith("__wl_o") for c in jvm.walked.columns)


@pytest.mark.parametrize(("name", "value"), [("spark.windowlib.walker.sort", "quick"),
                                             ("spark.windowlib.walker.sortMemory", "lots")])
def test_a_bad_walker_sort_setting_is_argument_invalid(spark, name, value):
    df = spark.createDataFrame(_rows()[:10], "key string, ts long, value long, hour int")
    with scoped_conf(spark, {name: value}), pytest.raises(wl.DefinitionError) as err:
        run_dataframe(_pipelines()["pane walker"], df, "hour", finalize=True, path="panes")
    assert err.value.code == "ARGUMENT_INVALID"
    assert name in str(err.value)
