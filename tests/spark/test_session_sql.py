"""Event-time sessions in two parts (``engines/spark/session_sql.py``): the sessions whose every
element was at least 2 ms ahead of the watermark it met are aggregated in Spark SQL, the
others take the session walker.

- The boundary: an element at the watermark it met (it overlaps a session fired ON_TIME and
  still live within the allowed lateness) or 1 ms ahead of it (it *touches* that session):
  the merged window is new and fires again, so its session goes to the walker; 2 ms ahead,
  the session is SQL's. Outputs equal the reference engine's.
- Differential property: declarative session pipelines over bundles where some keys stay ahead
  of the watermark and others do not (and elements sit exactly at the boundary) give the
  reference engine's outputs.
"""

from __future__ import annotations

import sys

import pytest
import strategies
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from spark_session import ship_by_value, spark_examples
from test_differential_properties import assert_spark_equals_reference

import windowlib as wl
from windowlib.engines.spark.panes import run_panes
from windowlib.engines.spark.planner import choose_path
from windowlib.engines.spark.session import scoped_conf
from windowlib.engines.spark.walker_files import WALKER_OUTPUT_CONF
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark

ship_by_value(strategies, sys.modules[__name__])

EXAMPLES = spark_examples(ci=30, local=15)
KEYS = ("a", "b", "c", "d")
AGGREGATES = [a for a in strategies.DECLARATIVE if a.kind != "collect_list"]


def _sessions(gap: int = 10, lateness: int = 100) -> wl.Pipeline:
    return (wl.Pipeline("split", timestamp="ts").key_by("key")
            .window(wl.EventTimeSessionWindows.with_gap(gap)).allowed_lateness(lateness)
            .aggregate(wl.aggregates.sum("value").alias("total"), wl.aggregates.count()))


def test_a_session_with_an_element_less_than_two_ms_ahead_of_its_watermark_is_walked(spark):
    """Hour 0 ends with the watermark at 9 (``x`` at 10, monotonous timestamps): the sessions
    ``[0, 10)`` of a, b and c fire ON_TIME and stay live (lateness 100). Hour 1 meets W = 9:
    c at 9 (== W) overlaps ``[0, 10)`` and a at 10 (W + 1) touches it: each merged window
    (``[0, 19)``, ``[0, 20)``) is new and fires ON_TIME again, with the fired contents; b at
    11 (W + 2) starts a new session ``[11, 21)`` that can never meet a fired one: b's and x's
    sessions are aggregated in SQL, a's and c's walked. Both equal the reference engine."""
    p = _sessions()
    assert "two parts" in p.explain() and "session_sql.py" in p.explain()
    elements = [[{"key": k, "ts": 0, "value": 1} for k in "abc"]
                + [{"key": "x", "ts": 10, "value": 1}],
                [{"key": "c", "ts": 9, "value": 2}, {"key": "a", "ts": 10, "value": 4},
                 {"key": "b", "ts": 11, "value": 8}]]
    bundles = [Bundle(elements=rows) for rows in elements]
    kwargs = {"finalize": True, "watermark": wl.MonotonousTimestamps(), "with_late": True}
    reference = run_bundles(p, bundles, engine="reference", **kwargs)
    assert run_bundles(p, bundles, engine="spark", **kwargs) == reference
    firings = {(f["key"], f["window_start"], f["window_end"], f["pane_index"], f["timing"]):
               f["total"] for f in reference[0]}
    assert firings[("a", 0, 20, 0, "ON_TIME")] == 5     # the touching merge fired again
    assert firings[("c", 0, 19, 0, "ON_TIME")] == 3
    assert firings[("b", 11, 21, 0, "ON_TIME")] == 8

    rows = [(r["key"], r["ts"], r["value"], hour) for hour, bundle in enumerate(elements)
            for r in bundle]
    df = spark.createDataFrame(rows, "key string, ts long, value long, hour int")
    run = run_panes(p, df, "hour", watermark=wl.MonotonousTimestamps(), finalize=True,
                    persist=False, partitions=1)
    walked = sorted((r["key"], r["ts"]) for r in run.walked.collect())
    assert walked == [("a", 0), ("a", 10), ("c", 0), ("c", 9)]


