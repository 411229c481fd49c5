"""``write_frame`` / ``read_frame``: DataFrames written and read by Spark tasks in parallel on
``file://`` (Spark's own Parquet I/O and the Arrow path) and on real S3 servers (moto, SeaweedFS)
through Arrow's S3 filesystem inside ``mapInArrow`` — no data through the driver."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from windowlib.core.errors import DefinitionError, InputError, StateError
from windowlib.engines.spark.errors import windowlib_error
from windowlib.runs.frames import (
    FrameFile,
    FrameInfo,
    arrow_rewrite,
    read_frame,
    write_frame,
    written_files,
)
from windowlib.state.stores import open_store
from windowlib.state.uri import Uri

pytestmark = pytest.mark.spark

SCHEMA = ("id long, k string, ts timestamp, day date, tags array<string>, "
          "amount double, nested struct<a: long, b: array<long>>")
T0 = dt.datetime(2013, 1, 1, 5, 0, tzinfo=dt.UTC)


def sample(spark, n: int = 60, partitions: int = 4):
    """Rows with timestamps (aware UTC), dates, arrays, structs and nulls everywhere."""
    rows = []
    for i in range(n):
        rows.append((i, None if i % 7 == 0 else f"k{i % 5}",
                     None if i % 11 == 0 else T0 + dt.timedelta(minutes=i, microseconds=i),
                     dt.date(2013, 1, 1 + i % 28),
                     None if i % 5 == 0 else [f"t{i}", None],
                     None if i % 3 == 0 else i * 1.25,
                     None if i % 4 == 0 else (i, [i, None])))
    return spark.createDataFrame(rows, SCHEMA).repartition(partitions)


def assert_same(a, b) -> None:
    assert a.schema.simpleString() == b.schema.simpleString()
    assert a.count() == b.count()
    assert a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


def task_of(path: str) -> int:
    m = re.search(r"/part-(\d{5})-[A-Za-z0-9_-]+-\d{3}\.parquet$", path)
    assert m, path
    return int(m.group(1))


@pytest.mark.parametrize("io", ["spark", "arrow"])
def test_file_round_trip_keeps_types_nulls_and_utc_instants(spark, tmp_path, io) -> None:
    df = sample(spark)
    info = write_frame(df, f"file://{tmp_path}/frame", io=io)
    assert info.rows == 60 and info.schema_json == df.schema.json()
    listed = [o.uri for o in open_store(info.uri).list(hidden=False)
              if o.key.endswith(".parquet")]
    assert sorted(f.path for f in info.files) == sorted(listed)
    assert info.bytes == sum(o.size for o in open_store(info.uri).list(hidden=False)
                             if o.key.endswith(".parquet"))
    back = read_frame(spark, info, df.schema, io=io)
    assert_same(df, back)
    # the instant survives exactly (microseconds since the epoch, independent of time zones)
    row = back.filter("id = 1").selectExpr("unix_micros(ts) AS us").first()
    assert row.us == int((T0 + dt.timedelta(minutes=1)).timestamp()) * 1_000_000 + 1
    # Spark's reader and the Arrow reader agree on the same files
    other = "arrow" if io == "spark" else "spark"
    assert_same(back, read_frame(spark, info, df.schema, io=other))


@pytest.mark.s3
@pytest.mark.parametrize("server_name", ["moto_s3", "seaweed_s3"])
def test_s3_round_trip_writes_one_file_per_task_in_parallel(spark, request,
                                                            server_name) -> None:
    server = request.getfixturevalue(server_name)
    bucket = server.create_bucket()
    settings = server.settings()
    df = sample(spark, n=90, partitions=6)
    uri = f"s3://{bucket}/state/v1/panes"
    info = write_frame(df, uri, settings=settings)
    # every non-empty partition wrote its own file, named after its task
    tasks = [task_of(f.path) for f in info.files]
    assert len(set(tasks)) == len(tasks) == 6
    assert info.rows == 90 and all(f.rows > 0 and f.bytes > 0 for f in info.files)
    keys = {o["Key"]: o["Size"] for o in server.client().list_objects_v2(
        Bucket=bucket, Prefix="state/v1/panes/")["Contents"]}
    assert {f"s3://{bucket}/{k}": s for k, s in keys.items()} == {
        f.path: f.bytes for f in info.files}
    assert_same(df, read_frame(spark, info, df.schema, settings=settings))
    # reading by location lists the same files (boto3 on the driver, data in tasks)
    assert_same(df, read_frame(spark, uri, SCHEMA, settings=settings))
    # a frame description survives a JSON round trip (manifests store it)
    again = FrameInfo.from_dict(info.to_dict())
    assert again == info
    assert_same(df, read_frame(spark, [f.path for f in again.files], df.schema,
                               settings=settings, parallelism=2))


@pytest.mark.s3
def test_s3_empty_frames_write_no_files_and_read_as_empty(spark, moto_s3) -> None:
    bucket = moto_s3.create_bucket()
    settings = moto_s3.settings()
    empty = sample(spark).limit(0)
    info = write_frame(empty, f"s3://{bucket}/empty", settings=settings)
    assert info.files == () and info.rows == 0
    back = read_frame(spark, info, empty.schema, settings=settings)
    assert back.count() == 0 and back.schema.simpleString() == empty.schema.simpleString()
    nothing = read_frame(spark, f"s3://{bucket}/never-written", SCHEMA, settings=settings)
    assert nothing.count() == 0 and nothing.columns == empty.columns


@pytest.mark.parametrize("io", ["spark", "arrow"])
def test_file_empty_frames_round_trip(spark, tmp_path, io) -> None:
    empty = sample(spark).limit(0)
    info = write_frame(empty, f"file://{tmp_path}/empty", io=io)
    assert info.rows == 0
    back = read_frame(spark, info, empty.schema, io=io)
    assert back.count() == 0 and back.schema.simpleString() == empty.schema.simpleString()


@pytest.mark.s3
def test_s3_existing_location_is_refused_unless_overwrite(spark, moto_s3) -> None:
    bucket = moto_s3.create_bucket()
    settings = moto_s3.settings()
    df = sample(spark, n=20, partitions=2)
    uri = f"s3://{bucket}/out"
    first = write_frame(df, uri, settings=settings, token="run1")
    with pytest.raises(StateError) as err:
        write_frame(df, uri, settings=settings)
    assert err.value.code == "FRAME_EXISTS"
    second = write_frame(df.limit(5), uri, settings=settings, mode="overwrite", token="run2")
    remaining = {o.uri for o in open_store(uri, settings).list(hidden=False)}
    assert remaining == {f.path for f in second.files}
    assert not remaining & {f.path for f in first.files}
    assert read_frame(spark, uri, df.schema, settings=settings).count() == 5


@pytest.mark.s3
def test_s3_large_partitions_roll_over_to_several_files(spark, moto_s3) -> None:
    bucket = moto_s3.create_bucket()
    settings = moto_s3.settings()
    df = spark.range(0, 250, 1, 1).selectExpr("id", "cast(id AS string) AS s")
    info = write_frame(df, f"s3://{bucket}/big", settings=settings, max_rows_per_file=100)
    assert [f.rows for f in info.files] == [100, 100, 50]
    assert [f.path.rsplit("-", 1)[1] for f in info.files] == [
        "000.parquet", "001.parquet", "002.parquet"]
    assert_same(df, read_frame(spark, info, df.schema, settings=settings))


@pytest.mark.s3
def test_s3_partition_by_writes_hive_directories(spark, seaweed_s3) -> None:
    bucket = seaweed_s3.create_bucket()
    settings = seaweed_s3.settings()
    df = sample(spark, n=40, partitions=3)
    info = write_frame(df, f"s3://{bucket}/byk", settings=settings, partition_by=["k"])
    dirs = {f.path.split("/byk/", 1)[1].split("/")[0] for f in info.files}
    assert dirs == {"k=k0", "k=k1", "k=k2", "k=k3", "k=k4", "k=__HIVE_DEFAULT_PARTITION__"}
    assert_same(df, read_frame(spark, info, df.schema, settings=settings))


def test_file_partition_by_round_trips_on_both_paths(spark, tmp_path) -> None:
    df = sample(spark, n=40, partitions=3)
    for io in ("spark", "arrow"):
        info = write_frame(df, f"file://{tmp_path}/{io}", io=io, partition_by=["k"])
        assert {p.split("/")[-2] for p in (f.path for f in info.files)} >= {"k=k0", "k=k4"}
        assert_same(df, read_frame(spark, info, df.schema, io=io))


def test_bad_arguments_raise_clear_errors(spark, tmp_path) -> None:
    df = sample(spark, n=3, partitions=1)
    with pytest.raises(InputError) as err:
        write_frame(df, f"file://{tmp_path}/../x")
    assert err.value.code == "URI_INVALID"
    with pytest.raises(DefinitionError) as err:
        write_frame(df, f"file://{tmp_path}/x", io="hdfs")
    assert err.value.code == "ARGUMENT_INVALID"
    with pytest.raises(InputError) as err:
        write_frame(df, f"file://{tmp_path}/x", partition_by=["nope"])
    assert err.value.code == "COLUMN_MISSING"
    with pytest.raises(InputError) as err:
        read_frame(spark, f"file://{tmp_path}/x", "not a schema <<")
    assert err.value.code == "SCHEMA_INVALID"


@pytest.mark.parametrize("where", ["file", "s3"])
def test_arrow_rewrite_merges_files_into_one_in_their_order_in_one_task(spark, tmp_path,
                                                                       request, where):
    """Compaction's rewrite: the files read and written again by one task, their rows in the
    files' order; a damaged file is ``CHECKPOINT_CORRUPT``, never rewritten."""
    settings, root = None, f"file://{tmp_path}"
    if where == "s3":
        server = request.getfixturevalue("moto_s3")
        settings, root = server.settings(), f"s3://{server.create_bucket()}"
    df = sample(spark, partitions=4)
    info = write_frame(df, f"{root}/small", io="arrow", settings=settings)
    assert len(info.files) == 4
    target = Uri.parse(f"{root}/merged")
    rows = arrow_rewrite(spark, info.files, df.schema, target, "tok1",
                         settings=settings).collect()
    merged = written_files(target, rows)
    assert len(merged) == 1 and merged[0].rows == 60 and merged[0].sha256
    back = read_frame(spark, list(merged), df.schema, settings=settings, io="arrow")
    ordered = [r for f in info.files
               for r in read_frame(spark, [f], df.schema, settings=settings,
                                   io="arrow").collect()]
    assert back.collect() == ordered
    damaged = [*info.files[:-1], FrameFile(info.files[-1].path, info.files[-1].rows,
                                           info.files[-1].bytes + 1)]
    with pytest.raises(Exception) as failed:
        arrow_rewrite(spark, damaged, df.schema, Uri.parse(f"{root}/again"), "tok2",
                      settings=settings).collect()
    err = windowlib_error(failed.value)
    assert err is not None and err.code == "CHECKPOINT_CORRUPT", failed.value


def test_arrow_io_with_arrow_large_types_reads_what_it_wrote(spark, tmp_path):
    """The Arrow path's reader tasks work when the session uses Arrow's large types
    (``spark.sql.execution.arrow.useLargeVarTypes``): the rows read equal the rows written."""
    from windowlib.engines.spark.session import scoped_conf

    df = sample(spark, partitions=2)
    info = write_frame(df, f"file://{tmp_path}/large", io="arrow")
    with scoped_conf(spark, {"spark.sql.execution.arrow.useLargeVarTypes": "true"}):
        back = read_frame(spark, info, df.schema, io="arrow").collect()
    assert sorted(back) == sorted(df.collect())
