"""Early count firings on the native incremental path (``native_incremental_early.py``), as a
property: random hourly data, a random early count (``at_least`` or ``of``, 1 to 4), either
accumulation mode, tumbling or sliding windows, keyed or ``window_all``, processed natively
in runs split at random hours, must give exactly the firings, late rows and rejects of ONE
run of all hours on the general path (the semantic core per key, which the transcripts tie to
the reference engine).

The count, the pane since the last firing and the ON_TIME decision then cross run boundaries
at random points: a run ending between two early firings of a window, an ON_TIME pane in
the run after the window's last early firing, a discarding pane left empty by an early
firing (no ON_TIME pane), a count of 1 (every on-time element fires).
"""

from __future__ import annotations

import datetime as dt
import itertools
import random

import pytest
from clicks_lake import arriving_rows, hour_value, write_arrivals
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_session import spark_examples

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.runs.outputs import read_firings, read_late, read_rejects

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
HOURS = 6
WATERMARK = wl.BoundedOutOfOrderness("10 minutes")
EXAMPLES = spark_examples(ci=3, local=2)


def _lake(root, seed: int) -> wl.PartitionedSource:
    """Six hourly partitions of 5-9 rows over two keys: on time and out of order, late within
    the hour of lateness, beyond it, equal timestamps, now and then a null key."""
    rng = random.Random(seed)
    seq = 0
    for hour in range(HOURS):
        start = T0 + dt.timedelta(hours=hour)
        rows = arriving_rows(rng, start, seq, rng.randint(5, 9), "ab", on_time=0.7,
                             within=0.9, late=(-60, -15), beyond=(-240, -120))
        seq += len(rows)
        if rng.random() < 0.3:
            rows.append({"seq": seq, "key": None, "ts": start, "value": 1})
            seq += 1
        write_arrivals(root / "events", hour, rows, t0=T0)
    return wl.PartitionedSource(f"file://{root}/events", partition="arrival_hour",
                                order_by=["seq"])


def _pipeline(every: int, count_of: bool, mode: str, sliding: bool, keyed: bool
              ) -> wl.Pipeline:
    early = wl.CountTrigger.of(every) if count_of else wl.CountTrigger.at_least(every)
    window = (wl.SlidingEventTimeWindows.of(wl.Time.minutes(40), wl.Time.minutes(20))
              if sliding else wl.TumblingEventTimeWindows.of(wl.Time.minutes(20)))
    p = wl.Pipeline("native_early_property", timestamp="ts")
    p = p.key_by("key").window(window) if keyed else p.window_all(window)
    return (p.trigger(wl.EventTimeTrigger.after_end_of_window().with_early_trigger(early))
            .allowed_lateness(wl.Time.hours(1)).accumulation(mode)
            .aggregate(agg.sum("value").alias("total"), agg.count(),
                       agg.first("value").alias("first_v"), agg.last("value").alias("last_v"),
                       agg.max("value").alias("peak")))


def _outputs(spark, output: str) -> dict:
    def rows(frame) -> list:
        return sorted((tuple(r) for r in frame.collect()), key=repr)

    return {"firings": rows(read_firings(output, spark=spark).drop("run_id")),
            "late": rows(read_late(output, spark=spark)),
            "rejects": rows(read_rejects(output, spark=spark))}


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), every=st.integers(1, 4), count_of=st.booleans(),
       mode=st.sampled_from(["accumulating", "discarding"]), sliding=st.booleans(),
       keyed=st.booleans(),
       cuts=st.lists(st.integers(1, HOURS - 1), min_size=1, max_size=3, unique=True))
def test_native_early_firings_in_any_runs_equal_one_general_run(
        spark, tmp_path_factory, seed, every, count_of, mode, sliding, keyed, cuts):
    root = tmp_path_factory.mktemp("native_early")
    source = _lake(root, seed)
    p = _pipeline(every, count_of, mode, sliding, keyed)
    one = wl.run_incremental(p, source, f"file://{root}/general/ck",
                             f"file://{root}/general/out", watermark=WATERMARK, spark=spark,
                             path="general")
    assert one.status == "published" and one.path == "general"
    bounds = [0, *sorted(cuts), HOURS]
    for first, nxt in itertools.pairwise(bounds):
        run = wl.run_incremental(p, source, f"file://{root}/native/ck",
                                 f"file://{root}/native/out",
                                 partitions=(hour_value(first, T0), hour_value(nxt - 1, T0)),
                                 watermark=WATERMARK, spark=spark, path="native")
        assert run.status == "published" and run.path == "native"
    native = _outputs(spark, f"file://{root}/native/out")
    assert native == _outputs(spark, f"file://{root}/general/out")
    assert native["firings"], "the data fires nothing"
