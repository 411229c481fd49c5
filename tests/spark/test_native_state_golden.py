"""Golden native window state (``tests/golden/native_windows_v1``, written by
``tests/golden/make_native_state.py``): a state frame of format version 1 must stay readable,
and a run continuing from it must fire exactly what the reference engine fires over the whole
history (LATE panes after restored ON_TIME panes, with retractions of the restored results;
an on-time window restored half-way; a key the state never saw)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import windowlib as wl
from windowlib.core.loop import RunClock
from windowlib.engines.spark.native_incremental import (
    NATIVE_STATE_FORMAT,
    run_native_incremental,
)
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))

import make_native_state as golden  # noqa: E402


def _reference(bundles) -> list:
    return run_bundles(golden.pipeline(), [
        Bundle([{"key": k, "ts": ts, "value": v} for k, ts, v in elements],
               processing_time=p) for _, p, elements in bundles],
        engine="reference", watermark=wl.BoundedOutOfOrderness(0))


def _comparable(f: dict) -> tuple:
    return (f["key"], f["window_start"], f["pane_index"], f["timing"], f.get("retract", False),
            f["total"], f["count"], f["peak"])


def test_format_v1_state_restores_and_continues_like_the_reference(spark):
    folder = GOLDEN / "native_windows_v1"
    assert NATIVE_STATE_FORMAT == 1, "add a golden folder for the new format version"
    state = spark.read.parquet(str(folder / "state.parquet"))
    assert {r["__wl_format_version"] for r in state.collect()} == {1}
    clock = RunClock.from_dict(json.loads((folder / "clock.json").read_text()))
    run = run_native_incremental(golden.pipeline(), golden.frame(spark, golden.RESUME),
                                 "arrival", watermark=wl.BoundedOutOfOrderness(0),
                                 order_by="seq",
                                 processing_time=golden.processing_times(golden.RESUME),
                                 state=state, clock=clock)
    from pyspark.sql import functions as F

    # the state columns named on the client are the state struct's fields, in order
    state_fields = run.windows.schema["__wl_state"].dataType.names
    assert run.state_columns == tuple(state_fields) and "__wl_last_timing" in state_fields

    rows = (run.outputs("golden").frame("firings")
            .withColumn("window_start", F.unix_millis("window_start")).collect())
    got = sorted((r["key"], r["window_start"], r["pane_index"], r["timing"], r["retract"],
                  r["total"], r["count"], r["peak"]) for r in rows)
    before = _reference(golden.FIRST)
    history = _reference(golden.FIRST + golden.RESUME)
    assert history[:len(before)] == before
    want = sorted(_comparable(f) for f in history[len(before):])
    assert got == want
    timings = {g[3] for g in got}
    assert {"LATE", "ON_TIME"} <= timings and any(g[4] for g in got)   # retractions too
