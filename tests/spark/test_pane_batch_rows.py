"""A batch function on the pane path gets its elements as Arrow rows of the input
(``pane_records.py``: panes hold row numbers, ``element_rows`` takes them): the same table,
row for row and in order, as the general path builds from Python values, across keys that
span input batches; and the walker lets go of the input batches no pane holds any more."""

from __future__ import annotations

import sys

import pytest
from spark_session import firings_on_paths, ship_by_value
from strategies import per_key

import windowlib as wl
from windowlib.engines.spark import pane_batches, pane_schedule, run_dataframe
from windowlib.engines.spark import walker_files as walker_files_module
from windowlib.engines.spark.pane_walker import PaneWalker
from windowlib.engines.spark.session import scoped_conf
from windowlib.engines.spark.testing import run_bundles_on_spark
from windowlib.engines.spark.walker_files import WALKER_OUTPUT_CONF
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark
ship_by_value(sys.modules[__name__])


class ElementsSeen(wl.BatchWindowFunction):
    """Per pane, every row it got in order: its pane columns and element columns as text."""

    result_schema = "seen string, n long"

    def process_panes(self, panes):
        import pyarrow as pa

        seen: dict[int, list[str]] = {}
        for row in panes.to_pylist():
            pane = row.pop("pane_id")
            seen.setdefault(pane, []).append(repr(sorted(row.items())))
        ids = sorted(seen)
        return pa.table({"pane_id": pa.array(ids, pa.int64()),
                         "seen": ["|".join(seen[i]) for i in ids],
                         "n": [len(seen[i]) for i in ids]})


class ElementsSeenBackwards(ElementsSeen):
    """``ElementsSeen`` with two rows per pane, all returned last pane first: the walker
    puts them back in pane order, a pane's rows in the order returned."""

    def process_panes(self, panes):
        import pyarrow as pa
        import pyarrow.compute as pc

        table = super().process_panes(panes)
        seen = table.schema.get_field_index("seen")
        twice = pa.concat_tables([table.set_column(seen, "seen", pc.binary_join_element_wise(
            table.column(seen), pa.scalar(tag), "")) for tag in ("#first", "#second")])
        backwards = pc.sort_indices(twice, sort_keys=[("pane_id", "descending")])
        return twice.take(backwards)


def _rows():
    """40 keys, in-order elements with a few late ones, over four hourly bundles; the last
    column (named with a dot and a backquote) is null on every fifth row."""
    rows = []
    for k in range(40):
        for t in range(0, 90, 3):
            hour = t // 25
            ts = t - 40 if t % 27 == 0 and t >= 40 else t        # late: back in time
            rows.append((f"k{k:02d}", ts, (t * 7 + k) % 11, hour,
                         None if t % 5 == 0 else f"n{t}"))
    return rows


def _frame(spark):
    return spark.createDataFrame(_rows(), "key string, ts long, value long, hour int, "
                                          "`n.o``te` string")


PIPELINES = {
    "sliding, early counts, accumulating": lambda p: (
        p.window(wl.SlidingEventTimeWindows.of(10, 5))
        .trigger(wl.EventTimeTrigger.after_end_of_window()
                 .with_early_trigger(wl.CountTrigger.at_least(2))
                 .with_late_trigger(wl.CountTrigger.at_least(1)))
        .allowed_lateness(50)),
    "tumbling, discarding": lambda p: (
        p.window(wl.TumblingEventTimeWindows.of(20))
        .trigger(wl.EventTimeTrigger.after_end_of_window()
                 .with_early_trigger(wl.CountTrigger.at_least(3)).discarding())
        .allowed_lateness(30)),
    "count windows": lambda p: p.count_window(4),
    # behind an evictor the panes stay Python values (the evictor reads them)
    "tumbling, early counts, count evictor": lambda p: (
        p.window(wl.TumblingEventTimeWindows.of(20))
        .trigger(wl.EventTimeTrigger.after_end_of_window()
                 .with_early_trigger(wl.CountTrigger.at_least(3)))
        .evictor(wl.CountEvictor.of(2)).allowed_lateness(30)),
}


@pytest.mark.parametrize("shape", sorted(PIPELINES))
def test_a_batch_function_gets_the_same_rows_on_the_pane_path_as_on_the_general_path(
        spark, shape):
    p = PIPELINES[shape](wl.Pipeline("seen", timestamp="ts").key_by("key")) \
        .process_panes(ElementsSeen())
    df = _frame(spark)
    # small input batches: keys and live windows span several of them
    with scoped_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": "7"}):
        got = firings_on_paths(p, df, "hour", finalize=True)
    assert got["panes"] == got["general"]
    assert len(got["panes"]) > 100
    assert sum(r[-1] for r in got["panes"]) > 1000      # n: the panes' elements
    assert "('n.o`te', 'n3')" in "".join(str(r) for r in got["panes"])


def test_the_pane_walker_lets_go_of_input_batches_no_pane_holds(spark, monkeypatch):
    captured = []

    def capture(rows, fn, schema):
        captured.append((rows, fn))
        return original(rows, fn, schema)

    original = walker_files_module.map_in_arrow
    monkeypatch.setattr(walker_files_module, "map_in_arrow", capture)
    p = PIPELINES["tumbling, discarding"](
        wl.Pipeline("seen", timestamp="ts").key_by("key")).process_panes(ElementsSeen())
    # the walker's function as map_in_arrow gets it (its output persisted, not written)
    with scoped_conf(spark, {WALKER_OUTPUT_CONF: "cache"}):
        run_dataframe(p, _frame(spark), "hour", finalize=True, path="panes").unpersist()
    rows, walk = captured[0]
    batches = rows.toArrow().to_batches(max_chunksize=10)
    assert len(batches) > 100

    most = []
    retain = PaneWalker._retain

    def counting(walker, batch):
        assert walker.arrow_elements
        retain(walker, batch)
        most.append(len(walker.retained))

    monkeypatch.setattr(PaneWalker, "_retain", counting)
    # the per-element walk (the NumPy one, pane_schedule.py, holds a chunk of key runs)
    monkeypatch.setattr(pane_schedule, "eligible", lambda walker: False)
    # queued firings hold their rows until process_panes runs: run it every 16 elements
    monkeypatch.setattr(pane_batches, "BATCH_ROWS", 16)
    out = list(walk(iter(batches)))       # the walker in this process, over the same rows
    assert sum(b.num_rows for b in out) > 100
    assert len(most) == len(batches)
    # a key's 30 rows span at most 4 batches of 10, the queue's 16 elements 3 more
    assert max(most) <= 8


def test_rows_a_batch_function_returns_out_of_pane_order_are_put_back_in_order(spark):
    # each key's three windows fire in one step (the second bundle's watermark), so only
    # the rows' numbers order them, as the reference engine does
    p = (wl.Pipeline("seen", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(20)).process_panes(ElementsSeenBackwards()))
    bundles = [Bundle([{"key": f"k{k}", "ts": ts, "value": k * ts} for k in range(5)
                       for ts in (1, 7, 25, 45)]),
               Bundle([{"key": "k0", "ts": 90, "value": 0}], watermark=80)]
    want = per_key(p, run_bundles(p, bundles))
    got = per_key(p, run_bundles_on_spark(p, bundles, spark=spark, path="panes")[0])
    assert got == want      # in order: windows by start, each pane's "#first" row first
    assert [(f["window_start"], f["seen"][-6:]) for f in got[("k3",)][:3]] == \
        [(0, "#first"), (0, "second"), (20, "#first")]
