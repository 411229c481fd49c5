"""The commit protocol on every backend: visibility, conflicts, races, integrity, fingerprints."""

from __future__ import annotations

import json
import threading

import pytest

from windowlib.core.errors import DefinitionError, StateError
from windowlib.state import layout
from windowlib.state.checkpoint import CheckpointStore, RunRecord
from windowlib.state.stores import open_store

FP = "fp-" + "a" * 61


def _cs(root_uri, s3_settings, fp=FP, **kw) -> CheckpointStore:
    return CheckpointStore(root_uri, "demo", fp, settings=s3_settings, **kw)


def _stage(staging, s3_settings, name="state", payload=b"rows") -> None:
    open_store(staging.uri(name), s3_settings).write_bytes("part-00000.parquet", payload)


def _run(cs, s3_settings, run_id, wm, payload=b"rows"):
    st = cs.begin(run_id)
    _stage(st, s3_settings, "state", payload)
    _stage(st, s3_settings, "firings", payload)
    return cs.commit(st, RunRecord(watermark_ms=wm, stats={"inputs": 1}))


def test_new_pipeline_has_no_checkpoint_and_first_commit_is_version_1(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    assert cs.latest() is None and cs.history() == []
    commit = _run(cs, s3_settings, "run-1", 1000)
    assert commit.version == 1 and commit.generation == 1
    latest = cs.latest()
    assert latest.version == 1 and latest.watermark_ms == 1000 and latest.run_id == "run-1"
    assert latest.stats == {"inputs": 1} and latest.fingerprint == FP
    assert set(latest.prefixes) == {"firings", "state"}
    data = open_store(latest.uri("state"), s3_settings).read_bytes("part-00000.parquet")
    assert data == b"rows"


def test_staged_but_uncommitted_run_is_invisible(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    _run(cs, s3_settings, "run-1", 1000)
    st = cs.begin("run-2")
    _stage(st, s3_settings, payload=b"uncommitted")
    assert st.version == 2
    again = _cs(root_uri, s3_settings)
    assert again.latest().version == 1 and [c.version for c in again.history()] == [1]
    assert again.committed()[-1].run_id == "run-1"


def test_versions_advance_and_history_is_newest_first(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    for i in range(1, 4):
        _run(cs, s3_settings, f"run-{i}", i * 1000)
    assert [c.version for c in cs.history()] == [3, 2, 1]
    assert [c.version for c in cs.history(limit=2)] == [3, 2]
    assert cs.latest().record["parent_version"] == 2
    assert cs.find_run("run-2").version == 2 and cs.find_run("nope") is None


def test_losing_run_gets_conflict_and_its_staged_files_are_removed(root_uri, s3_settings):
    a, b = _cs(root_uri, s3_settings), _cs(root_uri, s3_settings)
    _run(a, s3_settings, "run-0", 0)
    st_a, st_b = a.begin("run-a"), b.begin("run-b")
    _stage(st_a, s3_settings, payload=b"a")
    _stage(st_b, s3_settings, payload=b"b")
    a.commit(st_a, RunRecord(watermark_ms=1))
    with pytest.raises(StateError) as err:
        b.commit(st_b, RunRecord(watermark_ms=2))
    assert err.value.code == "CHECKPOINT_CONFLICT"
    assert "run-a" in str(err.value) and "holds the pipeline" in str(err.value)
    assert list(a.pipeline_store.list(st_b.key + "/")) == []
    latest = b.latest()
    assert latest.run_id == "run-a" and latest.watermark_ms == 1
    assert open_store(latest.uri("state"), s3_settings).read_bytes("part-00000.parquet") == b"a"


@pytest.mark.atomic_put
def test_sixteen_concurrent_commits_exactly_one_wins(root_uri, s3_settings):
    stores = [_cs(root_uri, s3_settings) for _ in range(16)]
    _run(stores[0], s3_settings, "run-0", 0)
    stagings = [cs.begin(f"run-{i}") for i, cs in enumerate(stores)]
    barrier = threading.Barrier(16)
    outcome: dict[int, str] = {}

    def go(i: int) -> None:
        barrier.wait()
        try:
            stores[i].commit(stagings[i], RunRecord(watermark_ms=i))
            outcome[i] = "won"
        except StateError as exc:
            outcome[i] = exc.code

    threads = [threading.Thread(target=go, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, o in outcome.items() if o == "won"]
    assert len(winners) == 1
    assert sorted(o for o in outcome.values() if o != "won") == ["CHECKPOINT_CONFLICT"] * 15
    assert stores[0].latest().run_id == f"run-{winners[0]}"
    left = {i.key.split("/")[0] for i in stores[0].pipeline_store.list("v=")}
    assert left == {stores[0].history()[1].record["staging"], stagings[winners[0]].key}


def test_truncated_record_is_corrupt_and_nothing_is_overwritten(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    _run(cs, s3_settings, "run-1", 1)
    _run(cs, s3_settings, "run-2", 2)
    key = layout.commit_key(2)
    good = cs.pipeline_store.read_bytes(key)
    cs.pipeline_store.write_bytes(key, good[: len(good) // 2])
    for call in (cs.latest, lambda: cs.begin("run-3")):
        with pytest.raises(StateError) as err:
            call()
        assert err.value.code == "CHECKPOINT_CORRUPT" and "--rebuild" in str(err.value)
    assert cs.pipeline_store.read_bytes(key) == good[: len(good) // 2]
    assert not cs.pipeline_store.exists(layout.commit_key(3))


def test_edited_record_fails_its_checksum(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    _run(cs, s3_settings, "run-1", 1000)
    key = layout.commit_key(1)
    text = cs.pipeline_store.read_bytes(key).decode()
    cs.pipeline_store.write_bytes(key, text.replace('"watermark_ms": 1000', '"watermark_ms": 9')
                                  .encode())
    with pytest.raises(StateError) as err:
        cs.latest()
    assert err.value.code == "CHECKPOINT_CORRUPT" and "checksum" in str(err.value)


def test_unknown_format_version_is_unsupported(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    _run(cs, s3_settings, "run-1", 1)
    body = dict(cs.latest().record)
    assert "checksum" not in body
    body.update(format_version=99, version=2)
    cs.pipeline_store.create_exclusive(layout.commit_key(2), layout.encode_record(body))
    with pytest.raises(StateError) as err:
        cs.latest()
    assert err.value.code == "CHECKPOINT_FORMAT_UNSUPPORTED" and "99" in str(err.value)


def test_changed_definition_is_fingerprint_mismatch_with_rebuild_hint(root_uri, s3_settings):
    _run(_cs(root_uri, s3_settings), s3_settings, "run-1", 1)
    changed = _cs(root_uri, s3_settings, fp="fp-changed")
    for call in (changed.latest, lambda: changed.begin("run-2")):
        with pytest.raises(StateError) as err:
            call()
        assert err.value.code == "FINGERPRINT_MISMATCH"
        assert "`windowlib backfill --pipeline demo --rebuild`" in str(err.value)
        assert "run_incremental(..., rebuild=True)" in str(err.value)
    assert [c.version for c in changed.history()] == [1]
    assert list(changed.pipeline_store.list("v=00000002")) == []


def test_an_earlier_fingerprint_of_the_definition_is_accepted_and_the_next_commit_replaces_it(
        root_uri, s3_settings):
    """Earlier windowlib versions fingerprinted custom functions differently: their checkpoints
    stay readable (``Pipeline.earlier_fingerprints``); a run then records the current one."""
    _run(_cs(root_uri, s3_settings, fp="fp-earlier"), s3_settings, "run-1", 1)
    upgraded = _cs(root_uri, s3_settings, earlier_fingerprints=("fp-earlier",))
    assert upgraded.latest().fingerprint == "fp-earlier"
    _run(upgraded, s3_settings, "run-2", 2)
    assert upgraded.latest().fingerprint == FP
    with pytest.raises(StateError) as err:
        _cs(root_uri, s3_settings, fp="fp-earlier").latest()
    assert err.value.code == "FINGERPRINT_MISMATCH"


def test_names_are_validated(root_uri, s3_settings):
    for bad in ["Demo", "../x", "a/b", "", "a-b"]:
        with pytest.raises(DefinitionError) as err:
            CheckpointStore(root_uri, bad, FP, settings=s3_settings)
        assert err.value.code == "NAME_INVALID"
    st = _cs(root_uri, s3_settings).begin("run-1")
    for bad in ["../state", "State", "a/b", ""]:
        with pytest.raises(DefinitionError) as err:
            st.uri(bad)
        assert err.value.code == "NAME_INVALID"


def test_latest_hint_is_only_a_lower_bound(root_uri, s3_settings):
    cs = _cs(root_uri, s3_settings)
    _run(cs, s3_settings, "run-1", 1)
    _run(cs, s3_settings, "run-2", 2)
    cs.pipeline_store.write_bytes(layout.LATEST_HINT, b'{"version": 1}')
    assert cs.latest().version == 2
    cs.pipeline_store.write_bytes(layout.LATEST_HINT, b"garbage")
    assert cs.latest().version == 2


def test_a_run_record_survives_its_pending_json_round_trip():
    """A run staged by one process is published by another (Airflow tasks): the record that
    crosses over in ``pending.json`` is the record that was staged, ``ephemeral`` included."""
    from windowlib.state.manifest import FileEntry

    record = RunRecord(watermark_ms=5, processing_time_ms=None, max_event_time_ms=7,
                       stats={"inputs": 3}, extra={"k": [1]},
                       consumed=[FileEntry("p/a.parquet", 10, etag="e", partition="p",
                                           version=2)],
                       prefixes=["firings", "state"], ephemeral=["state", "firings"])
    text = json.dumps(record.to_dict())
    back = RunRecord.from_dict(json.loads(text))
    assert back == RunRecord(5, None, 7, {"inputs": 3}, {"k": [1]},
                             [FileEntry("p/a.parquet", 10, "e", None, "p", 2)],
                             ["firings", "state"], ["state", "firings"])
