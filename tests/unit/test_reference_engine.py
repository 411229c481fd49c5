"""Reference engine behaviour outside the window semantics proper: rejects, conservation,
time handling, and clear errors."""

from __future__ import annotations

import datetime as dt

import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.reference import ReferenceEngine
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.unit


def tumbling(size=10, **kw) -> wl.Pipeline:
    return (wl.Pipeline("t", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(size)).aggregate(agg.count(), **kw))


def test_bad_rows_become_rejects_with_reasons_and_are_counted():
    p = tumbling()
    engine = ReferenceEngine(p)
    engine.process_bundle([
        {"key": "a", "ts": 1},
        {"key": "a", "ts": None},
        {"key": "a"},
        {"key": "a", "ts": "yesterday"},
        {"key": None, "ts": 2},
        {"ts": 3},
        "not a row",
        {"key": "a", "ts": 10**13},
    ], processing_time=1_000)
    reasons = [r["reason"] for r in engine.rejects]
    assert reasons == ["null_timestamp", "missing_timestamp", "invalid_timestamp",
                       "missing_key", "missing_key", "schema_mismatch", "future_timestamp"]
    s = engine.stats
    assert (s.inputs, s.processed, s.late, s.rejects) == (8, 1, 0, 7)


def test_future_guard_boundary_is_exactly_max_future_skew():
    p = tumbling().max_future_skew(100)
    engine = ReferenceEngine(p)
    engine.process_bundle([{"key": "a", "ts": 1_100}, {"key": "a", "ts": 1_101}],
                          processing_time=1_000)
    assert [r["ts"] for r in engine.rejects] == [1_101]


def test_future_guard_is_off_when_the_bundle_has_no_processing_time():
    engine = ReferenceEngine(tumbling())
    engine.process_bundle([{"key": "a", "ts": 10**13}])
    assert engine.rejects == []


def test_datetime_and_iso_timestamps_are_event_times_in_utc():
    p = tumbling(size=60_000)
    plus_one = dt.timezone(dt.timedelta(hours=1))
    rows = [{"key": "a", "ts": dt.datetime(1970, 1, 1, 0, 0, 30)},
            {"key": "a", "ts": "1970-01-01T00:00:45+00:00"},
            # 01:01 at UTC+1 is 00:01 UTC: the second minute
            {"key": "a", "ts": dt.datetime(1970, 1, 1, 1, 1, tzinfo=plus_one)}]
    firings = run_bundles(p, [Bundle(rows)], finalize=True)
    assert [(f["window_start"], f["count"]) for f in firings] == [(0, 2), (60_000, 1)]


def test_processing_time_windows_without_processing_time_is_a_clear_error():
    p = (wl.Pipeline("t", timestamp="ts").key_by("key")
         .window(wl.TumblingProcessingTimeWindows.of(10)).aggregate(agg.count()))
    with pytest.raises(wl.InputError) as info:
        run_bundles(p, [Bundle([{"key": "a", "ts": 1}])])
    assert info.value.code == "NO_PROCESSING_TIME"


def test_result_column_named_like_metadata_is_an_error_not_an_overwrite():
    class Bad(wl.ProcessWindowFunction):
        def process(self, key, context, elements):
            yield {"timing": "mine"}

    p = (wl.Pipeline("t", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(Bad()))
    with pytest.raises(wl.ExecutionError) as info:
        run_bundles(p, [Bundle([{"key": "a", "ts": 1}])], finalize=True)
    assert info.value.code == "RESULT_COLUMN_CONFLICT"


def test_unknown_engine_is_rejected_with_the_choices():
    with pytest.raises(wl.InputError, match="reference"):
        run_bundles(tumbling(), [], engine="flink")


def test_caller_rows_are_never_mutated():
    row = {"key": "a", "ts": 1, "v": 1}
    snapshot = dict(row)
    p = (wl.Pipeline("t", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10))
         .reduce(lambda a, b: a.update(v=a["v"] + b["v"]) or a))
    run_bundles(p, [Bundle([row, {"key": "a", "ts": 2, "v": 5}])], finalize=True)
    assert row == snapshot


def test_watermark_never_moves_backwards_with_explicit_bundle_watermarks():
    p = tumbling()
    firings, late = run_bundles(p, [
        Bundle([{"key": "a", "ts": 1}], watermark=100),
        Bundle([{"key": "a", "ts": 5}], watermark=0),   # ignored: the watermark stays at 100
    ], with_late=True)
    assert [f["count"] for f in firings] == [1]
    assert [r["ts"] for r in late] == [5]


def test_timer_loop_in_a_custom_trigger_is_stopped_with_a_clear_error(monkeypatch):
    monkeypatch.setattr("windowlib.core.driver._TIMER_LIMIT", 1_000)

    class Runaway(wl.Trigger):
        def on_element(self, element, timestamp, window, ctx):
            ctx.register_event_time_timer(0)
            return wl.TriggerResult.CONTINUE

        def on_event_time(self, time, window, ctx):
            ctx.register_event_time_timer(time + 1)
            return wl.TriggerResult.CONTINUE

    p = (wl.Pipeline("t", timestamp="ts").key_by("key")
         .window(wl.GlobalWindows.create()).trigger(Runaway()).aggregate(agg.count()))
    with pytest.raises(wl.ExecutionError) as info:
        run_bundles(p, [Bundle([{"key": "a", "ts": 1}], watermark=10**12)])
    assert info.value.code == "TIMER_LOOP"


def test_side_outputs_and_global_state_through_the_process_context():
    seen = wl.ValueStateDescriptor("seen", default=0)

    class Counting(wl.ProcessWindowFunction):
        def process(self, key, context, elements):
            total = context.global_state(seen).value() + len(elements)
            context.global_state(seen).update(total)
            context.output("audit", {"key": key, "total": total})
            yield {"n": len(elements), "running": total}

    p = (wl.Pipeline("t", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(Counting()))
    engine = ReferenceEngine(p)
    engine.process_bundle([{"key": "a", "ts": 1}, {"key": "a", "ts": 2}, {"key": "a", "ts": 11}])
    engine.finish()
    assert [(f["n"], f["running"]) for f in engine.sink.firings] == [(2, 2), (1, 3)]
    assert engine.sink.side_outputs["audit"] == [{"key": "a", "total": 2},
                                                 {"key": "a", "total": 3}]
