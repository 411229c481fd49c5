"""``walk_values.py_values``: the walkers' fast Arrow -> Python conversion gives exactly what
``Array.to_pylist`` gives (values and their types), for every type, with and without nulls."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from windowlib.engines.spark.walk_values import batch_columns, py_values, rows_at

pytestmark = pytest.mark.unit

T0 = dt.datetime(2024, 3, 1, 5, 6, 7, 123456)
ARRAYS = {
    "int64": pa.array([1, -2, 2**62], pa.int64()),
    "int64 with nulls": pa.array([1, None, 3], pa.int64()),
    "int32": pa.array([1, 2, -3], pa.int32()),
    "int8 with nulls": pa.array([None, 2], pa.int8()),
    "float64": pa.array([1.5, math.inf, -0.0], pa.float64()),
    "float64 with nulls": pa.array([1.5, None], pa.float64()),
    "float32": pa.array([0.1, 2.5], pa.float32()),
    "bool": pa.array([True, False], pa.bool_()),
    "bool with nulls": pa.array([True, None], pa.bool_()),
    "string": pa.array(["a", "", "é"], pa.string()),
    "string with nulls": pa.array(["a", None], pa.string()),
    "large string": pa.array(["x", None], pa.large_string()),
    "timestamp us": pa.array([T0, dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59,
                                                                   999999)], pa.timestamp("us")),
    "timestamp us with nulls": pa.array([None, T0, None], pa.timestamp("us")),
    "timestamp ms": pa.array([T0.replace(microsecond=123000), None], pa.timestamp("ms")),
    "timestamp s": pa.array([T0.replace(microsecond=0)], pa.timestamp("s")),
    "timestamp ns": pa.array([T0, None], pa.timestamp("ns")),
    "timestamp before 1970": pa.array([dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
                                      pa.timestamp("us")),
    "date": pa.array([dt.date(2024, 2, 29), None], pa.date32()),
    "decimal": pa.array([Decimal("1.25"), None], pa.decimal128(5, 2)),
    "binary": pa.array([b"\x00\x01", None], pa.binary()),
    "list": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
    "struct": pa.array([{"a": 1, "t": T0}, None],
                       pa.struct([("a", pa.int64()), ("t", pa.timestamp("us"))])),
    "map": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
    "empty": pa.array([], pa.int64()),
    "all null": pa.array([None, None], pa.timestamp("us")),
}


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_values_and_their_types_equal_to_pylist(name):
    array = ARRAYS[name]
    expected = array.to_pylist()
    got = py_values(array)
    assert got == expected
    assert [type(v) for v in got] == [type(v) for v in expected]


def test_a_sliced_array_converts_its_own_rows_only():
    array = pa.array([T0, None, T0.replace(year=2030), T0.replace(year=2031)],
                     pa.timestamp("us")).slice(1, 2)
    assert py_values(array) == [None, T0.replace(year=2030)]
    ints = pa.array([5, 6, 7, 8], pa.int64()).slice(2)
    assert py_values(ints) == [7, 8]


def test_batch_columns_gives_python_values_of_every_user_column():
    batch = pa.RecordBatch.from_pydict({
        "key": pa.array(["a", "b"]), "ts": pa.array([T0, None], pa.timestamp("us")),
        "value": pa.array([1, 2], pa.int64())})
    values, raw = batch_columns(batch, ["ts", "key", "value"], set())
    assert values == raw == [[T0, None], ["a", "b"], [1, 2]]
    assert type(values[0][0]) is dt.datetime and type(values[2][0]) is int


@pytest.mark.parametrize("columns", [
    ("key", "ts", "value"),
    ("it's", 'a "quoted" name', "back\\slash", "new\nline", "é", "class", "c0", "j"),
    ("same", "other", "same"),       # a repeated name keeps its last value, as dict(zip())
    (),
])
def test_rows_at_gives_the_row_dicts_dict_zip_gives(columns):
    lists = [[f"{name}{i}" for i in range(5)] for name in columns]
    positions = [4, 0, 2, 2]
    got = rows_at(columns)(positions, *lists)
    rows = list(zip(*lists)) if columns else [()] * 5
    assert got == [dict(zip(columns, rows[j])) for j in positions]
    assert [list(row) for row in got] == [list(dict(zip(columns, rows[j]))) for j in positions]
    assert got[2] is not got[3]          # a new dict per row, even for a repeated position
    assert rows_at(columns) is rows_at(columns)        # compiled once per tuple of names
