"""``PartitionedSource.read``: exactly the given files, read by Spark tasks (file:// and real S3
servers), with the partition value, file and row index; corrupt files reported whole as bad
files, CSV/JSON lines that do not fit the schema kept with their raw text."""

from __future__ import annotations

import io
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowlib.runs.source import (
    CORRUPT_COLUMN,
    ERROR_COLUMN,
    FILE_COLUMN,
    ROW_COLUMN,
    PartitionedSource,
)

pytestmark = pytest.mark.spark

SCHEMA = "key string, ts long, value double"


def parquet_bytes(rows: list[dict], schema: pa.Schema | None = None) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    return buf.getvalue()


def rows_for(hour: int, n: int) -> list[dict]:
    return [{"key": f"k{i % 3}", "ts": hour * 3_600_000 + i, "value": i * 0.5} for i in range(n)]


def put_local(root, relative: str, data: bytes) -> None:
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def test_local_parquet_rows_carry_partition_file_and_row_index(spark, tmp_path) -> None:
    put_local(tmp_path, "arrival_hour=2013-01-01T05/part-0.parquet", parquet_bytes(rows_for(5, 7)))
    put_local(tmp_path, "arrival_hour=2013-01-01T05/part-1.parquet", parquet_bytes(rows_for(5, 3)))
    put_local(tmp_path, "arrival_hour=2013-01-01T06/part-0.parquet", parquet_bytes(rows_for(6, 4)))
    src = PartitionedSource(f"file://{tmp_path}", schema=SCHEMA)
    parts = src.list_partitions()
    got = src.read(spark, parts[0].files)
    rows = got.rows.collect()
    assert len(rows) == 10 and got.bad_files() == []
    assert {r["arrival_hour"] for r in rows} == {"2013-01-01T05"}
    by_file = {}
    for r in rows:
        by_file.setdefault(r[FILE_COLUMN], []).append((r[ROW_COLUMN], r["ts"]))
    assert {os.path.basename(f): sorted(v) for f, v in by_file.items()} == {
        "part-0.parquet": [(i, 5 * 3_600_000 + i) for i in range(7)],
        "part-1.parquet": [(i, 5 * 3_600_000 + i) for i in range(3)]}
    assert got.rows.columns == ["key", "ts", "value", "arrival_hour", FILE_COLUMN, ROW_COLUMN,
                                CORRUPT_COLUMN]
    # schema inference from the footer gives the same columns
    inferred = PartitionedSource(f"file://{tmp_path}").read(spark, parts[1].files)
    assert inferred.rows.count() == 4
    assert inferred.rows.schema["ts"].dataType.simpleString() == "bigint"


def test_reading_no_files_gives_an_empty_frame_with_the_columns(spark, tmp_path) -> None:
    got = PartitionedSource(f"file://{tmp_path}", schema=SCHEMA).read(spark, [])
    assert got.rows.count() == 0 and got.bad_files() == []
    assert got.rows.columns[:4] == ["key", "ts", "value", "arrival_hour"]


@pytest.mark.s3
def test_s3_corrupt_and_mismatched_parquet_files_are_reported_not_lost(spark,
                                                                       seaweed_s3) -> None:
    bucket = seaweed_s3.create_bucket()
    client = seaweed_s3.client()
    good = parquet_bytes(rows_for(5, 6))
    objects = {
        "ev/arrival_hour=2013-01-01T05/a-good.parquet": good,
        "ev/arrival_hour=2013-01-01T05/b-truncated.parquet": good[: len(good) // 2],
        "ev/arrival_hour=2013-01-01T05/c-garbage.parquet": b"PAR1 this is not parquet PAR1",
        "ev/arrival_hour=2013-01-01T05/d-wrongtype.parquet": parquet_bytes(
            [{"key": "x", "ts": "not a number", "value": 1.0}]),
        "ev/arrival_hour=2013-01-01T05/e-missingcol.parquet": parquet_bytes(
            [{"key": "y", "value": 2.0}]),
    }
    for key, body in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=body)
    src = PartitionedSource(f"s3://{bucket}/ev", schema=SCHEMA, settings=seaweed_s3.settings())
    (part,) = src.list_partitions()
    got = src.read(spark, part.files, parallelism=3)
    got.frame.persist()
    bad = {b.path.rsplit("/", 1)[1]: b.reason for b in got.bad_files()}
    assert set(bad) == {"b-truncated.parquet", "c-garbage.parquet", "d-wrongtype.parquet"}
    assert all(reason for reason in bad.values())
    rows = got.rows.collect()
    # the good file arrives whole; a missing column reads as null (the engine rejects the row)
    assert sorted(r["ts"] for r in rows if r["key"] != "y") == [5 * 3_600_000 + i
                                                                 for i in range(6)]
    assert [(r["key"], r["ts"]) for r in rows if r["key"] == "y"] == [("y", None)]
    # every input file is accounted for: data rows or exactly one bad-file row, whose row
    # number is the file's row count when its footer is readable (the wrong-typed file: 1)
    files = {r[FILE_COLUMN] for r in got.frame.select(FILE_COLUMN).collect()}
    assert files == {f.path for f in part.files}
    bad_rows = got.frame.filter(f"{ERROR_COLUMN} IS NOT NULL").collect()
    assert sorted((r[FILE_COLUMN].rsplit("/", 1)[1], r[ROW_COLUMN]) for r in bad_rows) == [
        ("b-truncated.parquet", -1), ("c-garbage.parquet", -1), ("d-wrongtype.parquet", 1)]
    got.frame.unpersist()


