"""The one rule turning a partition value into a time interval (SPEC §1: a bundle's default
processing time is the END of its partition's interval).

Used by one-shot runs (``Pipeline.run(df, arrival=...)`` with a string arrival column) and by
incremental runs (``PartitionedSource``) alike, so both give a bundle the same times. A value's
precision sets the interval's length: ``2013-01`` a calendar month, ``2013-01-01`` a day,
``2013-01-01T05`` an hour, minutes a minute, seconds a second (fractions: an instant); a UTC
offset (``Z``, ``+02:00``, ``-0130``) is honoured, none means UTC. Percent-encoded values (as
Hive-style folder names hold them) are decoded first.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from windowlib.core.errors import InputError

_ISO = re.compile(r"^(?P<y>\d{4})-(?P<mo>\d{2})(?:-(?P<d>\d{2})"
                  r"(?:[T ](?P<h>\d{2})(?::(?P<mi>\d{2})"
                  r"(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?)?)?)?"
                  r"(?P<tz>Z|[+-]\d{2}(?::?\d{2})?)?$")
# partition names that say their values are times (a value that is not one is an error)
_TIME_NAMES = ("_hour", "_date", "_day", "_time", "_ts", "_month", "_minute")


def partition_interval(value: str, name: str | None = None
                       ) -> tuple[int, int] | tuple[None, None]:
    """``(start_ms, end_ms)`` of a partition value's time interval, or ``(None, None)`` when the
    value is not a time (integers, plain strings).

    A value that looks like a date (``YYYY-MM...``) must be a valid one, and so must the value
    of a partition whose name says it is a time (``arrival_hour``, ``*_date``...): otherwise
    ``InputError(PARTITION_VALUE_INVALID)``.
    """
    import pendulum

    text = unquote(value).strip()
    m = _ISO.match(text)
    if m is None:
        if re.match(r"^\d{4}-\d{2}", text) or (
                name is not None and name.lower().endswith(_TIME_NAMES)
                and not re.fullmatch(r"-?\d+", text)):
            raise InputError(f"partition value {name or 'value'}={value!r} is not a valid "
                             "ISO-8601 date/time (e.g. 2013-01-01T05)",
                             code="PARTITION_VALUE_INVALID")
        return None, None
    g = m.groupdict()
    tz = g["tz"] or "Z"
    offset_min = 0
    if tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
        if hours > 23 or minutes > 59:
            raise InputError(f"partition value {name or 'value'}={value!r} has an invalid UTC "
                             "offset", code="PARTITION_VALUE_INVALID")
        offset_min = sign * (hours * 60 + minutes)
    try:
        start = pendulum.datetime(int(g["y"]), int(g["mo"]), int(g["d"] or 1), int(g["h"] or 0),
                                  int(g["mi"] or 0), int(g["s"] or 0),
                                  int((g["f"] or "0").ljust(6, "0")[:6]), tz="UTC")
    except ValueError as exc:
        raise InputError(f"partition value {name or 'value'}={value!r} is not a valid date/time: "
                         f"{exc}", code="PARTITION_VALUE_INVALID") from None
    start = start.subtract(minutes=offset_min)
    if g["d"] is None:
        end = start.add(months=1)
    elif g["h"] is None:
        end = start.add(days=1)
    elif g["mi"] is None:
        end = start.add(hours=1)
    elif g["s"] is None:
        end = start.add(minutes=1)
    elif g["f"] is None:
        end = start.add(seconds=1)
    else:
        end = start
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000)


PRECISIONS = ("month", "day", "hour", "minute", "second", "instant")


def partition_precision(value: str) -> str | None:
    """The precision of a time partition value (one of ``PRECISIONS``: ``2013-01`` month,
    ``2013-01-01`` day, ``2013-01-01T05`` hour, ...), ``None`` when it is not a time."""
    m = _ISO.match(unquote(value).strip())
    if m is None:
        return None
    g = m.groupdict()
    for precision, group in zip(PRECISIONS[1:], ("d", "h", "mi", "s", "f")):
        if g[group] is None:
            return PRECISIONS[PRECISIONS.index(precision) - 1]
    return "instant"


def check_partition_range(first: Any, last: Any, name: str | None = None,
                          precision: str | None = None) -> None:
    """The one rule for a ``first..last`` range of partition values (either may be ``None``:
    open; a datetime is an instant). Time values must parse (``partition_interval``), a value
    must have ``precision`` when one is expected (the partitions' own: a day for hourly
    partitions would silently select one hour; ``InputError(PARTITION_PRECISION_MISMATCH)``)
    and ``first`` must not start after ``last`` (``InputError(PARTITION_RANGE_REVERSED)``;
    plain values compare as strings, integers as numbers)."""
    label = name or "partition"
    starts: list[int | None] = []
    for flag, value in (("first", first), ("last", last)):
        if value is None:
            continue
        if hasattr(value, "isoformat") and not isinstance(value, str):
            from windowlib.core.time import timestamp_ms

            starts.append(timestamp_ms(value))
            continue
        value = str(value)
        start, _ = partition_interval(value, name)
        got = partition_precision(value) if start is not None else None
        if precision is not None and got != precision:
            raise InputError(f"{flag} partition {label}={value!r} has precision "
                             f"{got or 'none (not a time)'}, but the partitions are per "
                             f"{precision}", code="PARTITION_PRECISION_MISMATCH")
        starts.append(start)
    if first is None or last is None:
        return
    a, b = str(first), str(last)
    if starts[0] is not None and starts[1] is not None:
        reversed_ = starts[0] > starts[1]
    elif re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b):
        reversed_ = int(a) > int(b)
    else:
        reversed_ = a > b
    if reversed_:
        raise InputError(f"partition range {label} {first!r}..{last!r} is reversed: the first "
                         "value is after the last", code="PARTITION_RANGE_REVERSED")
