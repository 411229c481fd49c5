"""Partition values, locations and listings (no JVM): the bundle times of SPEC §1, ascending
partition order, file identity by (path, size, version), and validation of user paths."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest

from windowlib.core.errors import InputError, WindowlibError
from windowlib.core.partitions import partition_interval as parse_partition_value
from windowlib.runs.source import PartitionedSource
from windowlib.state.checkpoint import CheckpointStore
from windowlib.state.objectstore import is_hidden
from windowlib.state.stores import open_store
from windowlib.state.uri import Uri

HOUR, DAY = 3_600_000, 86_400_000


def ms(*args: int) -> int:
    return int(dt.datetime(*args, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.unit
@pytest.mark.parametrize(("value", "start", "end"), [
    ("2013-01-01T05", ms(2013, 1, 1, 5), ms(2013, 1, 1, 6)),       # an hour: ends at 06:00
    ("2013-01-01 23", ms(2013, 1, 1, 23), ms(2013, 1, 2, 0)),      # space separator, day rolls
    ("2013-01-01", ms(2013, 1, 1), ms(2013, 1, 2)),                # a date: the whole day
    ("2013-01", ms(2013, 1, 1), ms(2013, 2, 1)),                   # a calendar month (31 days)
    ("2013-02", ms(2013, 2, 1), ms(2013, 3, 1)),                   # ... and 28 days
    ("2013-01-01T05:30", ms(2013, 1, 1, 5, 30), ms(2013, 1, 1, 5, 31)),
    ("2013-01-01T05:30:15", ms(2013, 1, 1, 5, 30, 15), ms(2013, 1, 1, 5, 30, 16)),
    ("2013-01-01T05+02:00", ms(2013, 1, 1, 3), ms(2013, 1, 1, 4)),  # offsets are honoured
    ("2013-01-01T05:00-0130", ms(2013, 1, 1, 6, 30), ms(2013, 1, 1, 6, 31)),
    ("2013-01-01T05Z", ms(2013, 1, 1, 5), ms(2013, 1, 1, 6)),
    ("2013-01-01T05%3A30", ms(2013, 1, 1, 5, 30), ms(2013, 1, 1, 5, 31)),  # Spark's escaping
])
def test_time_partition_values_end_at_the_end_of_their_interval(value, start, end) -> None:
    assert parse_partition_value(value, "arrival_hour") == (start, end)


@pytest.mark.unit
@pytest.mark.parametrize(("value", "name"), [("17", "arrival_hour"), ("42", "batch"),
                                             ("eu-west", "region"), ("-3", "seq")])
def test_integers_and_plain_strings_have_no_time(value, name) -> None:
    assert parse_partition_value(value, name) == (None, None)


@pytest.mark.unit
@pytest.mark.parametrize(("value", "name"), [
    ("2013-13-01T05", "arrival_hour"),     # month 13
    ("2013-01-01T25", "arrival_hour"),     # hour 25
    ("2013-02-30", "batch"),               # looks like a date whatever the name
    ("2013-01-01T05:61", "arrival_hour"),
    ("yesterday", "arrival_date"),         # the name says it is a time
    ("2013-01-01T05+25:00", "arrival_hour"),
])
def test_invalid_time_values_raise_a_clear_error_with_a_code(value, name) -> None:
    with pytest.raises(InputError) as err:
        parse_partition_value(value, name)
    assert err.value.code == "PARTITION_VALUE_INVALID"
    assert value in str(err.value) or "valid" in str(err.value)


@pytest.mark.unit
@pytest.mark.parametrize("uri", [
    "file:///tmp/../etc/passwd", "file://relative/path", "s3://ab/x/../y", "s3://Bad_Bucket/k",
    "s3://bucket/k?X-Amz-Credential=a", "http://host/x", "/tmp/plain", "", "file:///a/./b",
])
def test_unsafe_or_unsupported_locations_are_refused(uri) -> None:
    with pytest.raises(InputError) as err:
        Uri.parse(uri)
    assert err.value.code == "URI_INVALID"


@pytest.mark.unit
@pytest.mark.parametrize("uri", ["s3://KEY:SECRET@bucket/lake", "s3a://KEY:SE/CRET@bucket/x",
                                 "s3://bucket/lake?KEY=SECRET", "file://KEY:SECRET@host/x"])
def test_credentials_in_a_location_are_never_echoed(uri) -> None:
    for make in (lambda: PartitionedSource(uri), lambda: open_store(uri),
                 lambda: CheckpointStore(uri, "demo", "fp")):
        with pytest.raises(InputError) as err:
            make()
        assert err.value.code == "URI_INVALID"
        assert "KEY" not in str(err.value) and "CRET" not in str(err.value)


@pytest.mark.unit
def test_locations_parse_to_arrow_and_spark_paths() -> None:
    s3 = Uri.parse("s3a://my-bucket/a/b/")
    assert (s3.uri, s3.arrow_path, s3.spark_path) == (
        "s3://my-bucket/a/b", "my-bucket/a/b", "s3a://my-bucket/a/b")
    local = Uri.parse("file:///data//events/")
    assert (local.uri, local.arrow_path) == ("file:///data/events", "/data/events")
    with pytest.raises(InputError):
        local.child("x/../../etc")


@pytest.mark.unit
@pytest.mark.parametrize("name", ["arrival hour", "../x", "a/b", "", "hour;drop"])
def test_partition_names_are_validated(name, tmp_path) -> None:
    with pytest.raises(InputError) as err:
        PartitionedSource(f"file://{tmp_path}", partition=name)
    assert err.value.code == "PARTITION_NAME_INVALID"


@pytest.mark.unit
def test_source_arguments_are_validated(tmp_path) -> None:
    with pytest.raises(InputError) as err:
        PartitionedSource(f"file://{tmp_path}", format="avro")
    assert err.value.code == "FORMAT_INVALID"
    with pytest.raises(InputError) as err:
        PartitionedSource(f"file://{tmp_path}", format="json")
    assert err.value.code == "SCHEMA_REQUIRED"
    assert isinstance(err.value, WindowlibError)


@pytest.mark.unit
@pytest.mark.parametrize(("relative", "hidden"), [
    ("a=1/_SUCCESS", True), ("a=1/_temporary/0/part-0.parquet", True), ("a=1/.part.crc", True),
    ("a=1/part-0.parquet.tmp", True), ("a=1/.hidden", True), ("a=1/part~", True),
    ("a=1/part-0.parquet", False), ("a=1/sub/data.csv", False),
])
def test_hidden_and_temp_files(relative, hidden) -> None:
    assert is_hidden(relative) is hidden


def _put(path, data: bytes = b"x") -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.unit
def test_local_listing_orders_partitions_by_time_and_ignores_noise(tmp_path) -> None:
    for value in ["2013-01-01T10", "2013-01-01T09", "2013-01-02T00", "2012-12-31T23"]:
        _put(f"{tmp_path}/arrival_hour={value}/part-0.parquet", b"abc")
    _put(f"{tmp_path}/arrival_hour=2013-01-01T09/_SUCCESS")
    _put(f"{tmp_path}/arrival_hour=2013-01-01T09/.part-0.parquet.crc")
    _put(f"{tmp_path}/arrival_hour=2013-01-03T00/_SUCCESS")          # only hidden: no partition
    _put(f"{tmp_path}/other=1/part-0.parquet")                        # another partition name
    _put(f"{tmp_path}/stray.parquet")                                 # not in a partition
    src = PartitionedSource(f"file://{tmp_path}", partition="arrival_hour")
    parts = src.list_partitions()
    assert [p.value for p in parts] == ["2012-12-31T23", "2013-01-01T09", "2013-01-01T10",
                                        "2013-01-02T00"]
    assert [p.processing_time_ms for p in parts] == [ms(2013, 1, 1, 0), ms(2013, 1, 1, 10),
                                                     ms(2013, 1, 1, 11), ms(2013, 1, 2, 1)]
    f = parts[1].files[0]
    assert f.path == f"file://{tmp_path}/arrival_hour=2013-01-01T09/part-0.parquet"
    assert f.size == 3 and f.partition_value == "2013-01-01T09"
    st = os.stat(f"{tmp_path}/arrival_hour=2013-01-01T09/part-0.parquet")
    assert f.version == f"mtime_ns:{st.st_mtime_ns}"
    window = src.list_partitions(first="2013-01-01T09", last="2013-01-01T10")
    assert [p.value for p in window] == ["2013-01-01T09", "2013-01-01T10"]
    since = src.list_partitions(first=dt.datetime(2013, 1, 1, 10, tzinfo=dt.UTC))
    assert [p.value for p in since] == ["2013-01-01T10", "2013-01-02T00"]


@pytest.mark.unit
def test_integer_partitions_sort_numerically_and_have_no_processing_time(tmp_path) -> None:
    for value in ["10", "9", "100"]:
        _put(f"{tmp_path}/batch={value}/f.csv")
    parts = PartitionedSource(f"file://{tmp_path}", partition="batch",
                              format="csv").list_partitions()
    assert [(p.value, p.start_ms, p.end_ms) for p in parts] == [
        ("9", None, None), ("10", None, None), ("100", None, None)]


@pytest.mark.unit
def test_mixed_time_and_plain_values_are_refused(tmp_path) -> None:
    for value in ["2013-01-01", "late"]:
        _put(f"{tmp_path}/day={value}/f.parquet")
    with pytest.raises(InputError) as err:
        PartitionedSource(f"file://{tmp_path}", partition="day").list_partitions()
    assert err.value.code == "PARTITION_VALUE_INVALID"


def _identities(src: PartitionedSource) -> set[tuple[str, int, str]]:
    return {(f.path, f.size, f.version) for p in src.list_partitions() for f in p.files}


@pytest.mark.unit
def test_late_and_rewritten_local_files_are_seen_as_new(tmp_path) -> None:
    _put(f"{tmp_path}/arrival_hour=2013-01-01T05/a.parquet", b"first")
    src = PartitionedSource(f"file://{tmp_path}")
    consumed = _identities(src)
    _put(f"{tmp_path}/arrival_hour=2013-01-01T05/b.parquet", b"late")     # late file, old hour
    time.sleep(0.01)
    _put(f"{tmp_path}/arrival_hour=2013-01-01T05/a.parquet", b"again")    # rewritten in place
    new = _identities(src) - consumed
    assert {p for p, _, _ in new} == {f"file://{tmp_path}/arrival_hour=2013-01-01T05/a.parquet",
                                      f"file://{tmp_path}/arrival_hour=2013-01-01T05/b.parquet"}


@pytest.mark.unit
def test_a_missing_source_location_is_an_error_not_an_empty_listing(tmp_path) -> None:
    assert list(open_store(f"file://{tmp_path}/nope").list(hidden=False)) == []
    with pytest.raises(InputError) as err:
        PartitionedSource(f"file://{tmp_path}/nope").list_partitions()
    assert err.value.code == "SOURCE_NOT_FOUND" and f"{tmp_path}/nope" in str(err.value)
    (tmp_path / "empty").mkdir()        # an existing folder without data: nothing to list
    assert PartitionedSource(f"file://{tmp_path}/empty").list_partitions() == []


@pytest.mark.unit
def test_a_reversed_partition_range_is_refused(tmp_path) -> None:
    _put(f"{tmp_path}/arrival_hour=2013-01-01T05/part-0.parquet")
    src = PartitionedSource(f"file://{tmp_path}")
    with pytest.raises(InputError) as err:
        src.list_partitions(first="2013-01-01T06", last="2013-01-01T05")
    assert err.value.code == "PARTITION_RANGE_REVERSED"
    assert "2013-01-01T06" in str(err.value) and "2013-01-01T05" in str(err.value)
    with pytest.raises(InputError, match="PARTITION_RANGE_REVERSED"):
        src.list_partitions(first=dt.datetime(2013, 1, 2, tzinfo=dt.UTC),
                            last=dt.datetime(2013, 1, 1, tzinfo=dt.UTC))
    assert [p.value for p in src.list_partitions("2013-01-01T05", "2013-01-01T05")] == [
        "2013-01-01T05"]


@pytest.mark.unit
@pytest.mark.parametrize(("first", "last"), [("2013-01-01", "2013-01-01T05"),
                                             ("2013-01-01T05", "2013-01-02"),
                                             ("2013-01", "2013-02")])
def test_a_bound_coarser_than_the_partitions_is_refused(tmp_path, first, last) -> None:
    """A daily value for hourly partitions used to select the day's first hour silently."""
    _put(f"{tmp_path}/arrival_hour=2013-01-01T05/part-0.parquet")
    _put(f"{tmp_path}/arrival_hour=2013-01-01T06/part-0.parquet")
    with pytest.raises(InputError) as err:
        PartitionedSource(f"file://{tmp_path}").list_partitions(first, last)
    assert err.value.code == "PARTITION_PRECISION_MISMATCH"
    assert "hour" in str(err.value)


