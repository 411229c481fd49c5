"""Golden checkpoint of format version 1: a copy must stay readable and continuable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from windowlib.state import FORMAT_VERSION, CheckpointStore, FileEntry, RunRecord, open_store

pytestmark = pytest.mark.unit
GOLDEN = Path(__file__).with_name("golden") / "format_v1"


def test_format_v1_checkpoint_restores_and_continues(tmp_path):
    shutil.copytree(GOLDEN, tmp_path / "ck")
    cs = CheckpointStore((tmp_path / "ck").as_uri(), "golden", "fp-golden-v1")
    head = cs.latest()
    assert FORMAT_VERSION == 1 and head.record["format_version"] == 1
    assert (head.version, head.generation, head.run_id) == (2, 1, "golden-run-2")
    assert (head.watermark_ms, head.processing_time_ms, head.max_event_time_ms) == (
        2000, 4000, 1800)
    assert head.stats == {"inputs": 2} and head.extra == {"publish_on_failure": False}
    assert open_store(head.uri("state")).read_bytes("part-00000.json") == b'{"total": 2}'
    assert [c.run_id for c in cs.committed()] == ["golden-run-1", "golden-run-2"]
    manifest = cs.manifest()
    assert [(e.size, e.partition, e.version) for e in manifest] == [
        (100, "2013-01-01T00", 1), (101, "2013-01-01T01", 2)]
    again = FileEntry("file:///data/in/arrival_hour=2013-01-01T01/part-0.parquet", 101,
                      mtime_ms=1700000000001)
    assert manifest.consumed([again]) == []
    nxt = cs.commit(cs.begin("run-3"), RunRecord(watermark_ms=3000))
    assert nxt.version == 3 and cs.latest().record["parent_version"] == 2
