"""The pane path reads its input once: the rejected and late rows travel with the kept
(element, window) rows to the walker, which writes them as tagged rows
(``native_windows.kept_and_passed``, ``pane_records.PaneWalkBase.pass_through``).

- The ``late`` and ``rejects`` outputs of a pane run read the walker's output (its files, or
  the persisted frame with ``spark.windowlib.walkerOutput=cache``), not the input again, and
  equal the general path's (schema and rows): an element too late for
  every window, one late for one of its sliding windows only (kept, not late), a null event
  time and a missing key.
- That holds for the per-element walk (a ``ProcessWindowFunction``), the NumPy firings of a
  batch function (``pane_schedule.py``) and count windows (no window columns).
"""

from __future__ import annotations

import sys

import pytest
import strategies
from spark_session import ship_by_value

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import scoped_conf
from windowlib.engines.spark.walker_files import WALKER_OUTPUT_CONF

pytestmark = pytest.mark.spark

ship_by_value(strategies, sys.modules[__name__])


class Count(wl.ProcessWindowFunction):
    result_schema = "n long"

    def process(self, key, context, elements):
        yield {"n": len(elements)}


def _pipelines() -> dict[str, wl.Pipeline]:
    base = wl.Pipeline("passthrough", timestamp="ts").key_by("key")
    return {
        "sliding, per element": base.window(wl.SlidingEventTimeWindows.of(10, 5))
        .process(Count()),
        "tumbling, batch function": base.window(wl.TumblingEventTimeWindows.of(10))
        .trigger(wl.EventTimeTrigger.after_end_of_window()
                 .with_early_trigger(wl.CountTrigger.at_least(2)))
        .process_panes(strategies.PaneStats()),
        "count windows": base.count_window(2).process(Count()),
    }


ROWS = [  # key, ts, value, hour (the bundle)
    *[(k, t, t % 5, 0) for k in ("a", "b") for t in range(0, 1000, 37)],
    ("a", 5, 1, 1),      # too late for both its windows, [0, 10) and [5, 15)
    ("b", 995, 2, 1),    # late for [990, 1000) only: kept for [995, 1005)
    ("a", None, 3, 1),   # null event time: rejected
    (None, 40, 4, 1),    # missing key: rejected
    ("c", 1200, 5, 1),
]


def _rows(frame) -> list:
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def _reads_only_the_walker_output(frame, detail) -> None:
    plan = frame._jdf.queryExecution().executedPlan().toString()
    if detail.files is not None:      # one scan, of the walker's files
        assert plan.count("FileScan") == 1, plan
        assert frame.inputFiles() and all(detail.files.directory in f
                                          for f in frame.inputFiles()), frame.inputFiles()
        return
    # above the cached walker output (whose own plan is printed below it): no scan
    above_cache = plan.split("InMemoryRelation")[0]
    assert "InMemoryTableScan" in above_cache and "FileScan" not in above_cache, plan


@pytest.fixture(params=["files", "cache"])
def walker_output(request, spark):
    with scoped_conf(spark, {WALKER_OUTPUT_CONF: request.param}):
        yield request.param


@pytest.mark.parametrize("name", list(_pipelines()))
def test_late_and_rejects_come_from_the_walkers_single_pass(spark, tmp_path, name,
                                                            walker_output):
    path = str(tmp_path / "events")
    spark.createDataFrame(ROWS, "key string, ts long, value long, hour int") \
        .write.partitionBy("hour").parquet(path)
    df = spark.read.parquet(path)
    p = _pipelines()[name]
    pane = run_dataframe(p, df, "hour", watermark=wl.BoundedOutOfOrderness(0), finalize=True,
                         path="panes")
    general = run_dataframe(p, df, "hour", watermark=wl.BoundedOutOfOrderness(0),
                            finalize=True, path="general")
    assert pane.path == "panes" and general.path == "general"
    assert (pane.run.detail.files is not None) == (walker_output == "files")
    for output in ("late", "rejects"):
        got, want = getattr(pane, output), getattr(general, output)
        assert got.schema == want.schema, output
        assert _rows(got) == _rows(want), output
        _reads_only_the_walker_output(got, pane.run.detail)
    reasons = sorted(r["reason"] for r in pane.rejects.collect())
    assert reasons == ["missing_key", "null_timestamp"]
    late = [(r["key"], r["ts"]) for r in pane.late.collect()]
    assert late == ([] if name == "count windows" else [("a", 5)])
    assert _rows(pane.firings) == _rows(general.firings)
    pane.unpersist()
    general.unpersist()


def test_passed_rows_keep_timestamps_odd_names_and_two_keys(spark):
    """Late and rejected rows as given: a ``TimestampType`` event time, a value column whose
    name has a dot (the walker's input travels under positional names), two key columns
    (one of them null: rejected)."""
    import datetime as dt

    def at(minute):
        return None if minute is None else dt.datetime(2024, 3, 1, 0, minute, tzinfo=dt.UTC)

    rows = [("a", 1, at(m), m, "h0") for m in range(0, 50, 7)] + [
        ("a", 1, at(1), 1, "h1"),          # too late: its window ended before the watermark
        ("a", None, at(55), 2, "h1"),      # a null key column: missing_key
        ("b", 2, None, 3, "h1")]           # no event time: null_timestamp
    df = spark.createDataFrame(rows, "k1 string, k2 long, at timestamp, `v.x` long, "
                                     "hour string")
    p = (wl.Pipeline("odd", timestamp="at").key_by("k1", "k2")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10))).process(Count()))
    pane = run_dataframe(p, df, "hour", finalize=True, path="panes")
    general = run_dataframe(p, df, "hour", finalize=True, path="general")
    for output in ("late", "rejects"):
        got, want = getattr(pane, output), getattr(general, output)
        assert got.schema == want.schema, output
        assert _rows(got) == _rows(want), output
    late = pane.late.collect()
    assert [(r["k1"], r["at"], r["v.x"]) for r in late] == [("a", at(1).replace(tzinfo=None),
                                                             1)]
    assert sorted(r["reason"] for r in pane.rejects.collect()) == ["missing_key",
                                                                  "null_timestamp"]
    pane.unpersist()
    general.unpersist()
