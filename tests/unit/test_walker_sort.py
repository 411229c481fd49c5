"""``engines/spark/walker_sort.py``: a walker partition's rows sorted by Arrow in the worker.

- In memory and through spilled runs, the rows come out in the order of a plain Python sort
  with Spark's rules (nulls first, NaN above every number, strings by their bytes), the
  columns shipped only to sort by are dropped, and no batch is larger than those that came in.
- Spill files live in a directory of their own under ``SPARK_LOCAL_DIRS``, removed when the
  iteration ends, also when the consumer stops early; a directory that cannot be created is
  ``WALKER_SORT_FAILED``.
- ``spark.windowlib.walker.sortMemory`` takes sizes; anything else is ``ARGUMENT_INVALID``.
"""

from __future__ import annotations

import math
import os
import random

import pyarrow as pa
import pytest
from pyspark.sql import types as T

import windowlib as wl
from windowlib.engines.spark.walker_sort import (
    DEFAULT_SORT_MEMORY,
    ArrowSort,
    arrow_sortable,
    sort_budget,
)

pytestmark = pytest.mark.unit

SORT = ("key", "b", "__wl_o0", "x")


def _batches(seed: int, n_rows: int, rows_per_batch: int) -> list[pa.RecordBatch]:
    rng = random.Random(seed)
    keys = [None, "", "a", "ab", "b", "é", "z\u0301", "user1234x", "user1234y"]
    rows = [{"key": rng.choice(keys), "b": rng.randrange(3),
             "__wl_o0": rng.choice([None, float("nan"), -0.5, 0.0, 1.5, float("inf")]),
             "x": rng.randrange(1_000_000), "value": i} for i in range(n_rows)]
    schema = pa.schema([("key", pa.string()), ("b", pa.int32()), ("__wl_o0", pa.float64()),
                        ("x", pa.int64()), ("value", pa.int64())])
    return [pa.RecordBatch.from_pylist(rows[i:i + rows_per_batch], schema=schema)
            for i in range(0, n_rows, rows_per_batch)]


def _spark_order(row: dict) -> tuple:
    def rank(v):
        if v is None:
            return (0, 0)
        if isinstance(v, float) and math.isnan(v):
            return (2, 0)
        return (1, v.encode() if isinstance(v, str) else v)
    return tuple(rank(row[c]) for c in SORT)


def _sorted_rows(sort: ArrowSort, batches) -> tuple[list[dict], list[pa.RecordBatch]]:
    out = list(sort(iter(batches)))
    return [r for b in out for r in b.to_pylist()], out


@pytest.mark.parametrize("budget", [DEFAULT_SORT_MEMORY, 4_000, 1],
                         ids=["in-memory", "a-few-runs", "a-run-per-batch"])
def test_rows_come_out_in_spark_s_order_in_memory_and_through_spilled_runs(budget):
    batches = _batches(seed=budget, n_rows=5_000, rows_per_batch=300)
    got, out = _sorted_rows(ArrowSort(columns=SORT, budget_bytes=budget), batches)
    expected = sorted((r for b in batches for r in b.to_pylist()), key=_spark_order)
    # rows equal on every sort column may come in any order: the sort columns in order, the
    # rows as a multiset
    assert [_spark_order(r) for r in got] == [_spark_order(r) for r in expected]
    assert sorted(r["value"] for r in got) == list(range(5_000))
    assert max(b.num_rows for b in out) <= 300
    dropped, _ = _sorted_rows(ArrowSort(columns=SORT, drop=("__wl_o0",), budget_bytes=budget),
                              batches)
    assert [r["value"] for r in dropped] == [r["value"] for r in got] or \
        sorted(r["value"] for r in dropped) == list(range(5_000))
    assert set(dropped[0]) == {"key", "b", "x", "value"}
    # a key's rows are together
    seen, previous = set(), object()
    for r in got:
        if r["key"] != previous:
            assert r["key"] not in seen, "a key's rows are split"
            seen.add(r["key"])
            previous = r["key"]


def test_within_a_key_the_nan_and_null_order_is_spark_s():
    schema = pa.schema([("key", pa.string()), ("b", pa.int32()), ("__wl_o0", pa.float64()),
                        ("x", pa.int64())])
    rows = [{"key": "k", "b": 0, "__wl_o0": v, "x": 0}
            for v in (float("nan"), 2.0, None, float("-inf"), -0.0)]
    for budget in (DEFAULT_SORT_MEMORY, 1):
        batches = [pa.RecordBatch.from_pylist([r], schema=schema) for r in rows]
        got, _ = _sorted_rows(ArrowSort(columns=SORT, budget_bytes=budget), batches)
        order = [r["__wl_o0"] for r in got]
        assert order[0] is None and order[1:4] == [float("-inf"), -0.0, 2.0]
        assert math.isnan(order[4])


def test_spill_files_are_removed_when_the_iteration_ends_or_stops_early(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{tmp_path},/nonexistent")
    sort = ArrowSort(columns=SORT, budget_bytes=1)
    assert len(list(sort(iter(_batches(1, 2_000, 100))))) > 0
    assert os.listdir(tmp_path) == []
    stopped = sort(iter(_batches(2, 2_000, 100)))
    next(stopped)
    assert [p for p in os.listdir(tmp_path) if p.startswith("windowlib-sort-")], \
        "the runs were spilled under SPARK_LOCAL_DIRS"
    stopped.close()
    assert os.listdir(tmp_path) == []


def test_a_local_directory_that_refuses_spill_files_is_walker_sort_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path / "missing" / "dir"))
    sort = ArrowSort(columns=SORT, budget_bytes=1)
    with pytest.raises(wl.ExecutionError) as err:
        list(sort(iter(_batches(3, 500, 100))))
    assert err.value.code == "WALKER_SORT_FAILED"
    assert "spark.windowlib.walker.sortMemory" in str(err.value)


def test_empty_partitions_give_no_batches():
    assert list(ArrowSort(columns=SORT)(iter([]))) == []
    empty = _batches(4, 10, 10)[0].slice(0, 0)
    assert list(ArrowSort(columns=SORT, budget_bytes=1)(iter([empty, empty]))) == []


@pytest.mark.parametrize(("text", "size"), [(None, DEFAULT_SORT_MEMORY), ("1048576", 1 << 20),
                                            ("64m", 64 << 20), ("1G", 1 << 30),
                                            (" 512kb ", 512 << 10)])
def test_the_sort_memory_setting_takes_sizes(text, size):
    assert sort_budget(text) == size


@pytest.mark.parametrize("text", ["-1", "0", "1.5g", "lots", "12t"])
def test_a_sort_memory_that_is_not_a_size_is_argument_invalid(text):
    with pytest.raises(wl.DefinitionError) as err:
        sort_budget(text)
    assert err.value.code == "ARGUMENT_INVALID"


def test_only_types_arrow_sorts_as_spark_does_are_sorted_by_arrow():
    for t in (T.StringType(), T.LongType(), T.DoubleType(), T.DecimalType(20, 2),
              T.BooleanType(), T.DateType(), T.TimestampType(), T.TimestampNTZType(),
              T.BinaryType(), T.ByteType()):
        assert arrow_sortable(t), t
    for t in (T.StringType("UTF8_LCASE"), T.ArrayType(T.LongType()),
              T.StructType([T.StructField("a", T.LongType())]),
              T.MapType(T.StringType(), T.LongType()), T.DayTimeIntervalType()):
        assert not arrow_sortable(t), t
