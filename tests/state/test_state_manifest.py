"""The input manifest: per-commit deltas, compaction, lookups of new files."""

from __future__ import annotations

import pytest

from windowlib.state.checkpoint import CheckpointStore, RunRecord
from windowlib.state.manifest import FileEntry


def _f(i: int, size: int = 10, etag: str | None = None, mtime: int | None = 1) -> FileEntry:
    return FileEntry(f"s3://b/in/arrival_hour=2013-01-01T{i:02d}/part-0.parquet", size,
                     etag=etag, mtime_ms=mtime, partition=f"2013-01-01T{i:02d}")


def test_consumed_files_accumulate_across_commits_with_compaction(root_uri, s3_settings):
    cs = CheckpointStore(root_uri, "demo", "fp", settings=s3_settings, manifest_compact_every=3)
    assert cs.manifest().consumed([_f(0)]) == [_f(0)]
    refs = []
    for i in range(7):
        st = cs.begin(f"run-{i}")
        commit = cs.commit(st, RunRecord(consumed=[_f(i)]))
        refs.append(commit.record["manifest"])
    # The reference never names more than compact_every files, whatever the history.
    assert all(len(r["deltas"]) + (1 if r["base"] else 0) <= 3 for r in refs)
    assert refs[-1]["files"] == 7
    m = cs.manifest()
    assert len(m) == 7 and m.get(_f(3).path).version == 4
    candidates = [_f(i) for i in range(9)]
    assert cs.manifest().consumed(candidates) == [_f(7), _f(8)]


@pytest.mark.unit
def test_rewritten_file_counts_as_new_and_identity_uses_etag_or_mtime(tmp_path):
    cs = CheckpointStore(tmp_path.as_uri(), "demo", "fp")
    cs.commit(cs.begin("r1"), RunRecord(consumed=[_f(1, etag="e1", mtime=None), _f(2, mtime=5)]))
    m = cs.manifest()
    assert m.consumed([_f(1, etag="e1", mtime=None)]) == []
    assert m.consumed([_f(1, etag="e2", mtime=None)]) == [_f(1, etag="e2", mtime=None)]
    assert m.consumed([_f(2, mtime=6)]) == [_f(2, mtime=6)]
    assert m.consumed([_f(2, size=11, mtime=5)]) == [_f(2, size=11, mtime=5)]


@pytest.mark.unit
def test_damaged_manifest_is_reported_as_corrupt(tmp_path):
    from windowlib.core.errors import StateError

    cs = CheckpointStore(tmp_path.as_uri(), "demo", "fp")
    commit = cs.commit(cs.begin("r1"), RunRecord(consumed=[_f(1)]))
    cs.pipeline_store.write_bytes(commit.record["manifest"]["base"], b"\x1f\x8b broken")
    with pytest.raises(StateError) as err:
        cs.manifest()
    assert err.value.code == "CHECKPOINT_CORRUPT"


@pytest.mark.unit
def test_row_counts_are_kept_but_are_not_part_of_a_files_identity(tmp_path):
    """A run records each consumed file's row count (from its footer); the same file listed
    again (no row count known to a listing) is still consumed, and entries written before
    row counts existed read back with ``rows=None``."""
    import dataclasses
    import json

    cs = CheckpointStore(tmp_path.as_uri(), "demo", "fp")
    counted = dataclasses.replace(_f(1), rows=42)
    cs.commit(cs.begin("r1"), RunRecord(consumed=[counted, _f(2)]))
    m = cs.manifest()
    assert (m.get(_f(1).path).rows, m.get(_f(2).path).rows) == (42, None)
    assert m.consumed([_f(1), _f(2)]) == []
    older = {k: v for k, v in dataclasses.asdict(_f(3)).items() if k != "rows"}
    assert FileEntry.from_dict(json.loads(json.dumps(older))).rows is None
