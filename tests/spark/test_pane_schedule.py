"""The pane walker's firings computed with NumPy (``pane_schedule.py``) give the per-element
walk's output row for row: the same tagged rows (pane columns, clocks, ordering columns, row
numbers) in the same order, the same rows handed to ``process_panes``, and for a function
called per firing (``pane_calls.py``) the same calls: what each one reads of its context
(pane, clocks, window and key state) and writes (result rows, side outputs). The rows are
what Spark gives the walker for each pipeline (captured from the real plan); both walks then
run in this process over them, in input batches of 7 rows, with chunks of complete key runs
small enough that runs and windows span them."""

from __future__ import annotations

import random
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from spark_session import ship_by_value
from test_pane_batch_rows import ElementsSeen

import windowlib as wl
from windowlib.engines.spark import pane_schedule, run_dataframe
from windowlib.engines.spark import walker_files as walker_files_module
from windowlib.engines.spark.columns import KIND
from windowlib.engines.spark.pane_walker import PaneWalker
from windowlib.engines.spark.session import scoped_conf
from windowlib.engines.spark.walker_files import WALKER_OUTPUT_CONF

pytestmark = pytest.mark.spark
ship_by_value(sys.modules[__name__])


def _rows(seed: int) -> list[tuple]:
    """25 keys of 1 to 40 elements over six bundles, about one in six behind the others."""
    rng = random.Random(seed)
    rows = []
    for k in range(25):
        for _ in range(rng.randint(1, 40)):
            t = rng.randint(0, 150)
            late = rng.random() < 0.17
            rows.append((f"k{k:02d}", max(t - rng.randint(20, 60), 0) if late else t,
                         rng.randint(0, 9), t // 25))
    return rows


def _end(early=None, late=None, discarding=False):
    trigger = wl.EventTimeTrigger.after_end_of_window()
    if early:
        trigger = trigger.with_early_trigger(wl.CountTrigger.at_least(early))
    if late:
        trigger = trigger.with_late_trigger(wl.CountTrigger.at_least(late))
    return trigger.discarding() if discarding else trigger


PIPELINES = {
    "tumbling, early 3, late 2, accumulating": (wl.TumblingEventTimeWindows.of(20),
                                                _end(3, 2), 30),
    "tumbling, early 3, discarding": (wl.TumblingEventTimeWindows.of(20),
                                      _end(3, discarding=True), 30),
    "tumbling, early 2, late 2, discarding": (wl.TumblingEventTimeWindows.of(10),
                                              _end(2, 2, discarding=True), 40),
    "sliding, early 2, accumulating": (wl.SlidingEventTimeWindows.of(30, 10), _end(2), 50),
    "sliding, the default trigger, no lateness": (wl.SlidingEventTimeWindows.of(20, 5),
                                                  None, 0),
    "tumbling, the default trigger": (wl.TumblingEventTimeWindows.of(15), None, 25),
}


FIRES = wl.ValueStateDescriptor("fires", default=0)
SEEN = wl.ValueStateDescriptor("seen", default=0)


class EverythingRead(wl.ProcessWindowFunction):
    """Reads all its context offers, keeps window and key state, writes side outputs, and
    yields no row, one, or two per firing (JSON results)."""

    def process(self, key, context, elements):
        fires = context.window_state(FIRES)
        fires.update(fires.value() + 1)
        seen = context.global_state(SEEN)
        seen.update(seen.value() + len(elements))
        pane = context.pane
        if len(elements) % 3 == 1:
            context.output("odd", {"key": key, "n": len(elements), "index": pane.index})
        if len(elements) % 5 == 4:
            return
        yield {"n": len(elements), "values": [e["value"] for e in elements],
               "ts": [e["ts"] for e in elements], "window": list(context.window),
               "index": pane.index, "when": pane.timing.value, "first": pane.is_first,
               "last": pane.is_last, "wm": context.current_watermark,
               "pt": context.current_processing_time, "fires": fires.value(),
               "seen": seen.value(), "key_arg": key}
        if pane.index % 2:
            yield {"n": -1, "hour": elements[-1]["hour"]}


class TypedTotals(wl.ProcessWindowFunction):
    """Declared result columns and a typed side output."""

    result_schema = "total long, n long, last_ts long"
    big = wl.OutputTag("big", schema="key string, total long")

    def process(self, key, context, elements):
        total = sum(e["value"] for e in elements)
        if total > 20:
            context.output(self.big, {"key": key, "total": total})
        yield {"total": total, "n": len(elements), "last_ts": elements[-1]["ts"]}


def window_rows(key, window, elements):
    """An ``apply`` function: one row per element."""
    for i, e in enumerate(elements):
        yield {"i": i, "value": e["value"], "start": window.start, "key_arg": key}


FUNCTIONS = {
    "batch": lambda p: p.process_panes(ElementsSeen()),
    "process": lambda p: p.process(EverythingRead()),
    "typed process": lambda p: p.process(TypedTotals()),
    "apply": lambda p: p.apply(window_rows),
}


def _captured(spark, monkeypatch, shape: str, seed: int, finalize: bool,
              function: str = "batch"):
    """The rows Spark hands the pane walker for ``shape`` and ``function`` (in batches of 7)
    and the walker function."""
    assigner, trigger, lateness = PIPELINES[shape]
    p = wl.Pipeline("seen", timestamp="ts").key_by("key").window(assigner)
    if trigger is not None:
        p = p.trigger(trigger)
    p = FUNCTIONS[function](p.allowed_lateness(lateness))
    captured = []
    original = walker_files_module.map_in_arrow

    def capture(rows, fn, schema):
        captured.append((rows, fn))
        return original(rows, fn, schema)

    # the walker's function as map_in_arrow gets it (its output persisted, not written)
    with monkeypatch.context() as m, scoped_conf(spark, {WALKER_OUTPUT_CONF: "cache"}):
        m.setattr(walker_files_module, "map_in_arrow", capture)
        df = spark.createDataFrame(_rows(seed), "key string, ts long, value long, hour int")
        result = run_dataframe(p, df, "hour", finalize=finalize, path="panes")
        result.unpersist()
    rows, walk = captured[0]
    return rows.toArrow().to_batches(max_chunksize=7), walk


def _walked(walk, batches, monkeypatch, *, in_numpy: bool) -> pa.Table:
    with monkeypatch.context() as m:
        if not in_numpy:
            m.setattr(pane_schedule, "eligible", lambda walker: False)
        seen = []
        real = pane_schedule.walk

        def counting(walker, batches):
            seen.append(walker)
            return real(walker, batches)

        m.setattr(pane_schedule, "walk", counting)
        out = list(walk(iter(batches)))
    assert bool(seen) == in_numpy      # each walk ran where it was asked to
    # the firings in the order written, then the rows passed through (rejected and late) in
    # theirs: the walks write the two kinds' batches in different interleavings
    table = pa.Table.from_batches(out)
    firing = pc.equal(table.column(KIND), "firing")
    return pa.concat_tables([table.filter(firing), table.filter(pc.invert(firing))])


@pytest.mark.parametrize("shape", sorted(PIPELINES))
@pytest.mark.parametrize("finalize", [True, False])
def test_the_numpy_firings_equal_the_per_element_walk_row_for_row(
        spark, monkeypatch, shape, finalize):
    batches, walk = _captured(spark, monkeypatch, shape, seed=len(shape), finalize=finalize)
    monkeypatch.setattr(pane_schedule, "CHUNK_ROWS", 30)     # key runs span chunks
    per_element = _walked(walk, batches, monkeypatch, in_numpy=False)
    in_numpy = _walked(walk, batches, monkeypatch, in_numpy=True)
    assert per_element.num_rows > 50
    timings = set(per_element.column("timing").to_pylist())
    assert "ON_TIME" in timings and (not finalize or len(timings) > 1 or "default" in shape)
    assert in_numpy.equals(per_element)
    if PIPELINES[shape][2]:        # allowed lateness: late firings
        assert "LATE" in timings
    else:                          # no lateness: late rows, passed through by both walks
        assert "late" in set(per_element.column(KIND).to_pylist())


@pytest.mark.parametrize("shape", sorted(PIPELINES))
@pytest.mark.parametrize("finalize", [True, False])
def test_a_function_called_per_firing_is_called_as_the_per_element_walk_calls_it(
        spark, monkeypatch, shape, finalize):
    batches, walk = _captured(spark, monkeypatch, shape, seed=len(shape) + 1,
                              finalize=finalize, function="process")
    monkeypatch.setattr(pane_schedule, "CHUNK_ROWS", 30)
    per_element = _walked(walk, batches, monkeypatch, in_numpy=False)
    in_numpy = _walked(walk, batches, monkeypatch, in_numpy=True)
    kinds = per_element.column(KIND).to_pylist()
    assert kinds.count("firing") > 50 and "side" in kinds
    assert in_numpy.equals(per_element)


@pytest.mark.parametrize("function", ["typed process", "apply"])
@pytest.mark.parametrize("shape", ["sliding, early 2, accumulating",
                                   "tumbling, early 2, late 2, discarding"])
def test_other_functions_called_per_firing_give_the_per_element_walks_rows(
        spark, monkeypatch, function, shape):
    batches, walk = _captured(spark, monkeypatch, shape, seed=3, finalize=True,
                              function=function)
    monkeypatch.setattr(pane_schedule, "CHUNK_ROWS", 30)
    per_element = _walked(walk, batches, monkeypatch, in_numpy=False)
    in_numpy = _walked(walk, batches, monkeypatch, in_numpy=True)
    assert per_element.column(KIND).to_pylist().count("firing") > 50
    assert in_numpy.equals(per_element)


def test_a_key_run_longer_than_a_chunk_can_gather_is_walked_per_element(spark, monkeypatch):
    batches, walk = _captured(spark, monkeypatch, "tumbling, early 3, late 2, accumulating",
                              seed=7, finalize=True)
    monkeypatch.setattr(pane_schedule, "CHUNK_ROWS", 5)
    # the fifth key run (36 elements) outgrows 30 rows; the four before it do not
    monkeypatch.setattr(pane_schedule, "GATHER_ROWS", 30)
    per_element = _walked(walk, batches, monkeypatch, in_numpy=False)
    chunks, each = [], []
    real_chunk, real_each = pane_schedule._chunk, PaneWalker.walk_each
    monkeypatch.setattr(pane_schedule, "_chunk", lambda *a: chunks.append(a) or real_chunk(*a))
    monkeypatch.setattr(PaneWalker, "walk_each",
                        lambda walker, b: each.append(1) or real_each(walker, b))
    in_numpy = _walked(walk, batches, monkeypatch, in_numpy=True)
    assert in_numpy.equals(per_element)
    assert chunks and each == [1]     # runs in NumPy first, then the rest per element
