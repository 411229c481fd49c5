"""Writes golden checkpoints: ``v<format>_<case>.json`` and ``v<format>_<case>.expected.json``.

Run by hand (``python tests/golden/make_golden.py``) when the snapshot format version is bumped,
to add the new version's files. Existing files are never overwritten (``--force`` to do it
anyway, which loses the pinned format): a golden file pins the format it was written in, and
``tests/unit/test_golden_checkpoints.py`` restores every one of them forever (Flink's
``WindowOperatorMigrationTest`` idea).

Per case: a pipeline, the bundles run *before* the snapshot, and the bundles run *after*
restoring it (plus ``finalize``). The snapshot file is the engine's ``snapshot()`` after the
first bundles; the expected file holds the resume bundles and the firings, late records and
rejects of the resumed engine. The script checks that resuming equals an uninterrupted run.

This module is imported by the test under the name ``make_golden``; fingerprints contain
the module and source of the function classes below, so the script re-imports itself under
that name before writing. Do not edit the pipeline definitions once files exist for them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.reference import SNAPSHOT_FORMAT_VERSION, ReferenceEngine

HERE = Path(__file__).resolve().parent
RUNS = wl.ValueStateDescriptor("runs", default=0)
TOTALS = wl.ValueStateDescriptor("totals", default=(0, None))


@dataclasses.dataclass(frozen=True)
class GoldenPaneFn(wl.ProcessWindowFunction):
    """Counts firings per window (ValueState) and keeps (running total, last window end) per key
    (global ValueState holding a tuple, so the snapshot carries a tagged tuple)."""

    def process(self, key: Any, context: wl.Context, elements: list) -> Any:
        runs = context.window_state(RUNS)
        runs.update(runs.value() + 1)
        totals = context.global_state(TOTALS)
        total = totals.value()[0] + sum(e["value"] for e in elements)
        totals.update((total, context.window.end))
        yield {"idx": context.pane.index, "when": context.pane.timing.value,
               "runs": runs.value(), "n": len(elements), "key_total": total}


def tumbling_early() -> wl.Pipeline:
    """SPEC §9's pipeline in milliseconds: early panes per 2 elements, lateness 20."""
    return (wl.Pipeline("golden_tumbling", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(2)))
            .allowed_lateness(20)
            .aggregate(agg.sum("value").alias("value"), agg.count()))


def sessions_retracting() -> wl.Pipeline:
    return (wl.Pipeline("golden_sessions", timestamp="ts").key_by("key")
            .window(wl.EventTimeSessionWindows.with_gap(10))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(2)))
            .accumulation("accumulating_and_retracting")
            .allowed_lateness(30)
            .aggregate(agg.count(), agg.sum("value").alias("total"),
                       agg.collect_list("value").alias("values")))


def global_count_evictor() -> wl.Pipeline:
    """``count_window(4, 2)``: GlobalWindows + CountTrigger.of(2) + CountEvictor.of(4)."""
    return (wl.Pipeline("golden_count", timestamp="ts").key_by("key")
            .count_window(4, 2)
            .aggregate(agg.collect_list("value").alias("values"), agg.sum("value")))


def process_state() -> wl.Pipeline:
    return (wl.Pipeline("golden_process", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10))
            .allowed_lateness(15)
            .process(GoldenPaneFn()))


def _b(rows: list[tuple], watermark: int | None = None, processing_time: int | None = None
       ) -> dict:
    return {"elements": [{"key": k, "ts": ts, "value": v} for k, ts, v in rows],
            "processing_time": processing_time, "watermark": watermark}


CASES: dict[str, dict[str, Any]] = {
    "tumbling_early": {
        "pipeline": tumbling_early,
        "before": [_b([("a", 1, 1), ("a", 4, 2), ("b", 12, 5)], watermark=0),
                   _b([("a", 7, 3), ("b", 15, 1)], watermark=9)],
        "after": [_b([("a", 3, 10), ("b", 19, 2), ("b", 25, 1)], watermark=19),
                  _b([("a", 2, 100)], watermark=40),
                  _b([("b", 21, 7)], watermark=45)],
        "finalize": True,
    },
    "sessions_retracting": {
        "pipeline": sessions_retracting,
        "before": [_b([("a", 0, 1), ("a", 5, 2), ("a", 30, 3)], watermark=0),
                   _b([("b", 100, 4)], watermark=14)],
        "after": [_b([("a", 20, 5)], watermark=14),
                  _b([], watermark=60),
                  _b([("a", 45, 6), ("a", 1, 7)], watermark=60)],
        "finalize": True,
    },
    "global_count_evictor": {
        "pipeline": global_count_evictor,
        "before": [_b([("a", 1, 1), ("a", 2, 2), ("a", 3, 3), ("b", 1, 10)])],
        "after": [_b([("a", 4, 4), ("b", 2, 20)]),
                  _b([("a", 5, 5), ("a", 6, 6), ("b", 3, 30), ("b", 4, 40)])],
        "finalize": False,
    },
    "process_state": {
        "pipeline": process_state,
        "before": [_b([("a", 1, 1), ("a", 12, 2), ("b", 3, 4)], watermark=10)],
        "after": [_b([("a", 5, 8)], watermark=10),
                  _b([("a", 15, 16), ("b", 8, 32)], watermark=30),
                  _b([("a", 9, 64)], watermark=30)],
        "finalize": True,
    },
}


def feed(engine: ReferenceEngine, bundles: list[dict]) -> ReferenceEngine:
    for b in bundles:
        engine.process_bundle(b["elements"], processing_time=b["processing_time"],
                              watermark=b["watermark"])
    return engine


def resume(pipeline: wl.Pipeline, snapshot: dict, expected: dict) -> dict:
    """Restore ``snapshot``, run the expected file's bundles; the outputs to compare."""
    engine = feed(ReferenceEngine(pipeline, snapshot=snapshot), expected["bundles"])
    if expected["finalize"]:
        engine.finish()
    return {"firings": engine.sink.firings,
            "late": [{"row": row, "watermark": met} for row, met in engine.sink.late],
            "rejects": engine.rejects}


def build(name: str) -> tuple[dict, dict]:
    case = CASES[name]
    pipeline = case["pipeline"]()
    first = feed(ReferenceEngine(pipeline), case["before"])
    snapshot = json.loads(json.dumps(first.snapshot()))
    expected = {"pipeline": name, "format_version": SNAPSHOT_FORMAT_VERSION,
                "fingerprint": pipeline.fingerprint, "bundles": case["after"],
                "finalize": case["finalize"]}
    expected.update(resume(case["pipeline"](), snapshot, expected))
    whole = feed(ReferenceEngine(case["pipeline"]()), case["before"] + case["after"])
    if case["finalize"]:
        whole.finish()
    if whole.sink.firings != first.sink.firings + expected["firings"]:
        raise SystemExit(f"{name}: resuming differs from an uninterrupted run")
    return snapshot, json.loads(json.dumps(expected))


def main(argv: list[str]) -> None:
    force = "--force" in argv
    for name in CASES:
        snapshot, expected = build(name)
        stem = f"v{SNAPSHOT_FORMAT_VERSION}_{name}"
        for path, data in ((HERE / f"{stem}.json", snapshot),
                           (HERE / f"{stem}.expected.json", expected)):
            if path.exists() and not force:
                print(f"kept    {path.name} (exists; --force overwrites)")
                continue
            path.write_text(json.dumps(data, indent=1) + "\n")
            print(f"wrote   {path.name}")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    import make_golden  # the same file under the name the test imports it by

    make_golden.main(sys.argv[1:])
