"""``pane_schedule._run_starts``: the key runs of a chunk are where the per-element walk sees a
new key (Python's ``!=`` over the key values), whether Arrow compares them (integers, strings,
booleans, timestamps without nulls) or Python does (nulls, floats with NaN, other types)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from windowlib.engines.spark.pane_schedule import _run_starts

pytestmark = pytest.mark.unit

T = dt.datetime(2024, 3, 1)
KEYS = {
    "strings": pa.array(["a", "a", "b", "b", "b", "a", "c"]),
    "integers": pa.array([3, 3, 3, 1, 2, 2, 3], pa.int64()),
    "timestamps": pa.array([T, T, T + dt.timedelta(microseconds=1), T, T, T, T]),
    "booleans": pa.array([True, True, False, False, True, True, True]),
    "strings with nulls": pa.array([None, None, "a", None, "a", "a", None]),
    "floats with NaN": pa.array([1.0, float("nan"), float("nan"), 2.0, 2.0, -0.0, 0.0]),
}


def _expected(columns: list[pa.Array]) -> list[int]:
    """Where the per-element walk starts a key: a row whose key tuple differs (``!=``)."""
    keys = list(zip(*(c.to_pylist() for c in columns)))
    return [i for i, key in enumerate(keys) if i == 0 or key != keys[i - 1]]


@pytest.mark.parametrize("name", sorted(KEYS))
def test_key_runs_start_where_the_per_element_walk_sees_a_new_key(name):
    column = KEYS[name]
    table = pa.table({"k": column, "v": pa.array(range(len(column)))})
    assert _run_starts(table, ("k",)).tolist() == _expected([column])


def test_runs_of_two_key_columns_and_of_no_key_column():
    a, b = KEYS["strings"], KEYS["integers"]
    table = pa.table({"a": a, "b": b})
    assert _run_starts(table, ("a", "b")).tolist() == _expected([a, b])
    assert _run_starts(table, ("a", "b")).tolist() != _expected([a])   # b splits a's runs
    assert _run_starts(table, ()).tolist() == [0]          # no key: one run
    nulls = pa.table({"a": KEYS["strings with nulls"], "b": b})
    assert _run_starts(nulls, ("a", "b")).tolist() == _expected([nulls["a"], b])

