"""Window assigner boundaries (SPEC §2, §5): alignment, exclusivity of ends, merging, errors."""

from __future__ import annotations

import datetime as dt
import json
import pickle

import pytest

from windowlib.core.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    is_processing_time,
)
from windowlib.core.errors import DefinitionError, ExecutionError
from windowlib.core.time import Time
from windowlib.core.windows import GLOBAL_WINDOW, TimeWindow

pytestmark = pytest.mark.unit

HOUR = 3_600_000
DAY = 24 * HOUR
MIN = 60_000


def assign(assigner: WindowAssigner, ts_ms: int, processing_time_ms: int = 0, element=None):
    return assigner.assign_windows(element or {}, ts_ms, processing_time_ms)


# --- tumbling -------------------------------------------------------------------------------

def test_tumbling_negative_timestamp_aligns_to_floor():
    assert assign(TumblingEventTimeWindows.of(5000), -1) == [TimeWindow(-5000, 0)]
    assert assign(TumblingEventTimeWindows.of(5000), -5000) == [TimeWindow(-5000, 0)]
    assert assign(TumblingEventTimeWindows.of(5000), -5001) == [TimeWindow(-10000, -5000)]


def test_tumbling_window_end_is_exclusive_ts_at_end_opens_next_window():
    tumbling = TumblingEventTimeWindows.of("5 seconds")
    assert assign(tumbling, 4999) == [TimeWindow(0, 5000)]
    assert assign(tumbling, 5000) == [TimeWindow(5000, 10000)]
    assert assign(tumbling, 0) == [TimeWindow(0, 5000)]


def test_tumbling_positive_offset_shifts_boundaries_forward():
    # size 10 s, offset 3 s: windows [..., 3000) [3000, 13000) ...
    tumbling = TumblingEventTimeWindows.of(10_000, 3_000)
    assert assign(tumbling, 2_999) == [TimeWindow(-7_000, 3_000)]
    assert assign(tumbling, 3_000) == [TimeWindow(3_000, 13_000)]


def test_tumbling_offset_minus_8h_daily_windows_start_at_16_utc():
    # Flink's doc example: days in China time (UTC+8) are [16:00 UTC, 16:00 UTC next day).
    days = TumblingEventTimeWindows.of(Time.days(1), Time.hours(-8))
    # 2024-03-01T15:59:59.999Z is still 2024-02-29 in China; 16:00Z is 2024-03-01 00:00 local.
    feb29_16 = 1_709_222_400_000  # 2024-02-29T16:00:00Z
    assert assign(days, feb29_16 + DAY - 1) == [TimeWindow(feb29_16, feb29_16 + DAY)]
    assert assign(days, feb29_16 + DAY) == [TimeWindow(feb29_16 + DAY, feb29_16 + 2 * DAY)]
    # epoch with -8h: 1970-01-01T00:00Z is 08:00 China time on 1970-01-01, which began at
    # 1969-12-31T16:00Z = -8 h.
    assert assign(days, 0) == [TimeWindow(-8 * HOUR, 16 * HOUR)]
    assert assign(days, -8 * HOUR - 1) == [TimeWindow(-32 * HOUR, -8 * HOUR)]


def test_tumbling_accepts_every_duration_form_for_size_and_offset():
    expected = TumblingEventTimeWindows.of(300_000, 60_000)
    for size, offset in [("5 minutes", "1 min"), (dt.timedelta(minutes=5), dt.timedelta(minutes=1)),
                         (Time.minutes(5), "60s")]:
        assert TumblingEventTimeWindows.of(size, offset) == expected


def test_tumbling_processing_time_uses_processing_time_not_event_time():
    tumbling = TumblingProcessingTimeWindows.of(1_000)
    assert assign(tumbling, ts_ms=123, processing_time_ms=5_500) == [TimeWindow(5_000, 6_000)]
    assert is_processing_time(tumbling)
    assert not is_processing_time(TumblingEventTimeWindows.of(1_000))


@pytest.mark.parametrize("size", [0, -1, "0 s", dt.timedelta(0)])
def test_tumbling_size_not_positive_is_rejected(size):
    with pytest.raises(DefinitionError) as err:
        TumblingEventTimeWindows.of(size)
    assert err.value.code == "SIZE_NOT_POSITIVE"


