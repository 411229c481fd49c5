"""Garbage collection and retention, and rebuild generations, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from windowlib.core.errors import StateError
from windowlib.state.checkpoint import CheckpointStore, RunRecord
from windowlib.state.stores import open_store

FP = "fp-one"
LATER = datetime.now(UTC) + timedelta(days=2)


def _cs(root_uri, s3_settings, fp=FP, **kw) -> CheckpointStore:
    return CheckpointStore(root_uri, "demo", fp, settings=s3_settings, **kw)


def _run(cs, s3_settings, run_id, wm=0, commit=True):
    st = cs.begin(run_id)
    for name in ("state", "firings"):
        open_store(st.uri(name), s3_settings).write_bytes("part-0.parquet", run_id.encode())
    return cs.commit(st, RunRecord(watermark_ms=wm)) if commit else st


def _files(cs, prefix=""):
    return [i.key for i in cs.pipeline_store.list(prefix)]


def test_crashed_leftover_is_kept_within_grace_and_removed_after(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    _run(cs, s3_settings, "run-1")
    live = _run(cs, s3_settings, "run-2", commit=False)  # a run still in progress (or crashed)
    report = cs.gc(grace_seconds=3600)
    assert report.removed_stagings == [] and _files(cs, live.key + "/")
    report = cs.gc(grace_seconds=3600, now=LATER)
    assert report.removed_stagings == [live.key] and _files(cs, live.key + "/") == []
    assert cs.latest().version == 1
    assert open_store(cs.latest().uri("state"), s3_settings).read_bytes("part-0.parquet")


def test_leftover_whose_version_is_taken_is_removed_at_once(root_uri, s3_settings):
    a, b = _cs(root_uri, s3_settings), _cs(root_uri, s3_settings)
    st_b = _run(b, s3_settings, "loser", commit=False)  # begins version 1, then "crashes"
    _run(a, s3_settings, "winner")                     # takes version 1
    report = a.gc(grace_seconds=3600)
    assert report.removed_stagings == [st_b.key]
    assert {k.split("/")[0] for k in _files(a, "v=")} == {a.latest().record["staging"]}


def test_retention_drops_old_state_but_keeps_outputs_and_records(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings, retain_versions=2)
    commits = [_run(cs, s3_settings, f"run-{i}") for i in range(1, 6)]
    report = cs.gc()
    assert sorted(report.pruned) == sorted(c.record["prefixes"]["state"] for c in commits[:3])
    for c in commits:
        state = list(open_store(c.uri("state"), s3_settings).list())
        firings = list(open_store(c.uri("firings"), s3_settings).list())
        assert bool(state) == (c.version >= 4) and len(firings) == 1
    assert [c.version for c in cs.history()] == [5, 4, 3, 2, 1]
    assert cs.gc().pruned == []  # idempotent
    _run(cs, s3_settings, "run-6")
    assert cs.gc().pruned == [commits[3].record["prefixes"]["state"]]


def test_rebuild_generation_is_invisible_until_published(root_uri, s3_settings):
    old = _cs(root_uri, s3_settings, retain_versions=1)
    _run(old, s3_settings, "run-1", wm=10)
    new = _cs(root_uri, s3_settings, fp="fp-two", retain_versions=1)
    with pytest.raises(StateError):
        new.latest()
    line = new.start_generation("rebuild-1")
    assert line.latest() is None
    _run(line, s3_settings, "rebuild-a", wm=5)
    _run(line, s3_settings, "rebuild-b", wm=7)
    assert old.latest().run_id == "run-1"           # readers still see generation 1
    published = new.commit_generation(line, "rebuild-1")
    head = new.latest()
    assert head.version == 2 and head.generation == 2 and head.watermark_ms == 7
    assert head.fingerprint == "fp-two" and head.kind == "generation"
    assert [c.run_id for c in new.committed()] == ["rebuild-a", "rebuild-b"]
    assert open_store(head.uri("state"), s3_settings).read_bytes("part-0.parquet") == b"rebuild-b"
    nxt = _run(new, s3_settings, "run-3", wm=20)
    assert nxt.version == 3 and nxt.generation == 2 and nxt.record["parent_version"] == 2
    assert [c.run_id for c in new.committed()] == ["rebuild-a", "rebuild-b", "run-3"]
    with pytest.raises(StateError) as err:
        old.latest()
    assert err.value.code == "FINGERPRINT_MISMATCH"
    # Generation 1 is beyond retention now: its data goes; generation 2's outputs stay.
    new.gc()
    g1 = new.get(1)
    assert list(open_store(g1.uri("firings"), s3_settings).list()) == []
    for c in new.committed():
        assert list(open_store(c.uri("firings"), s3_settings).list())
    assert published.version == 2


def test_abandoned_unpublished_generation_is_collected_after_grace(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    _run(cs, s3_settings, "run-1")
    line = cs.start_generation("rebuild")
    _run(line, s3_settings, "rebuild-a")
    assert cs.gc().removed_generations == []
    assert cs.gc(now=LATER).removed_generations == [2]
    assert _files(cs, "generations/") == []
    assert cs.latest().run_id == "run-1"
