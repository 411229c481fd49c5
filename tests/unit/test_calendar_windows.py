"""Calendar window boundaries (SPEC §2): local days/weeks/months/years across DST changes.

Expected boundaries are written as UTC wall-clock instants read off the tz database by hand
(e.g. New York midnight is 05:00Z in winter, 04:00Z in summer).
"""

from __future__ import annotations

import datetime as dt
import json
import pickle

import pytest

from windowlib.core.calendar import CalendarWindows
from windowlib.core.errors import DefinitionError
from windowlib.core.windows import TimeWindow

pytestmark = pytest.mark.unit

HOUR = 3_600_000
DAY = 24 * HOUR


def utc_ms(*parts: int) -> int:
    """Epoch ms of a UTC wall-clock time given as (year, month, day[, hour[, minute]])."""
    delta = dt.datetime(*parts, tzinfo=dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000


def window_of(assigner: CalendarWindows, ts_ms: int) -> TimeWindow:
    (window,) = assigner.assign_windows({}, ts_ms, 0)
    return window


NY_DAYS = CalendarWindows.of("day", "America/New_York")


def test_calendar_new_york_spring_forward_day_is_23_hours():
    noon = utc_ms(2013, 3, 10, 16)  # 12:00 EDT
    window = window_of(NY_DAYS, noon)
    assert window == TimeWindow(utc_ms(2013, 3, 10, 5), utc_ms(2013, 3, 11, 4))
    assert window.end - window.start == 23 * HOUR


def test_calendar_new_york_fall_back_day_is_25_hours():
    window = window_of(NY_DAYS, utc_ms(2013, 11, 3, 6))  # 01:00 EST, after the repeated hour
    assert window == TimeWindow(utc_ms(2013, 11, 3, 4), utc_ms(2013, 11, 4, 5))
    assert window.end - window.start == 25 * HOUR
    # both passes through the repeated 01:00-02:00 hour belong to the same day
    assert window_of(NY_DAYS, utc_ms(2013, 11, 3, 5, 30)) == window


def test_calendar_ordinary_day_is_24_hours_and_adjacent_to_dst_day():
    before = window_of(NY_DAYS, utc_ms(2013, 3, 9, 17))
    assert before == TimeWindow(utc_ms(2013, 3, 9, 5), utc_ms(2013, 3, 10, 5))
    assert before.end == window_of(NY_DAYS, utc_ms(2013, 3, 10, 16)).start


def test_calendar_end_is_exclusive_local_midnight_belongs_to_next_day():
    midnight = utc_ms(2013, 3, 11, 4)  # 2013-03-11 00:00 EDT
    assert window_of(NY_DAYS, midnight - 1).end == midnight
    assert window_of(NY_DAYS, midnight).start == midnight


def test_calendar_month_window_spans_the_dst_change_743_hours():
    months = CalendarWindows.of("months", "America/New_York")
    window = window_of(months, utc_ms(2013, 3, 10, 16))
    assert window == TimeWindow(utc_ms(2013, 3, 1, 5), utc_ms(2013, 4, 1, 4))
    assert window.end - window.start == (31 * 24 - 1) * HOUR


def test_calendar_december_month_ends_at_next_january_first():
    months = CalendarWindows.of("month", "UTC")
    assert window_of(months, utc_ms(2023, 12, 31, 23)) == TimeWindow(utc_ms(2023, 12, 1),
                                                                     utc_ms(2024, 1, 1))


def test_calendar_iso_week_starts_monday():
    weeks = CalendarWindows.of("week", "America/New_York")
    # Sunday 2013-03-10 belongs to the week of Monday 2013-03-04.
    window = window_of(weeks, utc_ms(2013, 3, 10, 16))
    assert window == TimeWindow(utc_ms(2013, 3, 4, 5), utc_ms(2013, 3, 11, 4))
    assert window.end - window.start == 7 * DAY - HOUR
    # Monday 00:00 local opens the next week
    assert window_of(weeks, utc_ms(2013, 3, 11, 4)).start == utc_ms(2013, 3, 11, 4)


def test_calendar_year_in_berlin_starts_at_23_utc():
    years = CalendarWindows.of("YEARS", "Europe/Berlin")
    assert window_of(years, utc_ms(2020, 7, 1)) == TimeWindow(utc_ms(2019, 12, 31, 23),
                                                              utc_ms(2020, 12, 31, 23))


def test_calendar_negative_timestamp_minus_1ms_is_last_pre_1970_day():
    assert window_of(CalendarWindows.of("day"), -1) == TimeWindow(-DAY, 0)
    # in New York, -1 ms is 1969-12-31 18:59:59.999 EST
    assert window_of(NY_DAYS, -1) == TimeWindow(utc_ms(1969, 12, 31, 5), utc_ms(1970, 1, 1, 5))


def test_calendar_pre_1970_summer_day_uses_historical_dst():
    # 1969-07-20 in New York was EDT (UTC-4).
    window = window_of(NY_DAYS, utc_ms(1969, 7, 20, 20))
    assert window == TimeWindow(utc_ms(1969, 7, 20, 4), utc_ms(1969, 7, 21, 4))
    assert window.start < 0


def test_calendar_skipped_midnight_day_starts_at_transition():
    # Sao Paulo 2018-11-04: 00:00 (-03) jumped to 01:00 (-02) at 03:00Z.
    sao_paulo = CalendarWindows.of("day", "America/Sao_Paulo")
    window = window_of(sao_paulo, utc_ms(2018, 11, 4, 12))
    assert window == TimeWindow(utc_ms(2018, 11, 4, 3), utc_ms(2018, 11, 5, 2))
    assert window_of(sao_paulo, utc_ms(2018, 11, 4, 3) - 1).end == utc_ms(2018, 11, 4, 3)


def test_calendar_fall_back_across_midnight_keeps_repeated_hour_in_previous_day():
    # Sao Paulo 2019-02-17 00:00 (-02) fell back to 2019-02-16 23:00 (-03) at 02:00Z.
    sao_paulo = CalendarWindows.of("day", "America/Sao_Paulo")
    window = window_of(sao_paulo, utc_ms(2019, 2, 17, 2, 30))  # second 23:30 on the 16th
    assert window == TimeWindow(utc_ms(2019, 2, 16, 2), utc_ms(2019, 2, 17, 3))
    assert window.end - window.start == 25 * HOUR


def test_calendar_repeated_midnight_day_starts_at_first_occurrence():
    # Havana 2013-11-03 01:00 (-04) fell back to 00:00 (-05): midnight happened twice.
    havana = CalendarWindows.of("day", "America/Havana")
    window = window_of(havana, utc_ms(2013, 11, 3, 5, 30))  # second 00:30
    assert window == TimeWindow(utc_ms(2013, 11, 3, 4), utc_ms(2013, 11, 4, 5))
    assert window_of(havana, utc_ms(2013, 11, 3, 4)) == window  # first 00:00


def test_calendar_out_of_order_timestamps_get_their_own_windows():
    days = CalendarWindows.of("day", "Asia/Kolkata")  # UTC+5:30: days start at 18:30Z
    expected = {
        utc_ms(2024, 1, 1, 19): TimeWindow(utc_ms(2024, 1, 1, 18, 30), utc_ms(2024, 1, 2, 18, 30)),
        utc_ms(2024, 1, 1, 18): TimeWindow(utc_ms(2023, 12, 31, 18, 30),
                                           utc_ms(2024, 1, 1, 18, 30)),
        utc_ms(2024, 3, 5): TimeWindow(utc_ms(2024, 3, 4, 18, 30), utc_ms(2024, 3, 5, 18, 30)),
    }
    for _ in range(2):
        for ts, window in expected.items():
            assert window_of(days, ts) == window


def test_calendar_units_accept_plurals_and_case():
    assert CalendarWindows.of("Days", "UTC") == CalendarWindows.of("day")
    assert CalendarWindows.of(" weeks ").unit == "week"


@pytest.mark.parametrize("unit", ["hour", "fortnight", "", None, 1])
def test_calendar_unknown_unit_is_rejected(unit):
    with pytest.raises(DefinitionError) as err:
        CalendarWindows.of(unit, "UTC")
    assert err.value.code == "CALENDAR_UNIT_INVALID"


@pytest.mark.parametrize("tz", ["Mars/Olympus", "", "America/New York", None])
def test_calendar_unknown_time_zone_is_rejected(tz):
    with pytest.raises(DefinitionError) as err:
        CalendarWindows.of("day", tz)
    assert err.value.code == "TIMEZONE_INVALID"


def test_calendar_describe_is_json_serialisable_and_stable():
    assigner = CalendarWindows.of("Months", "Europe/Berlin")
    window_of(assigner, 0)  # a warm cache must not change the description
    assert json.dumps(assigner.describe()) == json.dumps(
        {"type": "CalendarWindows", "unit": "month", "tz": "Europe/Berlin"})
    assert assigner.is_event_time and not assigner.is_merging and assigner.size_ms is None


def test_calendar_is_frozen_picklable_and_equal_after_use():
    assigner = CalendarWindows.of("day", "America/New_York")
    fresh = CalendarWindows.of("day", "America/New_York")
    window_of(assigner, utc_ms(2013, 3, 10, 16))
    assert assigner == fresh and hash(assigner) == hash(fresh)
    with pytest.raises(AttributeError):
        assigner.unit = "week"  # type: ignore[misc]
    restored = pickle.loads(pickle.dumps(assigner))
    assert restored == assigner
    assert window_of(restored, utc_ms(2013, 11, 3, 6)).end == utc_ms(2013, 11, 4, 5)


def test_calendar_non_merging_raises_not_implemented():
    with pytest.raises(NotImplementedError):
        NY_DAYS.merge_windows([TimeWindow(0, 1)])


def test_calendar_default_trigger_is_event_time():
    triggers = pytest.importorskip("windowlib.core.triggers")
    assert type(NY_DAYS.default_trigger()) is triggers.EventTimeTrigger


def test_calendar_cache_returns_the_same_windows_as_uncached_computation():
    from windowlib.core.calendar import calendar_window

    assigner = CalendarWindows.of("day", "Europe/Berlin")
    base = utc_ms(2024, 3, 1)
    stamps = [base + (i * 7_919_000) % (40 * DAY) for i in range(2_000)]  # spans the DST change
    for ts in stamps:
        assert assigner.assign_windows({}, ts, 0) == [calendar_window("day", "Europe/Berlin", ts)]
