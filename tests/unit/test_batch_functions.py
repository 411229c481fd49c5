"""Batch window functions (``Pipeline.process_panes``, ``core/batch.py``) on the reference
engine: the same firings as the equivalent ``ProcessWindowFunction``, the table they get,
and the errors of a function that breaks the contract."""

from __future__ import annotations

import pyarrow as pa
import pytest

import windowlib as wl
from windowlib.testing import Bundle, run_bundles


class Sums(wl.ProcessWindowFunction):
    result_schema = "n long, total long, idx long"

    def process(self, key, context, elements):
        yield {"n": len(elements), "total": sum(e["value"] for e in elements),
               "idx": context.pane.index}


class BatchSums(wl.BatchWindowFunction):
    result_schema = "n long, total long, idx long"
    seen: list = []

    def process_panes(self, panes):
        type(self).seen.append(panes)
        grouped = panes.group_by("pane_id").aggregate(
            [("value", "count"), ("value", "sum"), ("pane_index", "max")])
        return pa.table({"pane_id": grouped.column("pane_id"), "n": grouped.column("value_count"),
                         "total": grouped.column("value_sum"),
                         "idx": grouped.column("pane_index_max")})


def _pipeline() -> wl.Pipeline:
    return (wl.Pipeline("sums", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(2)))
            .allowed_lateness(20))


BUNDLES = [Bundle([{"key": "a", "ts": t, "value": t} for t in (1, 2, 3)]
                  + [{"key": "b", "ts": 4, "value": 10}]),
           Bundle([{"key": "a", "ts": 12, "value": 5}], watermark=15),
           Bundle([{"key": "a", "ts": 5, "value": 7}])]     # late for [0, 10), kept


def test_a_batch_function_fires_like_the_equivalent_process_function():
    BatchSums.seen = []
    want = run_bundles(_pipeline().process(Sums()), BUNDLES, finalize=True)
    got = run_bundles(_pipeline().process_panes(BatchSums()), BUNDLES, finalize=True)
    assert got == want
    assert {f["timing"] for f in got} == {"EARLY", "ON_TIME", "LATE"}
    first = BatchSums.seen[0]
    assert first.column_names[:6] == ["pane_id", "window_start", "window_end", "pane_index",
                                      "timing", "is_final"]
    assert first.column("key").to_pylist() == ["a", "a"]   # the first EARLY pane's elements


def test_a_batch_function_must_declare_its_result_schema():
    class Undeclared(wl.BatchWindowFunction):
        def process_panes(self, panes):
            return []

    with pytest.raises(wl.DefinitionError) as err:
        _pipeline().process_panes(Undeclared())
    assert "result_schema" in str(err.value)


@pytest.mark.parametrize("output, message", [
    ([{"n": 1, "total": 1, "idx": 0}], "'pane_id' is None"),
    ([{"pane_id": 7, "n": 1, "total": 1, "idx": 0}], "'pane_id' is 7"),
    ([3], "must return rows"),
])
def test_rows_that_name_no_pane_of_the_batch_are_function_failed(output, message):
    class Broken(wl.BatchWindowFunction):
        result_schema = "n long, total long, idx long"

        def process_panes(self, panes):
            return output

    with pytest.raises(wl.ExecutionError) as err:
        run_bundles(_pipeline().process_panes(Broken()), BUNDLES, finalize=True)
    assert err.value.code == "FUNCTION_FAILED"
    assert message in str(err.value)


def test_a_failing_batch_function_is_function_failed_naming_it():
    class Boom(wl.BatchWindowFunction):
        result_schema = "n long"

        def process_panes(self, panes):
            raise ValueError("bad batch")

    with pytest.raises(wl.ExecutionError) as err:
        run_bundles(_pipeline().process_panes(Boom()), BUNDLES, finalize=True)
    assert err.value.code == "FUNCTION_FAILED"
    assert "Boom" in str(err.value) and "bad batch" in str(err.value)
