"""Result values on both Spark paths equal the reference engine's: NumPy values written as
Python's, a value that is not plain data the same ``FUNCTION_FAILED``, word for word
(``tests/unit/test_result_values.py`` pins the rule on the reference engine). Before the rule
lived in the runner, both Spark paths failed on a NumPy integer with ``SNAPSHOT_UNSERIALIZABLE``
speaking of window state, while the reference engine handed the value back."""

from __future__ import annotations

import json
import sys
from collections import OrderedDict

import numpy as np
import pytest
from spark_session import ship_by_value

import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark

ship_by_value(sys.modules[__name__])

ROWS = [("a", 1, 3, 0), ("a", 12, 4, 0), ("b", 2, 5, 0)]
PATHS = ("panes", "general")


class Opaque:
    """Not plain data."""


class Yields(wl.ProcessWindowFunction):
    def __init__(self, kind: str) -> None:
        self.kind = kind

    def process(self, key, context, elements):
        value = elements[0]["value"]
        if self.kind == "numpy":
            made = {"i": np.int64(value), "b": np.bool_(value > 3), "f": np.float64(value / 2),
                    "a": np.arange(value), "d": OrderedDict(x=np.int32(value))}
        else:
            made = [value, {"deep": Opaque()}]
        context.output("audit", made if self.kind == "numpy" else value)
        yield {"n": len(elements), "v": made}


def _pipeline(kind: str) -> wl.Pipeline:
    return (wl.Pipeline("values", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)).process(Yields(kind)))


def test_numpy_values_are_written_as_the_reference_engine_returns_them(spark):
    p = _pipeline("numpy")
    bundles = [Bundle([{"key": k, "ts": t, "value": v} for k, t, v, _ in ROWS])]
    rows, sides = run_bundles(p, bundles, finalize=True, with_side_outputs=True)
    expected = sorted((r["key"], json.dumps(r["v"], sort_keys=True)) for r in rows)
    expected_sides = sorted(json.dumps(v, sort_keys=True) for v in sides["audit"])
    assert len(expected) == 3 and '"a": [0, 1, 2], "b": false' in expected[1][1]
    df = spark.createDataFrame(ROWS, "key string, ts long, value long, hour int")
    for path in PATHS:
        result = run_dataframe(p, df, "hour", path=path, finalize=True)
        got = sorted((r["key"], json.dumps(json.loads(r["result_json"])["v"], sort_keys=True))
                     for r in result.firings.collect())
        got_sides = sorted(json.dumps(json.loads(r["value_json"]), sort_keys=True)
                           for r in result.side_output("audit").collect())
        result.unpersist()
        assert got == expected, path
        assert got_sides == expected_sides, path


def test_a_value_that_is_not_plain_data_is_the_same_error_on_every_engine(spark):
    p = _pipeline("opaque")
    with pytest.raises(wl.ExecutionError) as err:
        run_bundles(p, [Bundle([{"key": "a", "ts": 1, "value": 3}])], finalize=True)
    texts = {"reference": str(err.value)}
    df = spark.createDataFrame(ROWS[:1], "key string, ts long, value long, hour int")
    for path in PATHS:
        with pytest.raises(wl.ExecutionError) as err:
            run_dataframe(p, df, "hour", path=path, finalize=True)
        assert err.value.code == "FUNCTION_FAILED", path
        texts[path] = str(err.value)
    assert texts["panes"] == texts["general"] == texts["reference"]
    assert "column 'v' holds a test_result_values_spark.Opaque" in texts["panes"]