@pytest.mark.parametrize("offset", [5_000, -5_000, 7_000])
def test_tumbling_offset_abs_equal_or_above_size_is_rejected(offset):
    with pytest.raises(DefinitionError) as err:
        TumblingProcessingTimeWindows.of(5_000, offset)
    assert err.value.code == "OFFSET_INVALID"


def test_unparseable_duration_keeps_duration_invalid_code():
    with pytest.raises(DefinitionError) as err:
        TumblingEventTimeWindows.of("five minutes")
    assert err.value.code == "DURATION_INVALID"


# --- sliding --------------------------------------------------------------------------------

def test_sliding_10min_by_5min_gives_two_windows_ascending():
    sliding = SlidingEventTimeWindows.of("10 minutes", "5 minutes")
    ts = 7 * MIN
    assert assign(sliding, ts) == [TimeWindow(0, 10 * MIN), TimeWindow(5 * MIN, 15 * MIN)]


def test_sliding_ts_at_slide_boundary_leaves_the_older_window():
    sliding = SlidingEventTimeWindows.of(10 * MIN, 5 * MIN)
    assert assign(sliding, 10 * MIN - 1) == [TimeWindow(0, 10 * MIN),
                                              TimeWindow(5 * MIN, 15 * MIN)]
    assert assign(sliding, 10 * MIN) == [TimeWindow(5 * MIN, 15 * MIN),
                                          TimeWindow(10 * MIN, 20 * MIN)]


def test_sliding_size_not_multiple_of_slide_gives_every_containing_window():
    # size 10, slide 4: starts ..., -8, -4, 0, 4, 8 ...; ts=9 lies in [0,10), [4,14), [8,18).
    sliding = SlidingEventTimeWindows.of(10, 4)
    assert assign(sliding, 9) == [TimeWindow(0, 10), TimeWindow(4, 14), TimeWindow(8, 18)]
    # ts=11 lies in [4,14) and [8,18) only.
    assert assign(sliding, 11) == [TimeWindow(4, 14), TimeWindow(8, 18)]


def test_sliding_negative_timestamp_and_offset():
    # size 6, slide 3, offset 1: starts ≡ 1 (mod 3): ..., -5, -2, 1 ...; ts=-1 is in [-5,1)
    # and [-2,4).
    sliding = SlidingEventTimeWindows.of(6, 3, 1)
    assert assign(sliding, -1) == [TimeWindow(-5, 1), TimeWindow(-2, 4)]
    sliding_neg = SlidingEventTimeWindows.of(6, 3, -1)  # starts ..., -4, -1, 2 ...
    assert assign(sliding_neg, -1) == [TimeWindow(-4, 2), TimeWindow(-1, 5)]


def test_sliding_slide_equal_to_size_is_tumbling():
    assert assign(SlidingEventTimeWindows.of(5_000, 5_000), -1) == [TimeWindow(-5_000, 0)]


def test_sliding_processing_time_uses_processing_time():
    sliding = SlidingProcessingTimeWindows.of(10, 5)
    assert assign(sliding, ts_ms=-100, processing_time_ms=12) == [TimeWindow(5, 15),
                                                                  TimeWindow(10, 20)]


@pytest.mark.parametrize(("size", "slide", "offset", "code"), [
    (0, 1, 0, "SIZE_NOT_POSITIVE"),
    (10, 0, 0, "SLIDE_INVALID"),
    (10, -5, 0, "SLIDE_INVALID"),
    (10, 11, 0, "SLIDE_INVALID"),
    (10, 5, 5, "OFFSET_INVALID"),
    (10, 5, -5, "OFFSET_INVALID"),
])
def test_sliding_invalid_size_slide_offset_codes(size, slide, offset, code):
    with pytest.raises(DefinitionError) as err:
        SlidingEventTimeWindows.of(size, slide, offset)
    assert err.value.code == code


# --- sessions -------------------------------------------------------------------------------

def test_session_element_opens_ts_to_ts_plus_gap():
    sessions = EventTimeSessionWindows.with_gap("10 s")
    assert assign(sessions, -3) == [TimeWindow(-3, 9_997)]
    assert sessions.is_merging and sessions.size_ms is None


