"""Output tables (Delta, ``windowlib.state.tables``) on every backend: a publish is one switch
(concurrent readers see one published version whole, never a mix), publishes are monotone and
idempotent, a rebuild replaces the files, and time travel reads an earlier version."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowlib.core.errors import StateError
from windowlib.state.stores import open_store
from windowlib.state.tables import OutputTable, TableFile, TableSnapshot
from windowlib.state.taskfs import arrow_filesystem
from windowlib.state.uri import Uri

SCHEMA = pa.schema([("run", pa.int64()), ("n", pa.int64())])
ROWS = 50


def _table(root_uri, s3_settings) -> OutputTable:
    return OutputTable(open_store(root_uri, s3_settings).child("demo"), "firings", s3_settings)


def _stage(table: OutputTable, settings, key: str, run: int) -> TableFile:
    """Write one run's Parquet file below the table root, as a run's Spark task would."""
    data = pa.table({"run": [run] * ROWS, "n": list(range(ROWS))}, schema=SCHEMA)
    loc = table.location.child(f"{key}/part-00000-x-000.parquet")
    fs = arrow_filesystem(Uri.parse(table.uri), settings)
    if loc.scheme == "file":
        fs.create_dir(loc.arrow_path.rsplit("/", 1)[0], recursive=True)
    pq.write_table(data, loc.arrow_path, filesystem=fs)
    return TableFile(f"{key}/part-00000-x-000.parquet", fs.get_file_info(loc.arrow_path).size,
                     ROWS)


def _runs_seen(dt) -> dict[int, int]:
    rows = dt.to_pyarrow_dataset().to_table().column("run").to_pylist()
    return {r: rows.count(r) for r in set(rows)}


def test_a_reader_during_publishes_sees_one_published_version_whole(root_uri, s3_settings):
    table = _table(root_uri, s3_settings)
    runs = 6
    files = [_stage(table, s3_settings, f"v={v:08d}-aa{v:010d}", v) for v in range(1, runs + 1)]
    rebuilt = _stage(table, s3_settings, f"generations/g=000002/v={1:08d}-bb{1:010d}", 100)
    # what each checkpoint version shows: runs 1..v, then a rebuild replacing them all
    expected = {v: {r: ROWS for r in range(1, v + 1)} for v in range(1, runs + 1)}
    expected[runs + 1] = {100: ROWS}
    table.publish(TableSnapshot(1, 1, "r1", tuple(files[:1]), SCHEMA))
    published = threading.Event()
    first_reads = [threading.Event(), threading.Event()]   # each reader read v1 before
    seen: list[tuple[int | None, dict[int, int]]] = []
    errors: list[BaseException] = []

    def read(first: threading.Event) -> None:
        try:
            while True:
                stop = published.is_set()      # one more full read after the last publish
                dt = table.open()
                seen.append((dt.transaction_version("windowlib"), _runs_seen(dt)))
                first.set()
                if stop:
                    return
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            first.set()

    readers = [threading.Thread(target=read, args=(e,)) for e in first_reads]
    for t in readers:
        t.start()
    for e in first_reads:
        e.wait()
    for v in range(2, runs + 1):
        table.publish(TableSnapshot(v, 1, f"r{v}", tuple(files[:v]), SCHEMA))
    table.publish(TableSnapshot(runs + 1, 2, "rebuild", (rebuilt,), SCHEMA))
    published.set()
    for t in readers:
        t.join()
    assert errors == []
    for version, contents in seen:       # each read: exactly one published version, whole
        assert contents == expected[version]
    assert seen[-1] == (runs + 1, {100: ROWS})
    assert len({v for v, _ in seen}) >= 2    # the reads did span publishes


def test_publishes_are_idempotent_and_never_go_back(root_uri, s3_settings):
    table = _table(root_uri, s3_settings)
    a = _stage(table, s3_settings, "v=00000001-aa00000001", 1)
    b = _stage(table, s3_settings, "v=00000002-aa00000002", 2)
    first = table.publish(TableSnapshot(1, 1, "r1", (a,), SCHEMA))
    assert table.publish(TableSnapshot(1, 1, "r1", (a,), SCHEMA)) == first   # a retry: no-op
    second = table.publish(TableSnapshot(2, 1, "r2", (a, b), SCHEMA))
    assert second.delta_version == first.delta_version + 1
    late = table.publish(TableSnapshot(1, 1, "r1", (a,), SCHEMA))      # a slow publisher
    assert late == second and _runs_seen(table.open()) == {1: ROWS, 2: ROWS}


@pytest.mark.atomic_put
def test_racing_publishers_end_at_the_newest_version(root_uri, s3_settings):
    table = _table(root_uri, s3_settings)
    files = [_stage(table, s3_settings, f"v={v:08d}-aa{v:010d}", v) for v in range(1, 5)]
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def publish(v: int) -> None:
        try:
            start.wait()
            table.publish(TableSnapshot(v, 1, f"r{v}", tuple(files[:v]), SCHEMA))
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=publish, args=(v,)) for v in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    dt = table.open()
    assert dt.transaction_version("windowlib") == 4
    assert _runs_seen(dt) == {v: ROWS for v in range(1, 5)}


def test_time_travel_by_checkpoint_version_and_a_schema_change(root_uri, s3_settings, request):
    if request.node.callspec.params.get("root_uri") == "moto":
        pytest.skip("moto's ListObjectsV2 returns the StartAfter key itself, which sends "
                    "delta-rs's history() into retries (SeaweedFS and S3 do not)")
    table = _table(root_uri, s3_settings)
    a = _stage(table, s3_settings, "v=00000001-aa00000001", 1)
    table.publish(TableSnapshot(1, 1, "r1", (a,), SCHEMA))
    wider = pa.schema([*SCHEMA, ("extra", pa.string())])
    g = _stage(table, s3_settings, "generations/g=000002/v=00000001-bb00000001", 7)
    table.publish(TableSnapshot(3, 2, "rebuild", (g,), wider))
    assert table.open().schema().to_arrow().names == wider.names
    assert _runs_seen(table.open()) == {7: ROWS}
    assert _runs_seen(table.open(checkpoint_version=1)) == {1: ROWS}
    with pytest.raises(StateError) as err:
        table.open(checkpoint_version=2)
    assert err.value.code == "TABLE_VERSION_NOT_FOUND"


def test_a_runs_files_below_table_roots_go_with_abort_and_gc(root_uri, s3_settings):
    from datetime import UTC, datetime, timedelta

    from windowlib.state.checkpoint import CheckpointStore

    cs = CheckpointStore(root_uri, "demo", "fp", settings=s3_settings)

    def staged_files() -> list[str]:
        return [o.key for o in cs.pipeline_store.list("tables/")]

    aborted = cs.begin("r1")
    assert aborted.uri("firings").endswith(f"/demo/tables/firings/{aborted.key}")
    open_store(aborted.uri("firings"), s3_settings).write_bytes("part-0.parquet", b"r1")
    aborted.abort()
    assert staged_files() == []
    crashed = cs.begin("r2")             # writes its outputs, then its process dies
    open_store(crashed.uri("late"), s3_settings).write_bytes("part-0.parquet", b"r2")
    assert cs.gc().removed_stagings == [] and staged_files()      # within the grace period
    later = datetime.now(UTC) + timedelta(days=2)
    assert cs.gc(now=later).removed_stagings == [crashed.key] and staged_files() == []


def _merged(table: OutputTable, settings, key: str, runs: range) -> TableFile:
    """One file holding the rows of ``runs`` (what compaction would write)."""
    data = pa.concat_tables([pa.table({"run": [r] * ROWS, "n": list(range(ROWS))},
                                      schema=SCHEMA) for r in runs])
    loc = table.location.child(f"{key}/part-00000-m-000.parquet")
    fs = arrow_filesystem(Uri.parse(table.uri), settings)
    if loc.scheme == "file":
        fs.create_dir(loc.arrow_path.rsplit("/", 1)[0], recursive=True)
    pq.write_table(data, loc.arrow_path, filesystem=fs)
    return TableFile(f"{key}/part-00000-m-000.parquet", fs.get_file_info(loc.arrow_path).size,
                     data.num_rows)


def test_a_compaction_keeps_rows_and_version_and_yields_to_a_publish(root_uri, s3_settings):
    table = _table(root_uri, s3_settings)
    files = [_stage(table, s3_settings, f"v={v:08d}-cc{v:010d}", v) for v in range(1, 5)]
    for v in range(1, 4):
        table.publish(TableSnapshot(v, 1, f"r{v}", tuple(files[:v]), SCHEMA))
    stale = table.open()
    assert table.small_files(stale, 3) == [] and len(table.small_files(stale, 2)) == 3
    early = _merged(table, s3_settings, "v=00000003-cc0000000003/compacted-a", range(1, 4))
    table.publish(TableSnapshot(4, 1, "r4", tuple(files), SCHEMA))   # commits first
    assert table.replace_files(stale, table.small_files(stale, 2), [early]) is None
    dt = table.open()
    assert len(table.files(dt)) == 4
    merged = _merged(table, s3_settings, "v=00000004-cc0000000004/compacted-b", range(1, 5))
    state = table.replace_files(dt, table.small_files(dt, 2), [merged])
    assert state is not None and state.checkpoint_version == 4 and state.files == 1
    assert state.delta_version == dt.version() + 1
    assert _runs_seen(table.open()) == {v: ROWS for v in range(1, 5)}
    # time travel: the versions before the compaction still read their own files
    assert _runs_seen(table.open(delta_version=1)) == {1: ROWS, 2: ROWS}
    with pytest.raises(StateError) as err:      # a compaction never changes the rows
        table.replace_files(table.open(), [merged], [files[0]])
    assert err.value.code == "STATE_INVALID"


def test_the_kept_handle_follows_commits_of_another_writer_and_open_stays_put(root_uri,
                                                                             s3_settings):
    reader, writer = _table(root_uri, s3_settings), _table(root_uri, s3_settings)
    files = [_stage(writer, s3_settings, f"v={v:08d}-kk{v:010d}", v) for v in range(1, 4)]
    assert reader.current() is None
    writer.publish(TableSnapshot(1, 1, "r1", tuple(files[:1]), SCHEMA))
    kept = reader.current()
    assert kept.transaction_version("windowlib") == 1
    own = reader.open()                       # a handle of its own stays at its version
    writer.publish(TableSnapshot(2, 1, "r2", tuple(files[:2]), SCHEMA))
    writer.publish(TableSnapshot(3, 1, "r3", tuple(files), SCHEMA))
    assert reader.current() is kept and kept.transaction_version("windowlib") == 3
    assert _runs_seen(kept) == {v: ROWS for v in range(1, 4)}
    assert own.transaction_version("windowlib") == 1 and _runs_seen(own) == {1: ROWS}
