"""Hive partition directories: Spark's escaping of values, and reading them back."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from windowlib.state.hive import (
    NULL_PARTITION,
    escape_partition_value,
    partition_values,
    split_partitions,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("value", "escaped"), [
    ("2013-01-01T05:30", "2013-01-01T05%3A30"), ("a/b", "a%2Fb"), ("50%", "50%25"),
    (None, NULL_PARTITION), (True, "true"), (7, "7"), ("é x", "é x"),
    (dt.date(2013, 1, 2), "2013-01-02"),
])
def test_values_are_escaped_as_spark_does_and_read_back(value, escaped) -> None:
    assert escape_partition_value(value) == escaped
    back = partition_values(f"/lake/k={escaped}/part-0.parquet")["k"]
    assert back == (NULL_PARTITION if value is None else escape_partition_value(value)
                    .replace("%3A", ":").replace("%2F", "/").replace("%25", "%"))


def test_split_partitions_groups_rows_by_directory() -> None:
    table = pa.table({"k": ["a", None, "a", "b:c"], "d": [1, 2, 3, 4], "v": [10, 20, 30, 40]})
    out = {directory: rows.to_pydict() for directory, rows in
           split_partitions(table, ["k", "d"], ["v"])}
    assert out == {"k=a/d=1": {"v": [10]}, f"k={NULL_PARTITION}/d=2": {"v": [20]},
                   "k=a/d=3": {"v": [30]}, "k=b%3Ac/d=4": {"v": [40]}}
