"""Calendar windows (SPEC §2): days, ISO weeks, months and years in an IANA time zone.

Invariants:

* A window is ``[first instant of the local unit, first instant of the next local unit)`` in UTC
  milliseconds. Across DST changes a day is 23 or 25 hours long (America/New_York: 2013-03-10
  and 2013-11-03) — something offset-based tumbling windows cannot express.
* "First instant of a local day" is exact even when local midnight is skipped or repeated:
  a repeated midnight starts the day at its first occurrence; a skipped one starts it at the
  DST transition (e.g. America/Sao_Paulo 2018-11-04 starts at 01:00 local).
* Weeks are ISO weeks (Monday to Monday). Timestamps before 1970 work like any other.
* The assigner is frozen configuration; a private cache of computed windows (not part of
  equality, not pickled) makes repeated lookups cheap (> 100k calls/s).
"""

from __future__ import annotations

import datetime as _dt
import functools
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import pendulum

from windowlib.core.assigners import WindowAssigner
from windowlib.core.errors import DefinitionError
from windowlib.core.windows import TimeWindow, Window

if TYPE_CHECKING:
    from windowlib.core.triggers import Trigger

__all__ = ["CALENDAR_UNITS", "CalendarWindows"]

CALENDAR_UNITS = ("day", "week", "month", "year")
_UNIT_ALIASES = {**{u: u for u in CALENDAR_UNITS}, **{u + "s": u for u in CALENDAR_UNITS}}
_CACHE_LIMIT = 4096
_EMPTY = TimeWindow(0, 0)


@functools.lru_cache(maxsize=256)
def _zone(tz: str) -> pendulum.Timezone:
    try:
        return pendulum.timezone(tz)
    except Exception as exc:  # pendulum raises InvalidTimezone; odd inputs raise others
        raise DefinitionError(f"unknown time zone {tz!r}; use an IANA name such as "
                              "'Europe/Berlin' or 'UTC'", code="TIMEZONE_INVALID") from exc


def _unit_bounds(unit: str, day: _dt.date) -> tuple[_dt.date, _dt.date]:
    """First local date of the unit containing ``day`` and of the next unit."""
    if unit == "day":
        return day, day + _dt.timedelta(days=1)
    if unit == "week":
        first = day - _dt.timedelta(days=day.weekday())
        return first, first + _dt.timedelta(days=7)
    if unit == "month":
        first = day.replace(day=1)
        if first.month == 12:
            return first, _dt.date(first.year + 1, 1, 1)
        return first, _dt.date(first.year, first.month + 1, 1)
    return _dt.date(day.year, 1, 1), _dt.date(day.year + 1, 1, 1)


def _local_date(ts_ms: int, zone: pendulum.Timezone) -> _dt.date:
    return pendulum.from_timestamp(ts_ms // 1000, tz=zone).date()


def _day_start_ms(day: _dt.date, zone: pendulum.Timezone) -> int:
    """UTC ms of the first instant whose local date is ``day``."""
    naive = _dt.datetime(day.year, day.month, day.day)
    early, late = sorted(int(naive.replace(tzinfo=zone, fold=f).timestamp()) for f in (0, 1))
    if _local_date(early * 1000, zone) >= day:
        return early * 1000  # normal, or midnight repeated: its first occurrence
    # Midnight skipped: the day starts at the transition, in (early, late]; local dates are
    # monotone across a single forward jump, so bisect on whole seconds (zone data is in s).
    lo, hi = early, late
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _local_date(mid * 1000, zone) >= day:
            hi = mid
        else:
            lo = mid
    return hi * 1000


def calendar_window(unit: str, tz: str, ts_ms: int) -> TimeWindow:
    """The calendar window of ``unit`` in ``tz`` containing ``ts_ms`` (uncached)."""
    zone = _zone(tz)
    first, nxt = _unit_bounds(unit, _local_date(ts_ms, zone))
    window = TimeWindow(_day_start_ms(first, zone), _day_start_ms(nxt, zone))
    if not window.start <= ts_ms < window.end:  # only if tz data has the date jump backwards
        raise AssertionError(f"calendar window {window} does not contain {ts_ms} ({tz})")
    return window


class _WindowCache:
    """Recently computed, disjoint windows sorted by start; the last hit is checked first.

    Updates replace whole lists (copy on write), so a concurrent reader never sees a torn
    state. Pickles as an empty cache.
    """

    __slots__ = ("last", "sorted")

    def __init__(self) -> None:
        self.last: TimeWindow = _EMPTY
        self.sorted: tuple[list[int], list[TimeWindow]] = ([], [])

    def __reduce__(self):
        return (_WindowCache, ())

    def __repr__(self) -> str:
        return "_WindowCache()"

    def find(self, ts_ms: int) -> TimeWindow | None:
        starts, windows = self.sorted
        i = bisect_right(starts, ts_ms) - 1
        if i >= 0 and ts_ms < windows[i].end:
            return windows[i]
        return None

    def add(self, window: TimeWindow) -> None:
        starts, windows = self.sorted
        if len(starts) >= _CACHE_LIMIT:
            starts, windows = [], []
        i = bisect_right(starts, window.start)
        self.sorted = ([*starts[:i], window.start, *starts[i:]],
                       [*windows[:i], window, *windows[i:]])


@dataclass(frozen=True)
class CalendarWindows(WindowAssigner):
    """Event-time windows of one calendar ``unit`` (day, week, month, year) in time zone ``tz``."""

    unit: str
    tz: str = "UTC"
    _cache: _WindowCache = field(default_factory=_WindowCache, init=False, repr=False,
                                 compare=False)

    is_event_time: ClassVar[bool] = True
    size_ms: ClassVar[None] = None

    def __post_init__(self) -> None:
        unit = _UNIT_ALIASES.get(self.unit.strip().lower()) if isinstance(self.unit, str) else None
        if unit is None:
            raise DefinitionError(f"calendar unit must be one of {', '.join(CALENDAR_UNITS)} "
                                  f"(or plural), got {self.unit!r}", code="CALENDAR_UNIT_INVALID")
        tz = self.tz if isinstance(self.tz, str) else getattr(self.tz, "name", None)
        if not isinstance(tz, str):
            raise DefinitionError(f"time zone must be an IANA name, got {self.tz!r}",
                                  code="TIMEZONE_INVALID")
        _zone(tz)
        object.__setattr__(self, "unit", unit)
        object.__setattr__(self, "tz", tz)

    @classmethod
    def of(cls, unit: str, tz: str = "UTC") -> CalendarWindows:
        return cls(unit, tz)

    def assign_windows(self, element: dict, ts_ms: int, processing_time_ms: int
                       ) -> list[Window]:
        cache = self._cache
        window = cache.last
        if window.start <= ts_ms < window.end:
            return [window]
        window = cache.find(ts_ms)
        if window is None:
            window = calendar_window(self.unit, self.tz, ts_ms)
            cache.add(window)
        cache.last = window
        return [window]

    def default_trigger(self) -> Trigger:
        from windowlib.core.triggers import EventTimeTrigger

        return EventTimeTrigger.create()

    def describe(self) -> dict:
        return {"type": "CalendarWindows", "unit": self.unit, "tz": self.tz}