@pytest.mark.parametrize("walker_output", ["files", "cache"])
def test_a_split_sessions_run_is_computed_by_one_job(spark, monkeypatch, walker_output):
    """``run_dataframe`` computes a run's frames before it returns (a failing user function
    surfaces there). The one job that writes the walker's output as files, or counts it
    when persisted, computes the marked rows it reads too: they are not counted again (one
    job less), and they are fully cached when the run returns (the walker's output too,
    when persisted)."""
    from windowlib.engines.spark import run_dataframe

    rows = [(k, ts, 1, ts // 50) for k in "abcd" for ts in range(0, 200, 7)]
    rows += [("a", 3, 5, 4), ("b", 60, 5, 4)]     # late: their sessions are walked
    df = spark.createDataFrame(rows, "key string, ts long, value long, hour long")
    counted, count = [], type(df).count
    monkeypatch.setattr(type(df), "count", lambda self: counted.append(self) or count(self))
    before = {rdd.id() for rdd in spark.sparkContext._jsc.sc().getRDDStorageInfo()}
    with scoped_conf(spark, {WALKER_OUTPUT_CONF: walker_output}):
        result = run_dataframe(_sessions(gap=10, lateness=100), df, "hour",
                               watermark=wl.MonotonousTimestamps(), finalize=True)
    try:
        detail = result.run.detail
        persisted = walker_output == "cache"
        assert (detail.files is None) == persisted
        assert len(detail.cached) == (2 if persisted else 1)      # (the marked rows last)
        # one job: counting the persisted walker output, or the walk writing its files
        assert len(counted) == 1
        if persisted:
            assert counted[0] is detail.cached[0]
        else:
            assert counted[0].columns == ["rows"]      # the writer's (empty) frame
        assert detail.walked.count() > 0          # some sessions were walked
        stored = [rdd for rdd in spark.sparkContext._jsc.sc().getRDDStorageInfo()
                  if rdd.id() not in before]
        assert len(stored) == len(detail.cached)
        assert all(rdd.numCachedPartitions() == rdd.numPartitions() for rdd in stored)
        assert result.firings.count() > 0
    finally:
        result.unpersist()


def test_python_session_functions_take_the_walker_alone(spark):
    """``explain`` names one part when the function is Python code (or ``collect_list``,
    whose merged order is the walker's)."""
    keyed = (wl.Pipeline("s", timestamp="ts").key_by("key")
             .window(wl.EventTimeSessionWindows.with_gap(10)))
    for p in (keyed.reduce(strategies.add_values),
              keyed.aggregate(wl.aggregates.collect_list("value"))):
        assert choose_path(p, "auto").path == "panes"
        text = p.explain()
        assert "two parts" not in text and "why every session takes the walker" in text


@st.composite
def mixed_bundles(draw):
    """Bundles with explicit watermarks over ``KEYS``: the keys in a drawn set stay at least
    2 ms ahead of the watermark each element meets; the others scatter around it, some
    exactly at ``W``, ``W + 1`` or ``W + 2``."""
    ahead = draw(st.sets(st.sampled_from(KEYS)), label="ahead keys")
    now, w = -40, None        # w: the watermark the next bundle's elements meet
    bundles = []
    for _ in range(draw(st.integers(2, 6))):
        now += draw(st.integers(0, 30))
        rows = []
        for _ in range(draw(st.integers(1, 10))):
            key = draw(st.sampled_from(KEYS))
            if key in ahead:
                lo = now - 40 if w is None else max(now - 40, w + 2)
                ts = draw(st.integers(lo, lo + 40))
            elif w is not None and draw(st.booleans()):
                ts = w + draw(st.integers(0, 2))
            else:
                ts = draw(st.integers(now - 40, now + 25))
            rows.append({"key": key, "ts": ts, "value": draw(st.integers(-5, 20))})
        given = draw(st.integers(now - 40, now + 10))
        w = given if w is None else max(w, given)
        bundles.append(Bundle(elements=tuple(rows), watermark=given))
    return bundles


@settings(max_examples=max(1, EXAMPLES // 2), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_split_sessions_equal_reference_when_some_keys_stay_ahead(spark, data):
    gap = data.draw(st.integers(3, 30), label="gap")
    base = wl.Pipeline("split", timestamp="ts")
    assigner = wl.EventTimeSessionWindows.with_gap(gap)
    p = base.key_by("key").window(assigner) if data.draw(st.integers(0, 5)) > 0 \
        else base.window_all(assigner)
    mode = data.draw(st.sampled_from([None, "accumulating", "discarding"]), label="mode")
    if mode is not None:
        p = p.accumulation(mode)
    p = p.allowed_lateness(data.draw(st.sampled_from([0, 0, 7, 30, 60]), label="lateness"))
    aggs = data.draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=3,
                              unique_by=lambda a: a.name), label="aggregates")
    p = p.aggregate(*aggs)
    assert "two parts" in p.explain()
    bundles = data.draw(mixed_bundles(), label="bundles")
    w, ahead, behind = None, set(), set()
    for bundle in bundles:
        for row in bundle.elements:
            (ahead if w is None or row["ts"] >= w + 2 else behind).add(row["key"])
        w = bundle.watermark if w is None else max(w, bundle.watermark)
    event(f"keys all ahead: {bool(ahead - behind)}, keys with an element behind: "
          f"{bool(behind)}")
    assert_spark_equals_reference(p, bundles, finalize=data.draw(st.booleans()))
