"""Timestamps and durations.

Invariants: inside the engine every timestamp is an ``int`` of milliseconds since the epoch
(UTC) and every duration an ``int`` of milliseconds. ``MIN_TS``/``MAX_TS`` stand for -inf/+inf
(the watermark before any input, and after the end of input; a global window's max timestamp).
They never reach user code outside the timer domain of triggers: ``finite_ms`` turns them into
``None`` for the window functions' context, records and summaries.
"""

from __future__ import annotations

import datetime as _dt
import re

from windowlib.core.errors import DefinitionError, InputError

MIN_TS: int = -(2**63)
MAX_TS: int = 2**63 - 1
NOT_FINITE = (MIN_TS, MAX_TS)     # clock values with no finite value: -inf and +inf
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

# The event times windowlib accepts, [0002-01-01, 9999-01-01) UTC: a year inside the range a
# timestamp column can hold and every reader can turn into a datetime (Python's datetime spans
# years 1-9999, and PySpark converts through the local time zone: year-1 values fail to collect).
# The margin keeps what derives from an event time readable too: window bounds, watermarks and
# clocks, for windows and delays of up to a year. Outside it an element is a reject
# (``timestamp_out_of_range``).
EVENT_TIME_MIN_MS: int = -62_104_060_800_000
EVENT_TIME_END_MS: int = 253_370_764_800_000


def event_time_in_range(ts_ms: int) -> bool:
    """Whether an event time (ms) is in the accepted range (else: ``timestamp_out_of_range``)."""
    return EVENT_TIME_MIN_MS <= ts_ms < EVENT_TIME_END_MS


def finite_ms(t: int | None) -> int | None:
    """A clock value as user code and records see it: the ms, or ``None`` when it has no
    finite value (``MIN_TS``: not known yet; ``MAX_TS``: after the end of input)."""
    return None if t is None or t in NOT_FINITE else t


_UNIT_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1_000, "sec": 1_000, "secs": 1_000, "second": 1_000, "seconds": 1_000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hr": 3_600_000, "hrs": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
    "w": 604_800_000, "week": 604_800_000, "weeks": 604_800_000,
}
_PART = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")


class Time:
    """Flink's ``Time`` helper; every method returns an ``int`` of milliseconds."""

    @staticmethod
    def milliseconds(x: float) -> int:
        return _exact_ms(x, 1)

    @staticmethod
    def seconds(x: float) -> int:
        return _exact_ms(x, 1_000)

    @staticmethod
    def minutes(x: float) -> int:
        return _exact_ms(x, 60_000)

    @staticmethod
    def hours(x: float) -> int:
        return _exact_ms(x, 3_600_000)

    @staticmethod
    def days(x: float) -> int:
        return _exact_ms(x, 86_400_000)


def _exact_ms(x: float, unit_ms: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise DefinitionError(f"a duration amount must be a number, got {x!r}",
                              code="DURATION_INVALID")
    ms = x * unit_ms
    if ms != int(ms):
        raise DefinitionError(f"{x!r} x {unit_ms} ms is not a whole number of milliseconds",
                              code="DURATION_INVALID")
    return int(ms)


def duration_ms(value: object, *, what: str = "duration") -> int:
    """Parse a duration to integer milliseconds.

    Accepts ``int`` (ms), ``datetime.timedelta`` and ``pendulum.Duration`` (a timedelta
    subclass; fixed-length only), and strings such as ``"5 minutes"``, ``"1 hour"``, ``"90s"``,
    ``"1h 30m"``, ``"250 ms"``. Raises ``DefinitionError(DURATION_INVALID)`` otherwise.
    """
    if isinstance(value, bool):
        raise DefinitionError(f"{what}: expected a duration, got {value!r}",
                              code="DURATION_INVALID")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.timedelta):
        months = getattr(value, "months", 0) or getattr(value, "years", 0)
        if months:
            raise DefinitionError(
                f"{what}: {value!r} has calendar months/years, which have no fixed length; "
                "use CalendarWindows for calendar units", code="DURATION_INVALID")
        return (value.days * 86_400 + value.seconds) * 1_000 + value.microseconds // 1_000
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        pos, total = 0, 0
        for m in _PART.finditer(text):
            if m.start() != pos:
                break
            unit = _UNIT_MS.get(m.group(2).lower())
            if unit is None:
                break
            total += _exact_ms(float(m.group(1)), unit)
            pos = m.end()
        else:
            if pos == len(text) and pos > 0:
                return total
        raise DefinitionError(
            f"{what}: cannot parse {value!r}; use e.g. '5 minutes', '1 hour', '90s', "
            "an int of milliseconds or a timedelta", code="DURATION_INVALID")
    raise DefinitionError(
        f"{what}: expected int ms, timedelta, pendulum.Duration or a string like '5 minutes', "
        f"got {type(value).__name__}", code="DURATION_INVALID")


def timestamp_ms(value: object) -> int:
    """Convert an event time to integer ms since the epoch (UTC).

    Accepts ``int`` ms, ``datetime`` (naive means UTC; pendulum included), ``date`` (midnight
    UTC) and ISO-8601 strings. Raises ``InputError(TIMESTAMP_INVALID)`` for anything else;
    engines turn that into a reject record for the row.
    """
    if isinstance(value, bool):
        raise InputError(f"not a timestamp: {value!r}", code="TIMESTAMP_INVALID")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000 + delta.microseconds // 1_000
    if isinstance(value, _dt.date):
        return timestamp_ms(_dt.datetime(value.year, value.month, value.day))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return timestamp_ms(_dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
        except ValueError:
            pass
    raise InputError(f"not a timestamp: {value!r}", code="TIMESTAMP_INVALID")


def ms_to_datetime(ts_ms: int) -> _dt.datetime:
    """The UTC ``datetime`` of a millisecond timestamp (for display and Spark output)."""
    return _EPOCH + _dt.timedelta(milliseconds=ts_ms)


def format_ts(ts_ms: int | None) -> str:
    """Human-readable form of a timestamp, with -inf/+inf for the sentinels."""
    if ts_ms is None:
        return "none"
    if ts_ms <= MIN_TS:
        return "-inf"
    if ts_ms >= MAX_TS:
        return "+inf"
    return ms_to_datetime(ts_ms).isoformat().replace("+00:00", "Z")