@pytest.mark.unit
def test_check_partition_range_knows_the_expected_precision_without_data() -> None:
    from windowlib.core.partitions import check_partition_range, partition_precision

    assert [partition_precision(v) for v in ("2013-01", "2013-01-01", "2013-01-01T05",
                                             "2013-01-01T05:30", "2013-01-01T05:30:01",
                                             "2013-01-01T05:30:01.5", "17", "late")] == [
        "month", "day", "hour", "minute", "second", "instant", None, None]
    check_partition_range("2013-01-01T05", "2013-01-01T05", "arrival_hour", "hour")
    check_partition_range(None, None, "arrival_hour", "hour")
    with pytest.raises(InputError, match="PARTITION_PRECISION_MISMATCH"):
        check_partition_range("2013-01-01", "2013-01-02", "arrival_hour", "hour")
    with pytest.raises(InputError, match="PARTITION_RANGE_REVERSED"):
        check_partition_range("2013-01-02", "2013-01-01", "arrival_date", "day")
    with pytest.raises(InputError, match="PARTITION_VALUE_INVALID"):
        check_partition_range("2013-13-01T00", "2013-01-01T00", "arrival_hour", "hour")


@pytest.mark.s3
@pytest.mark.parametrize("server_name", ["moto_s3", "seaweed_s3"])
def test_s3_listing_gives_etags_and_sees_late_files(server_name, request) -> None:
    server = request.getfixturevalue(server_name)
    bucket = server.create_bucket()
    client = server.client()
    for key in ["in/arrival_date=2013-01-02/part-0.csv", "in/arrival_date=2013-01-01/part-0.csv",
                "in/arrival_date=2013-01-01/_SUCCESS", "in/arrival_date=2013-01-01/_tmp/x.csv",
                "in2/arrival_date=2013-01-01/other.csv"]:
        client.put_object(Bucket=bucket, Key=key, Body=b"a,b\n1,2\n")
    src = PartitionedSource(f"s3://{bucket}/in", partition="arrival_date", format="csv",
                            settings=server.settings())
    parts = src.list_partitions()
    assert [(p.value, p.end_ms) for p in parts] == [("2013-01-01", ms(2013, 1, 2)),
                                                    ("2013-01-02", ms(2013, 1, 3))]
    f = parts[0].files[0]
    head = client.head_object(Bucket=bucket, Key="in/arrival_date=2013-01-01/part-0.csv")
    assert (f.path, f.size, f.version) == (
        f"s3://{bucket}/in/arrival_date=2013-01-01/part-0.csv", 8, head["ETag"].strip('"'))
    consumed = _identities(src)
    client.put_object(Bucket=bucket, Key="in/arrival_date=2013-01-01/part-1.csv", Body=b"a,b\n")
    client.put_object(Bucket=bucket, Key="in/arrival_date=2013-01-02/part-0.csv",
                      Body=b"a,b\n3,4\n")                       # same size, new content
    new = {p for p, _, _ in _identities(src) - consumed}
    assert new == {f"s3://{bucket}/in/arrival_date=2013-01-01/part-1.csv",
                   f"s3://{bucket}/in/arrival_date=2013-01-02/part-0.csv"}


@pytest.mark.s3
def test_an_s3_prefix_without_any_object_is_a_missing_source(moto_s3) -> None:
    bucket = moto_s3.create_bucket()
    src = PartitionedSource(f"s3://{bucket}/in", settings=moto_s3.settings())
    with pytest.raises(InputError) as err:
        src.list_partitions()
    assert err.value.code == "SOURCE_NOT_FOUND" and f"s3://{bucket}/in" in str(err.value)
    moto_s3.client().put_object(Bucket=bucket, Key="in/_SUCCESS", Body=b"")   # a marker
    assert src.list_partitions() == []
