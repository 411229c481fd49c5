"""Rebuilds (SPEC §8, §9): ``wl.run_incremental(..., rebuild=True)`` starts a new state
generation from scratch and publishes it — atomically replacing what readers see — only when
its run is complete and validated; and every error that asks for a rebuild suggests a command
that works: each test below runs the suggestion exactly as it was printed.

The API tests use a small pipeline on hourly partitions; the suggestion tests drive the
registered ``clickstream_demo`` job on synthetic data through the CLI and
``jobs/run_pipeline.py``, changing its definition by patching the registry lookup.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import shlex

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import windowlib as wl
from jobs import run_pipeline
from windowlib import aggregates as agg
from windowlib import cli
from windowlib.runs import operations as ops
from windowlib.runs.incremental import open_checkpoint
from windowlib.runs.protocol import RunStatus

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
SCHEMA = pa.schema([("key", pa.string()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("value", pa.int64())])
WM = wl.BoundedOutOfOrderness("5 minutes")


def pipeline(lateness_minutes: int = 30) -> wl.Pipeline:
    return (wl.Pipeline("rebuilt", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(20)))
            .allowed_lateness(wl.Time.minutes(lateness_minutes))
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def hour(h: int) -> str:
    return (T0 + dt.timedelta(hours=h)).strftime("%Y-%m-%dT%H")


def land(root, h: int, name: str = "part-0") -> None:
    folder = root / "events" / f"arrival_hour={hour(h)}"
    folder.mkdir(parents=True, exist_ok=True)
    start = T0 + dt.timedelta(hours=h)
    rows = [{"key": k, "ts": start + dt.timedelta(minutes=m), "value": v}
            for k, m, v in (("a", 1, 1), ("b", 7, 2), ("a", 25, 3), ("b", 41, 4), ("a", -15, 5))]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / f"{name}.parquet")


@pytest.fixture
def lake(tmp_path):
    for h in range(3):
        land(tmp_path, h)
    return tmp_path


def where(lake, tag: str = "main") -> dict:
    return {"source": wl.PartitionedSource(f"file://{lake}/events", partition="arrival_hour"),
            "checkpoint": f"file://{lake}/{tag}/checkpoints",
            "output": f"file://{lake}/{tag}/windows"}


def rows(spark, output: str) -> list[tuple]:
    return sorted(tuple(r) for r in wl.read_firings(output, spark=spark).drop("run_id").collect())


# --- the API ---------------------------------------------------------------------------------

def test_a_rebuild_publishes_a_new_generation_only_when_complete(spark, lake):
    loc = where(lake)
    first = wl.run_incremental(pipeline(), watermark=WM, spark=spark, **loc)
    assert first.status == RunStatus.PUBLISHED
    before = rows(spark, loc["output"])
    changed = pipeline(lateness_minutes=60)
    with pytest.raises(wl.StateError) as info:
        wl.run_incremental(changed, watermark=WM, spark=spark, **loc)
    assert info.value.code == "FINGERPRINT_MISMATCH"
    assert "run_incremental(..., rebuild=True)" in str(info.value)

    def fail(firings, summary):
        return {"success": False, "failed": ["the audit says no"]}

    blocked = wl.run_incremental(changed, watermark=WM, spark=spark, rebuild=True,
                                 validate=fail, **loc)
    assert blocked.status == RunStatus.REBUILD_BLOCKED and not blocked.published
    assert rows(spark, loc["output"]) == before           # readers keep the old generation
    rebuilt = wl.run_incremental(changed, watermark=WM, spark=spark, rebuild=True, **loc)
    assert rebuilt.status == RunStatus.REBUILD_PUBLISHED and rebuilt.published
    head = open_checkpoint(changed, loc["checkpoint"]).latest()
    assert (rebuilt.version, rebuilt.generation) == (head.version, head.generation)
    assert head.generation > 1 and head.fingerprint == changed.fingerprint
    fresh = where(lake, "fresh")
    wl.run_incremental(changed, watermark=WM, spark=spark, **fresh)
    assert rows(spark, loc["output"]) == rows(spark, fresh["output"])
    # the new generation continues incrementally
    assert wl.run_incremental(changed, watermark=WM, spark=spark, **loc).status == \
        RunStatus.NOTHING_NEW
    land(lake, 3)
    assert wl.run_incremental(changed, watermark=WM, spark=spark, **loc).status == \
        RunStatus.PUBLISHED


def test_a_rebuild_retried_with_its_run_id_is_a_no_op_and_a_dry_run_starts_nothing(spark, lake):
    loc = where(lake)
    wl.run_incremental(pipeline(), watermark=WM, spark=spark, **loc)
    changed = pipeline(lateness_minutes=45)
    dry = wl.run_incremental(changed, watermark=WM, spark=spark, rebuild=True, dry_run=True,
                             partitions=(hour(0), hour(1)), **loc)
    assert dry.status == RunStatus.DRY_RUN and dry.files_consumed == 2
    cs = open_checkpoint(changed, loc["checkpoint"])
    assert cs.generation_numbers() == []
    empty = wl.run_incremental(changed, watermark=WM, spark=spark, rebuild=True,
                               partitions=(hour(7), hour(8)), **loc)
    assert empty.status == RunStatus.REBUILD_NOTHING_NEW and cs.generation_numbers() == []
    done = wl.run_incremental(changed, watermark=WM, spark=spark, rebuild=True,
                              run_id="rebuild-1", **loc)
    again = wl.run_incremental(changed, watermark=WM, spark=spark, rebuild=True,
                               run_id="rebuild-1", **loc)
    assert again.status == RunStatus.ALREADY_PUBLISHED and again.version == done.version
    assert len(cs.generation_numbers()) == 1


# --- suggestions, run as printed ---------------------------------------------------------------

@pytest.fixture
def demo(tmp_path, monkeypatch):
    from jobs.synthetic import DATA_PATH, write_synthetic

    monkeypatch.delenv("WINDOWLIB_REGISTRY", raising=False)
    write_synthetic(tmp_path / DATA_PATH, hours=2, events_per_hour=40, keys=3)
    return tmp_path


def suggestion(stderr: str, program: str) -> list[str]:
    """The argv of the command the error output suggests (``rebuild with: <command>``)."""
    found = re.search(r"rebuild with: (.+)$", stderr, re.MULTILINE)
    assert found, stderr
    argv = shlex.split(found.group(1))
    assert argv[:len(program.split())] == program.split(), argv
    return argv[len(program.split()):]


def change_definition(monkeypatch) -> None:
    job = ops.get_job("clickstream_demo")
    changed = dataclasses.replace(job, pipeline=job.pipeline.allowed_lateness("45 minutes"))
    monkeypatch.setattr(ops, "get_job", lambda name: changed)


def test_the_cli_suggestion_after_a_definition_change_rebuilds(spark, demo, monkeypatch, capsys):
    run = ["run", "--pipeline", "clickstream_demo", "--root", demo.as_uri(), "--json"]
    assert cli.main(run) == 0
    change_definition(monkeypatch)
    capsys.readouterr()
    assert cli.main(run) == 2
    err = capsys.readouterr().err
    assert "[FINGERPRINT_MISMATCH]" in err
    assert cli.main([*suggestion(err, "windowlib"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "rebuild published"
    assert cli.main(run) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "nothing_new"


def test_the_run_pipeline_suggestion_after_a_definition_change_rebuilds(spark, demo,
                                                                        monkeypatch, capsys):
    argv = ["--pipeline", "clickstream_demo", "--root", demo.as_uri(), "--json"]
    assert run_pipeline.main(argv) == 0
    change_definition(monkeypatch)
    capsys.readouterr()
    assert run_pipeline.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("[FINGERPRINT_MISMATCH]")
    assert run_pipeline.main([*suggestion(err, "python jobs/run_pipeline.py"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "rebuild published"


def _truncate_commit(root) -> None:
    record, = root.glob("_windowlib/checkpoints/clickstream_demo/commits/00000001.json")
    record.write_text(record.read_text()[:40])


def _truncate_manifest(root) -> None:
    record, = root.glob("_windowlib/checkpoints/clickstream_demo/commits/00000001.json")
    ref = json.loads(record.read_text())["manifest"]
    key = ref.get("base") or ref["deltas"][-1]
    manifest = root / "_windowlib" / "checkpoints" / "clickstream_demo" / key
    manifest.write_bytes(manifest.read_bytes()[:10])


@pytest.mark.parametrize("damage", [_truncate_commit, _truncate_manifest],
                         ids=["commit_record", "manifest"])
def test_the_cli_suggestion_for_a_damaged_checkpoint_rebuilds(spark, demo, capsys, damage):
    root = demo.as_uri()
    run = ["run", "--pipeline", "clickstream_demo", "--root", root, "--json"]
    assert cli.main(run) == 0
    damage(demo)
    capsys.readouterr()
    assert cli.main(run) == 1
    err = capsys.readouterr().err
    assert "[CHECKPOINT_CORRUPT]" in err
    assert cli.main([*suggestion(err, "windowlib"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "rebuild published"
    assert cli.main(run) == 0                                       # runs go on
    assert cli.main(["status", "--pipeline", "clickstream_demo", "--root", root, "--json"]) == 0
    capsys.readouterr()
    _, output = ops.get_job("clickstream_demo").locations(root)
    assert wl.read_firings(output, spark=spark).count() > 0         # readers too
