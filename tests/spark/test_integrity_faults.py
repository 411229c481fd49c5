"""Storage accidents end in ``CHECKPOINT_CORRUPT`` naming the object, never in a silent
difference or a raw Java/Python trace (issue: "nothing lost, nothing silently wrong").

Each case damages one committed object of a real incremental pipeline (the registered
``clickstream_demo`` over the synthetic clickstream, two committed runs) and then makes the
next run and the readers touch it. File-system cases on ``file://``; every one of them again on a
real S3 server (SeaweedFS), where sizes come from S3 listings and checksums are verified through
the S3 filesystem.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from s3_servers import use_env

from jobs.registry import get
from jobs.synthetic import DATA_PATH, write_synthetic
from windowlib.core.errors import StateError
from windowlib.engines.spark.errors import windowlib_error
from windowlib.runs.incremental import open_checkpoint
from windowlib.runs.operations import run_job
from windowlib.runs.outputs import read_firings, read_late
from windowlib.runs.status import job_status
from windowlib.state import layout
from windowlib.state.stores import open_store

pytestmark = pytest.mark.spark
H0, H1 = "2024-03-01T00", "2024-03-01T01"


def committed_lake(spark, root: str) -> tuple:
    """Three hours of clicks, the first two consumed by two committed runs."""
    job = get("clickstream_demo")
    write_synthetic(f"{root}/{DATA_PATH}", hours=3, events_per_hour=40, keys=4)
    for hour in (H0, H1):
        assert run_job(job, root, partitions=(hour, hour), spark=spark,
                       validate=False).status == "published"
    checkpoint, output = job.locations(root)
    return job, open_checkpoint(job.pipeline, checkpoint), output


def frame_file(cs, name: str, version: int | None = None) -> str:
    commit = cs.latest() if version is None else cs.get(version)
    return commit.extra["frames"][name]["files"][0]["path"]


def code_of(call) -> str:
    """The windowlib code ``call`` fails with — also when it fails inside a Spark task."""
    try:
        call()
    except Exception as exc:
        err = windowlib_error(exc)
        assert err is not None, f"not a windowlib error: {type(exc).__name__}: {exc}"[:2000]
        return err.code
    raise AssertionError("no error")


def local(uri: str) -> Path:
    assert uri.startswith("file://")
    return Path(uri[len("file://"):])


@pytest.fixture
def lake(spark, tmp_path):
    return committed_lake(spark, tmp_path.as_uri())


def next_run(job, root, spark):
    return lambda: run_job(job, root, spark=spark, validate=False)


def test_a_zero_byte_state_file_is_refused_not_read_as_empty(spark, tmp_path, lake):
    job, cs, _ = lake
    local(frame_file(cs, "state")).write_bytes(b"")
    assert code_of(next_run(job, tmp_path.as_uri(), spark)) == "CHECKPOINT_CORRUPT"
    assert cs.latest().version == 2          # nothing was published


def test_zeroed_bytes_in_a_state_file_are_a_coded_error(spark, tmp_path, lake):
    job, cs, _ = lake
    path = local(frame_file(cs, "state"))
    data = bytearray(path.read_bytes())
    data[len(data) // 2: len(data) // 2 + 16] = bytes(16)
    path.write_bytes(bytes(data))
    with pytest.raises(StateError) as err:        # the run raises the windowlib class itself
        run_job(job, tmp_path.as_uri(), spark=spark, validate=False)
    assert err.value.code == "CHECKPOINT_CORRUPT" and path.name in str(err.value)


def test_a_truncated_or_missing_firings_file_is_refused_by_the_readers(spark, lake):
    _, cs, output = lake
    path = local(frame_file(cs, "firings", 1))
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(StateError) as err:         # before any job: one listing, sizes
        read_firings(output, spark=spark)
    assert err.value.code == "CHECKPOINT_CORRUPT" and path.name in str(err.value)
    path.unlink()
    with pytest.raises(StateError) as err:
        read_firings(output, spark=spark)
    assert err.value.code == "CHECKPOINT_CORRUPT" and "missing" in str(err.value)


def test_flipped_bytes_in_an_output_file_fail_its_reader_with_the_code(spark, lake):
    _, cs, output = lake
    path = local(frame_file(cs, "firings", 2))
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    assert code_of(lambda: read_firings(output, spark=spark).collect()) == \
        "CHECKPOINT_CORRUPT"


def test_a_deleted_latest_commit_record_is_not_a_silent_rollback(spark, tmp_path, lake):
    job, cs, output = lake
    cs.pipeline_store.delete([layout.commit_key(2)])
    for call in (next_run(job, tmp_path.as_uri(), spark),
                 lambda: read_firings(output, spark=spark), cs.latest):
        assert code_of(call) == "CHECKPOINT_CORRUPT"
    assert "error" in job_status(job, tmp_path.as_uri())


def test_a_deleted_earlier_commit_record_is_detected_by_readers_and_runs(spark, tmp_path,
                                                                          lake):
    job, cs, output = lake
    cs.pipeline_store.delete([layout.commit_key(1)])
    for call in (lambda: read_late(output, spark=spark),
                 next_run(job, tmp_path.as_uri(), spark)):
        assert code_of(call) == "CHECKPOINT_CORRUPT"


def test_a_commit_record_replaced_by_an_edited_copy_breaks_the_chain(spark, lake):
    _, cs, output = lake
    store = cs.pipeline_store
    body = json.loads(store.read_bytes(layout.commit_key(1)))
    body.pop("checksum")
    body["run_id"] = "forged"                       # a well-formed record that is not the one
    store.write_bytes(layout.commit_key(1), layout.encode_record(body))
    assert code_of(lambda: read_firings(output, spark=spark)) == "CHECKPOINT_CORRUPT"


def _zero16(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(16) + data[middle + 16:]


def _flip(data: bytes) -> bytes:
    return data[:-100] + bytes([data[-100] ^ 0x01]) + data[-99:]     # same size


def _forged(data: bytes) -> bytes:
    body = json.loads(data)
    body.pop("checksum")
    body["run_id"] = "forged"
    return layout.encode_record(body)


@pytest.mark.s3
def test_every_storage_accident_is_refused_on_a_real_s3_server_too(spark, seaweed_s3):
    """The cases above on SeaweedFS (a real S3 server): sizes come from S3 listings and
    checksums are verified in Spark tasks reading through the S3 filesystem, so each case is
    damaged, probed and undone in turn (one damage never hides behind another)."""
    bucket = seaweed_s3.create_bucket("integrity")
    root = f"s3://{bucket}/lake"
    with use_env(seaweed_s3.env()):
        job, cs, output = committed_lake(spark, root)
        commits = cs.pipeline_store
        intact = sorted(map(tuple, read_firings(output, spark=spark).collect()))

        def frame_object(name: str, version: int | None = None) -> tuple:
            folder, _, key = frame_file(cs, name, version).rpartition("/")
            return open_store(folder), key

        run = next_run(job, root, spark)
        firings = lambda: read_firings(output, spark=spark).collect()   # noqa: E731
        late = lambda: read_late(output, spark=spark).collect()         # noqa: E731
        cases = [  # (object, damage, the calls that must refuse it)
            (frame_object("state"), lambda b: b"", [run]),
            (frame_object("state"), _zero16, [run]),
            (frame_object("firings", 1), lambda b: b[:-40], [firings]),
            (frame_object("firings", 1), None, [firings]),                 # deleted
            (frame_object("firings", 2), _flip, [firings]),
            ((commits, layout.commit_key(2)), None, [run, firings]),     # latest record deleted
            ((commits, layout.commit_key(1)), None, [late]),             # earlier one deleted
            ((commits, layout.commit_key(1)), _forged, [firings]),
        ]
        for (store, key), damage, calls in cases:
            original = store.read_bytes(key)
            if damage is None:
                store.delete([key])
            else:
                store.write_bytes(key, damage(original))
            for call in calls:
                assert code_of(call) == "CHECKPOINT_CORRUPT", (key, damage)
            store.write_bytes(key, original)
        assert cs.latest().version == 2                  # nothing was ever published
        assert sorted(map(tuple, firings())) == intact and intact


def test_verify_reports_every_damaged_object_and_exits_non_zero(spark, tmp_path, lake, capsys):
    from windowlib import cli

    _, cs, _ = lake
    args = ["verify", "--pipeline", "clickstream_demo", "--root", tmp_path.as_uri(), "--json"]
    assert cli.main(args) == 0
    intact = json.loads(capsys.readouterr().out)
    assert intact["ok"] and intact["versions"] == 2 and intact["files"] >= 4
    flipped = local(frame_file(cs, "firings", 1))
    data = bytearray(flipped.read_bytes())
    data[-100] ^= 0x01                               # same size: only the checksum sees it
    flipped.write_bytes(bytes(data))
    gone = local(frame_file(cs, "state"))
    gone.unlink()
    # the firings table's last Delta log entry: the table would show version 1 whole
    log = local(cs.pipeline_store.root_uri) / "tables" / "firings" / "_delta_log"
    (log / f"{1:020d}.json").unlink()
    assert cli.main(args) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and len(report["problems"]) == 3
    assert any(flipped.name in p and "checksum" in p for p in report["problems"])
    assert any(gone.name in p and "missing" in p for p in report["problems"])
    assert any("tables/firings" in p and "shows checkpoint version 1" in p
               for p in report["problems"])