@pytest.mark.s3
def test_s3_csv_rows_that_do_not_fit_keep_their_raw_text(spark, moto_s3) -> None:
    bucket = moto_s3.create_bucket()
    client = moto_s3.client()
    client.put_object(Bucket=bucket, Key="csv/arrival_date=2013-01-01/a.csv",
                      Body=b"key,ts,value\r\na,1000,1.5\nb,oops,2.5\n\nc,3000,\n")
    client.put_object(Bucket=bucket, Key="csv/arrival_date=2013-01-01/b.csv",
                      Body=b"ts,key,value\n1,a,2\n")            # columns in another order
    client.put_object(Bucket=bucket, Key="csv/arrival_date=2013-01-01/c.csv",
                      Body=b"key,ts,value\n\xff\xfe,1,2\n")     # not UTF-8
    src = PartitionedSource(f"s3://{bucket}/csv", partition="arrival_date", format="csv",
                            schema=SCHEMA, settings=moto_s3.settings())
    (part,) = src.list_partitions()
    got = src.read(spark, part.files)
    rows = sorted(got.rows.collect(), key=lambda r: r[ROW_COLUMN])
    assert [(r["key"], r["ts"], r["value"], r[ROW_COLUMN]) for r in rows] == [
        ("a", 1000, 1.5, 0), ("b", None, 2.5, 1), ("c", 3000, None, 2)]
    assert [r[CORRUPT_COLUMN] for r in rows] == [None, "b,oops,2.5", None]
    assert {r["arrival_date"] for r in rows} == {"2013-01-01"}
    bad = {b.path.rsplit("/", 1)[1]: b.reason for b in got.bad_files()}
    assert set(bad) == {"b.csv", "c.csv"}
    assert "header" in bad["b.csv"] and "utf-8" in bad["c.csv"].lower()


def test_local_json_lines_with_malformed_lines(spark, tmp_path) -> None:
    put_local(tmp_path, "batch=7/events.json",
              b'{"key": "a", "ts": 1, "value": 0.5}\n{"key": "b", "ts": "x"}\n{broken\n'
              b'{"key": "c", "ts": 3}\n')
    src = PartitionedSource(f"file://{tmp_path}", partition="batch", format="json",
                            schema=SCHEMA, order_by=["ts"])
    (part,) = src.list_partitions()
    assert part.end_ms is None and src.arrival_order == ("ts",)
    rows = sorted(src.read(spark, part.files).rows.collect(), key=lambda r: r[ROW_COLUMN])
    # PERMISSIVE keeps the fields that parse (Spark's partial results), nulls the others
    assert [(r["key"], r["ts"], r[ROW_COLUMN]) for r in rows] == [
        ("a", 1, 0), ("b", None, 1), (None, None, 2), ("c", 3, 3)]
    assert [r[CORRUPT_COLUMN] is not None for r in rows] == [False, True, True, False]
    assert {r["batch"] for r in rows} == {"7"}


def test_a_ddl_schema_needs_no_spark_session_to_define_a_source(spark, tmp_path):
    """Sources are defined where no session exists (the registry, DAG parsing): the DDL is
    parsed when the source is first read."""
    import subprocess
    import sys

    code = ("import windowlib as wl, sys; "
            "s = wl.PartitionedSource('file:///tmp/x', schema='key string, ts timestamp, "
            "value double'); print(type(s.schema).__name__); "
            "print('pyspark.sql.session' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["str", "False"]
    folder = tmp_path / "arrival_hour=2024-03-01T00"
    folder.mkdir()
    (folder / "a.csv").write_text("key,ts,value\na,2024-03-01T00:00:01,1.5\n")
    source = PartitionedSource(f"file://{tmp_path}", format="csv",
                               schema="key string, ts timestamp, value double")
    rows = source.read(spark, source.list_partitions()[0].files).rows.collect()
    assert [(r["key"], r["value"]) for r in rows] == [("a", 1.5)]