def test_session_merge_touching_windows_merge():
    sessions = EventTimeSessionWindows.with_gap(10)
    a, b = TimeWindow(0, 10), TimeWindow(10, 20)
    assert sessions.merge_windows([b, a]) == [(TimeWindow(0, 20), [a, b])]


def test_session_merge_one_ms_apart_does_not_merge():
    sessions = EventTimeSessionWindows.with_gap(10)
    assert sessions.merge_windows([TimeWindow(0, 10), TimeWindow(11, 21)]) == []


def test_session_merge_transitive_chain_becomes_one_group():
    # [0,10) and [25,35) do not intersect, but [8,27) bridges them.
    sessions = EventTimeSessionWindows.with_gap(10)
    a, bridge, c = TimeWindow(0, 10), TimeWindow(8, 27), TimeWindow(25, 35)
    assert sessions.merge_windows([c, a, bridge]) == [(TimeWindow(0, 35), [a, bridge, c])]


def test_session_merge_returns_only_groups_with_two_or_more_members():
    sessions = ProcessingTimeSessionWindows.with_gap(10)
    lone, a, b, c, d = (TimeWindow(100, 110), TimeWindow(0, 10), TimeWindow(5, 15),
                        TimeWindow(200, 210), TimeWindow(209, 219))
    windows = [lone, d, a, c, b]
    merged = sessions.merge_windows(windows)
    assert merged == [(TimeWindow(0, 15), [a, b]), (TimeWindow(200, 219), [c, d])]
    assert windows == [lone, d, a, c, b]  # caller's list untouched


def test_session_window_contained_in_another_merges_into_the_outer_one():
    sessions = EventTimeSessionWindows.with_gap(10)
    outer, inner = TimeWindow(0, 100), TimeWindow(20, 30)
    assert sessions.merge_windows([inner, outer]) == [(TimeWindow(0, 100), [outer, inner])]


def test_non_merging_assigner_merge_windows_raises_not_implemented():
    with pytest.raises(NotImplementedError):
        TumblingEventTimeWindows.of(10).merge_windows([TimeWindow(0, 10)])


def test_session_dynamic_gap_is_evaluated_per_element():
    sessions = EventTimeSessionWindows.with_dynamic_gap(lambda e: e["gap"])
    assert assign(sessions, 100, element={"gap": 5}) == [TimeWindow(100, 105)]
    assert assign(sessions, 100, element={"gap": "1 s"}) == [TimeWindow(100, 1_100)]
    assert assign(sessions, 0, element={"gap": dt.timedelta(minutes=1)}) == [TimeWindow(0, MIN)]


def test_processing_time_session_dynamic_gap_uses_processing_time():
    sessions = ProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 7)
    assert assign(sessions, ts_ms=-50, processing_time_ms=1_000) == [TimeWindow(1_000, 1_007)]


@pytest.mark.parametrize("gap", [0, -1])
def test_session_dynamic_gap_not_positive_is_a_failed_user_function_naming_timestamp(gap):
    # GAP_NOT_POSITIVE is the definition's (a static gap); a dynamic gap is the function's
    sessions = EventTimeSessionWindows.with_dynamic_gap(lambda e: gap)
    with pytest.raises(ExecutionError) as err:
        assign(sessions, 86_400_000)
    assert err.value.code == "FUNCTION_FAILED"
    assert "86400000" in str(err.value)
    assert "1970-01-02" in str(err.value)


@pytest.mark.parametrize("gap", [0, -10, "0 minutes"])
def test_session_static_gap_not_positive_is_rejected(gap):
    for cls in (EventTimeSessionWindows, ProcessingTimeSessionWindows):
        with pytest.raises(DefinitionError) as err:
            cls.with_gap(gap)
        assert err.value.code == "GAP_NOT_POSITIVE"


def test_session_dynamic_gap_must_be_callable():
    with pytest.raises(DefinitionError) as err:
        EventTimeSessionWindows.with_dynamic_gap(10)
    assert err.value.code == "ARGUMENT_INVALID"


# --- global ---------------------------------------------------------------------------------

