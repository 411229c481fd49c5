"""What a window function's results may hold: plain data, the same on every engine.

The Spark paths write a result row without a declared type as JSON text (``core/codec``), so a
value the codec cannot encode used to fail there only, as ``SNAPSHOT_UNSERIALIZABLE`` speaking
of window state and naming no column, key or window, while the reference engine handed the
object back. The runner (``core/runner.py``) now takes every result row and side-output value
through ``core/copies.kept_result``: NumPy values become Python's (``tolist()``), subclasses of
lists, tuples, dicts and sets their base type, and anything else is ``FUNCTION_FAILED`` naming
the function, the column, the key and the window, on every engine
(``tests/spark/test_result_values_spark.py`` runs both Spark paths).
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import windowlib as wl
from windowlib.core.copies import NotPlain, kept_result
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.unit

BUNDLES = [Bundle([{"key": "a", "ts": 1, "value": 3}, {"key": "a", "ts": 12, "value": 4}])]
Point = namedtuple("Point", "x y")


class Opaque:
    """Not plain data."""


def pipeline(fn) -> wl.Pipeline:
    return (wl.Pipeline("values", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)).process(fn))


class Yields(wl.ProcessWindowFunction):
    """Yields ``{"n": ..., "v": make(elements)}``."""

    def __init__(self, make) -> None:
        self.make = make

    def process(self, key, context, elements):
        yield {"n": len(elements), "v": self.make(elements)}


def values(rows: list[dict]) -> list:
    return [r["v"] for r in rows]


def test_numpy_values_become_python_values():
    rows = run_bundles(pipeline(Yields(lambda es: [np.int64(es[0]["value"]), np.bool_(True),
                                                   np.float64(0.5), np.array([1, 2])])),
                       BUNDLES, finalize=True)
    assert values(rows) == [[3, True, 0.5, [1, 2]], [4, True, 0.5, [1, 2]]]
    first = rows[0]["v"]
    assert [type(v) for v in first] == [int, bool, float, list]
    assert type(first[3][0]) is int


def test_subclasses_of_containers_become_their_base_type():
    rows = run_bundles(pipeline(Yields(lambda es: {"p": Point(1, 2),
                                                   "d": OrderedDict(a=np.int32(1))})),
                       BUNDLES, finalize=True)
    assert values(rows)[0] == {"p": (1, 2), "d": {"a": 1}}
    assert type(rows[0]["v"]["p"]) is tuple and type(rows[0]["v"]["d"]) is dict


def test_a_value_that_is_not_plain_data_fails_naming_column_key_and_window():
    for make in (lambda es: Opaque(), lambda es: [1, {"deep": Opaque()}]):
        with pytest.raises(wl.ExecutionError) as err:
            run_bundles(pipeline(Yields(make)), BUNDLES, finalize=True)
        assert err.value.code == "FUNCTION_FAILED"
        text = str(err.value)
        assert "Yields" in text and "column 'v'" in text and "key 'a'" in text, text
        assert "TimeWindow(0, 10)" in text and "Opaque" in text and "plain data" in text, text


def test_a_returned_value_and_an_aggregate_result_are_taken_the_same_way():
    class ReturnsArray(wl.ProcessWindowFunction):
        def process(self, key, context, elements):
            return [np.arange(len(elements))]

    class NumpySum(wl.AggregateFunction):
        def create_accumulator(self):
            return np.int64(0)

        def add(self, value, accumulator):
            return accumulator + value["value"]

        def merge(self, a, b):
            return a + b

        def get_result(self, accumulator):
            return accumulator

    rows = run_bundles(pipeline(ReturnsArray()), BUNDLES, finalize=True)
    assert [r["result"] for r in rows] == [[0], [0]]
    summed = (wl.Pipeline("agg", timestamp="ts").key_by("key")
              .window(wl.TumblingEventTimeWindows.of(10)).aggregate(NumpySum()))
    rows = run_bundles(summed, BUNDLES, finalize=True)
    assert [(r["result"], type(r["result"])) for r in rows] == [(3, int), (4, int)]


def test_side_output_values_are_taken_the_same_way():
    class Audits(wl.ProcessWindowFunction):
        def __init__(self, value) -> None:
            self.value = value

        def process(self, key, context, elements):
            context.output("audit", self.value)
            yield {"n": len(elements)}

    _, sides = run_bundles(pipeline(Audits({"n": np.int64(2)})), BUNDLES, finalize=True,
                           with_side_outputs=True)
    assert sides["audit"] == [{"n": 2}, {"n": 2}]
    assert type(sides["audit"][0]["n"]) is int
    with pytest.raises(wl.ExecutionError) as err:
        run_bundles(pipeline(Audits(Opaque())), BUNDLES, finalize=True)
    assert err.value.code == "FUNCTION_FAILED"
    assert "side output 'audit'" in str(err.value) and "key 'a'" in str(err.value)


def test_kept_result_copies_and_refuses():
    nested = {"xs": [1, [2, 3]], "s": {1, 2}, "t": (1, np.int8(2))}
    copy = kept_result(nested)
    assert copy == {"xs": [1, [2, 3]], "s": {1, 2}, "t": (1, 2)}
    assert copy["xs"][1] is not nested["xs"][1]
    cycle: list = [1]
    cycle.append(cycle)
    for bad in (cycle, Opaque(), 1j, [object()]):
        with pytest.raises(NotPlain):
            kept_result(bad)