def test_global_windows_assign_the_single_global_window_for_any_time():
    g = GlobalWindows.create()
    assert assign(g, -10**12) == [GLOBAL_WINDOW]
    assert assign(g, 10**12) == [GLOBAL_WINDOW]
    assert g.is_event_time and not g.is_merging and g.size_ms is None
    assert not is_processing_time(g)


# --- configuration facts --------------------------------------------------------------------

def _gap_of(element: dict) -> int:
    return element["gap"]


ALL_ASSIGNERS = [
    TumblingEventTimeWindows.of("5 minutes"),
    TumblingProcessingTimeWindows.of("1 day", "-8 hours"),
    SlidingEventTimeWindows.of("10 minutes", "5 minutes"),
    SlidingProcessingTimeWindows.of(10, 5, 1),
    EventTimeSessionWindows.with_gap("30 s"),
    EventTimeSessionWindows.with_dynamic_gap(_gap_of),
    ProcessingTimeSessionWindows.with_gap(10),
    GlobalWindows.create(),
]


def test_describe_is_json_serialisable_and_stable():
    for assigner in ALL_ASSIGNERS:
        text = json.dumps(assigner.describe(), sort_keys=True)
        assert json.loads(text)["type"] == type(assigner).__name__
        assert text == json.dumps(type(assigner).describe(assigner), sort_keys=True)
    assert TumblingEventTimeWindows.of("5 minutes").describe() == {
        "type": "TumblingEventTimeWindows", "size_ms": 300_000, "offset_ms": 0}
    assert SlidingEventTimeWindows.of("10 min", "5 min", "1 min").describe() == {
        "type": "SlidingEventTimeWindows", "size_ms": 600_000, "slide_ms": 300_000,
        "offset_ms": 60_000}
    assert EventTimeSessionWindows.with_gap("30 s").describe() == {
        "type": "EventTimeSessionWindows", "gap_ms": 30_000, "gap_fn": None}


def test_describe_equal_configs_written_differently_are_identical():
    a = TumblingEventTimeWindows.of(dt.timedelta(hours=1), 0)
    b = TumblingEventTimeWindows.of("1 hour", "0 ms")
    assert a.describe() == b.describe() and a == b and hash(a) == hash(b)


def test_describe_dynamic_gap_names_module_and_qualname():
    described = EventTimeSessionWindows.with_dynamic_gap(_gap_of).describe()
    assert described["gap_ms"] is None
    assert described["gap_fn"]["callable"] == f"{__name__}._gap_of"


def test_assigners_are_frozen_and_picklable():
    for assigner in ALL_ASSIGNERS:
        with pytest.raises(AttributeError):
            assigner.size_ms = 1  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(assigner)) == assigner


def test_assigner_class_flags_event_time_and_merging():
    flags = {type(a).__name__: (a.is_event_time, a.is_merging) for a in ALL_ASSIGNERS}
    assert flags == {
        "TumblingEventTimeWindows": (True, False),
        "TumblingProcessingTimeWindows": (False, False),
        "SlidingEventTimeWindows": (True, False),
        "SlidingProcessingTimeWindows": (False, False),
        "EventTimeSessionWindows": (True, True),
        "ProcessingTimeSessionWindows": (False, True),
        "GlobalWindows": (True, False),
    }
    assert TumblingEventTimeWindows.of(7).size_ms == 7
    assert SlidingEventTimeWindows.of(10, 5).size_ms == 10


def test_default_triggers_follow_time_domain_and_global_never_fires():
    triggers = pytest.importorskip("windowlib.core.triggers")
    expected = {
        "TumblingEventTimeWindows": triggers.EventTimeTrigger,
        "TumblingProcessingTimeWindows": triggers.ProcessingTimeTrigger,
        "SlidingEventTimeWindows": triggers.EventTimeTrigger,
        "SlidingProcessingTimeWindows": triggers.ProcessingTimeTrigger,
        "EventTimeSessionWindows": triggers.EventTimeTrigger,
        "ProcessingTimeSessionWindows": triggers.ProcessingTimeTrigger,
        "GlobalWindows": triggers.NeverTrigger,
    }
    for assigner in ALL_ASSIGNERS:
        assert type(assigner.default_trigger()) is expected[type(assigner).__name__]
