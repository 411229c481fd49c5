"""Bundles on Spark: arrival order, per-bundle processing time and the watermark sequence.

A DataFrame's ``arrival`` column (a partition value: string, timestamp, date or integer) orders
the bundles (SPEC §1): bundle ``b`` is the ``b``-th distinct arrival value in ascending order.
Everything the event loop needs besides the rows themselves is derived here, **on the driver,
from one small aggregate** — ``groupBy(arrival).agg(count, max accepted event time)``, one row
per bundle — or, without reading the data, from the same figures taken from Parquet footers
(``bundle_stats.py``) or given by the caller; data rows are never collected:

- ``P_b`` (processing time): ``P_b = max(P_{b-1}, given_b)``; ``given_b`` is an explicit
  override for the bundle when there is one, otherwise the end of the partition's interval when
  the arrival value is a time (``arrival_interval``; for strings such as ``2024-03-01T05`` the
  interval is inferred from the precision: an hour here), otherwise the run's logical time (or
  unknown: ``MIN_TS``).
- ``W_b`` (watermark after the bundle): ``max(W_{b-1}, strategy(max_event_ts, P_b))``, or the
  override's explicit watermark; monotone. ``max_event_ts`` is the largest event time of the
  *accepted* rows so far — rows rejected for a null/invalid timestamp, a null key or a future
  timestamp (``ts > P_b + max_future_skew``) do not count, exactly as in the reference engine.

The future guard needs ``P_b`` to decide which rows count. The aggregate computes the maximum of
all rows with a valid timestamp and key; only for a bundle whose maximum lies beyond its horizon
(rare: it holds a future timestamp) a second, filtered aggregate over those bundles finds the
largest accepted event time.

Internal columns (added by ``prepare_input``): ``__wl_arrival`` (the arrival value in an exactly
round-trippable, order-preserving form: micros for timestamps, days for dates), ``__wl_ts``
(event time in ms, null when unusable) and ``__wl_treason`` (why the timestamp is unusable).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.loop import BundleClock, RunClock
from windowlib.core.partitions import partition_interval
from windowlib.core.time import (
    EVENT_TIME_END_MS,
    EVENT_TIME_MIN_MS,
    MIN_TS,
    duration_ms,
    timestamp_ms,
)
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.engines.base import BundleTimes
from windowlib.engines.spark.columns import user_col

ARRIVAL = "__wl_arrival"
TS = "__wl_ts"
TREASON = "__wl_treason"
OUT_OF_RANGE = "timestamp_out_of_range"      # core.loop.timestamp_problem's reason
INTERNAL_PREFIX = "__wl_"

_DAY = 86_400_000


@dataclass
class BundlePlan(BundleClock):
    """The bundle sequence of a run: its clocks (``core.loop.BundleClock``: ``P_b``, ``W_b``,
    monotone) and, per bundle, its arrival value (``__wl_arrival`` form), row count and the
    largest accepted event time so far."""

    arrivals: list[Any] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    max_event_ts: list[int] = field(default_factory=list)
    index: dict[Any, int] = field(default_factory=dict)
    initial_max_event_ts: int = MIN_TS

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {a: i for i, a in enumerate(self.arrivals)}

    def clock_after(self) -> RunClock:
        """Where the clocks stand after the last bundle (the next run's prior clock)."""
        return RunClock(self.watermark, self.processing_time,
                        self.max_event_ts[-1] if self.max_event_ts else
                        self.initial_max_event_ts)


# --- input columns --------------------------------------------------------------------------

def _types() -> Any:
    from pyspark.sql import types as T

    return T


def arrival_kind(data_type: Any) -> str:
    """``timestamp`` | ``date`` | ``string`` | ``integral`` (the supported arrival types)."""
    T = _types()
    if isinstance(data_type, T.TimestampType | T.TimestampNTZType):
        return "timestamp"
    if isinstance(data_type, T.DateType):
        return "date"
    if isinstance(data_type, T.StringType):
        return "string"
    if isinstance(data_type, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return "integral"
    raise InputError(f"the arrival column must be a string, timestamp, date or integer column "
                     f"(a partition value), got {data_type.simpleString()}",
                     code="BUNDLE_INVALID")


def arrival_key_column(df: Any, arrival: str) -> tuple[Any, str]:
    """The order-preserving, exactly round-trippable form of the arrival column."""
    from pyspark.sql import functions as F

    if arrival not in df.columns:
        raise InputError(f"arrival column {arrival!r} is not in the DataFrame "
                         f"(columns: {', '.join(df.columns)})", code="COLUMN_MISSING")
    kind = arrival_kind(df.schema[arrival].dataType)
    col = user_col(arrival)
    if kind == "timestamp":
        return F.unix_micros(col.cast("timestamp")), kind
    if kind == "date":
        return F.unix_date(col), kind
    if kind == "integral":
        return col.cast("long"), kind
    return col, kind


def event_time_columns(df: Any, ts_column: str) -> tuple[Any, Any]:
    """``(ms, reason)`` Column expressions for the event-time column, with the reference
    engine's rules (``core.loop.timestamp_problem``): ints are ms, timestamps/dates convert
    (floor to ms), integral floats are accepted; null -> ``null_timestamp``, a missing column
    -> ``missing_timestamp``, outside ``core.time``'s accepted range ->
    ``timestamp_out_of_range``, anything else -> ``invalid_timestamp``."""
    from pyspark.sql import functions as F

    ms, reason = _parsed_event_time(df, ts_column)
    outside = (ms < F.lit(EVENT_TIME_MIN_MS)) | (ms >= F.lit(EVENT_TIME_END_MS))
    return ms, F.coalesce(reason, F.when(outside, F.lit(OUT_OF_RANGE)))


def readable_event_times(df: Any, ts_column: str, reason: str) -> Any:
    """``df`` with a timestamp-typed event time that is ``timestamp_out_of_range`` (column
    ``reason``) set to null: such a row is a reject, and PySpark cannot collect the value
    (year 1, or past 9999 in some time zones); the reason tells why it is null."""
    from pyspark.sql import functions as F

    T = _types()
    if ts_column not in df.columns or not isinstance(
            df.schema[ts_column].dataType, T.TimestampType | T.TimestampNTZType):
        return df
    readable = F.col(reason).isNull() | (F.col(reason) != F.lit(OUT_OF_RANGE))
    return df.withColumn(ts_column, F.when(readable, user_col(ts_column)))


def _parsed_event_time(df: Any, ts_column: str) -> tuple[Any, Any]:
    from pyspark.sql import functions as F

    T = _types()
    if ts_column not in df.columns:
        return F.lit(None).cast("long"), F.lit("missing_timestamp")
    dtype = df.schema[ts_column].dataType
    col = user_col(ts_column)
    null_reason = F.when(col.isNull(), F.lit("null_timestamp"))
    if isinstance(dtype, T.TimestampType | T.TimestampNTZType):
        # unix_millis floors (Math.floorDiv), also before 1970: the reference's rule
        return F.unix_millis(col.cast("timestamp")), null_reason
    if isinstance(dtype, T.DateType):
        return (F.unix_date(col).cast("long") * F.lit(_DAY)), null_reason
    if isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return col.cast("long"), null_reason
    if isinstance(dtype, T.FloatType | T.DoubleType):
        ok = (~F.isnan(col)) & (F.abs(col) < F.lit(9.2e18)) & (F.floor(col) == col)
        return (F.when(ok, col.cast("long")),
                null_reason.when(~ok, F.lit("invalid_timestamp")))
    if isinstance(dtype, T.StringType):
        parse = _iso_parser()
        ms = parse(col)
        return ms, null_reason.when(ms.isNull(), F.lit("invalid_timestamp"))
    return (F.lit(None).cast("long"), null_reason.otherwise(F.lit("invalid_timestamp")))


def _iso_parser() -> Any:
    """A Python UDF (Arrow-optimised) parsing ISO-8601 strings with ``timestamp_ms``, the
    reference engine's rule; null when the string is not a timestamp."""
    from pyspark.sql import functions as F

    def parse_iso(value: Any) -> int | None:
        if value is None:
            return None
        try:
            return timestamp_ms(value)
        except InputError:
            return None

    return F.udf(parse_iso, "long", useArrow=True)


def _time_of_arrival(value: Any, kind: str, interval_ms: int | None, name: str | None
                     ) -> int | None:
    """The end of the partition's interval for a time-valued arrival, else ``None``: for
    strings the one rule of ``core.partitions`` (an explicit ``interval_ms`` replaces the
    interval's length)."""
    if kind == "timestamp":
        micros = int(value)
        return (micros - micros % 1000) // 1000 + (interval_ms or 0)
    if kind == "date":
        return int(value) * _DAY + (_DAY if interval_ms is None else interval_ms)
    if kind == "string":
        start, end = partition_interval(value, name)
        if start is None:
            return None
        return end if interval_ms is None else start + interval_ms
    return None


def _given_column(kind: str, overrides: Mapping[Any, BundleTimes],
                  given_map: Mapping[Any, int], logical: int | None,
                  interval_ms: int | None) -> tuple[Any, Any]:
    """The bundle's given processing time as a Column over ``__wl_arrival`` (the rule of
    ``given_of`` in ``plan_bundles``) and a predicate telling which arrivals it covers (the
    others need Python: string arrivals parse as ISO times); ``(None, None)`` if none."""
    from pyspark.sql import functions as F

    arrival = F.col(ARRIVAL)
    if kind == "timestamp":
        base = (arrival - F.pmod(arrival, F.lit(1000))) / F.lit(1000)
        default = base.cast("long") + F.lit(interval_ms or 0)
    elif kind == "date":
        default = arrival.cast("long") * F.lit(_DAY) + F.lit(
            _DAY if interval_ms is None else interval_ms)
    elif logical is not None and kind != "string":
        default = F.lit(logical)
    else:
        default = None
    explicit = {a: ov.processing_time for a, ov in overrides.items()}
    explicit.update({a: t for a, t in given_map.items() if a not in overrides})
    covered = {a for a, t in explicit.items() if t is not None}
    if default is None and not covered:
        return None, None
    column = None
    for a, t in explicit.items():
        cond = arrival == F.lit(a)
        value = F.lit(t) if t is not None else F.lit(None).cast("long")
        column = F.when(cond, value) if column is None else column.when(cond, value)
    if column is None:
        column = default
    elif default is not None:
        column = column.otherwise(default)
    if default is not None:
        return column, lambda a: a not in explicit or a in covered
    return column, covered.__contains__


def canonical_arrival(value: Any, kind: str) -> Any:
    """A user-given arrival value (override tables) in ``__wl_arrival`` form."""
    if kind == "timestamp":
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=_dt.UTC)
            delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
            return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return int(value) * 1000
    if kind == "date":
        if isinstance(value, _dt.date):
            return (value - _dt.date(1970, 1, 1)).days
        return int(value)
    if kind == "integral":
        return int(value)
    return str(value)


# --- the plan -------------------------------------------------------------------------------

def plan_bundles(df: Any, *, kind: str, key_columns: Sequence[str],
                 strategy: WatermarkStrategy, max_future_skew_ms: int,
                 overrides: Mapping[Any, BundleTimes] | None = None,
                 processing_time: Any = None, arrival_interval: Any = None,
                 initial_watermark: int = MIN_TS, initial_processing_time: int = MIN_TS,
                 initial_max_event_ts: int = MIN_TS,
                 stats: Mapping[Any, Any] | None = None,
                 arrival_name: str | None = None) -> BundlePlan:
    """Compute the bundle sequence of ``df`` (which has the columns of ``prepare_input``).

    ``processing_time``: the run's logical time (used for bundles whose arrival value is not a
    time), or a mapping arrival value -> processing time. ``arrival_interval`` (a duration)
    overrides the inferred partition interval. ``overrides`` maps canonical arrival values to
    ``BundleTimes``; they win over everything else and add bundles that have no rows.
    ``stats`` (``bundle_stats.footer_stats``, or a caller's exact per-bundle figures:
    canonical arrival -> object with ``count`` and ``max_ts``, the largest event time of the
    rows with a valid timestamp and non-null keys) replaces the aggregate job; only bundles
    holding a future timestamp are then read (the filtered aggregate below).
    ``arrival_name`` (the arrival column) tells ``core.partitions`` whether string values must
    be times (``arrival_hour``...).
    """
    from pyspark.sql import functions as F

    overrides = dict(overrides or {})
    interval_ms = None if arrival_interval is None else duration_ms(
        arrival_interval, what="arrival_interval")
    logical = None
    given_map: dict[Any, int] = {}
    if isinstance(processing_time, Mapping):
        given_map = {canonical_arrival(k, kind): timestamp_ms(v)
                     for k, v in processing_time.items()}
    elif processing_time is not None:
        logical = timestamp_ms(processing_time)

    def given_of(a: Any) -> int | None:
        ov = overrides.get(a)
        if ov is not None:
            return ov.processing_time
        if a in given_map:
            return given_map[a]
        given = _time_of_arrival(a, kind, interval_ms, arrival_name)
        return logical if given is None else given

    accepted = F.col(TS).isNotNull() & F.col(TREASON).isNull()
    for c in key_columns:
        accepted = accepted & user_col(c).isNotNull()
    aggs = [F.count(F.lit(1)).alias("n"), F.max(F.when(accepted, F.col(TS))).alias("max_ts")]
    given_col, covers = _given_column(kind, overrides, given_map, logical, interval_ms)
    if given_col is not None:
        # the largest event time below the bundle's own horizon: exact whenever P_b == given_b
        aggs.append(F.max(F.when(accepted & (F.col(TS) <= given_col + F.lit(max_future_skew_ms)),
                                 F.col(TS))).alias("max_given"))
    per_bundle: dict[Any, list] = {}
    if stats is not None:
        given_col = None        # no max below the horizon: bundles beyond it are offenders
        for a, stat in stats.items():
            per_bundle[a] = [int(stat.count), stat.max_ts, None]
    else:
        for row in df.groupBy(ARRIVAL).agg(*aggs).collect():
            if row[ARRIVAL] is None:
                raise InputError(f"{row['n']} rows have a null arrival value; every row must "
                                 "belong to a bundle (partition)", code="BUNDLE_INVALID")
            per_bundle[row[ARRIVAL]] = [int(row["n"]), row["max_ts"],
                                        row["max_given"] if given_col is not None else None]
    for a in overrides:
        per_bundle.setdefault(a, [0, None, None])
    arrivals = sorted(per_bundle)

    # processing times: P_b = max(P_{b-1}, given_b) (core.loop.BundleClock)
    clock = BundleClock(initial_watermark, initial_processing_time)
    givens: list[int | None] = []
    for a in arrivals:
        given = given_of(a)
        clock.open(given)
        givens.append(given)
    processing_times = clock.processing_times

    # the largest accepted event time per bundle (rows beyond P_b + max_future_skew do not
    # count); a second, filtered aggregate only for bundles the first one cannot decide
    offenders = {}
    for a, p, given in zip(arrivals, processing_times, givens):
        stat = per_bundle[a]
        max_ts = stat[1]
        if max_ts is None or p == MIN_TS or max_ts <= p + max_future_skew_ms:
            continue
        if given_col is not None and given == p and covers(a):
            stat[1] = stat[2]
            continue
        offenders[a] = p + max_future_skew_ms
    if offenders:
        horizon = None
        for a, h in offenders.items():
            cond = F.col(ARRIVAL) == F.lit(a)
            horizon = F.when(cond, F.lit(h)) if horizon is None else horizon.when(cond, F.lit(h))
        exact = (df.filter(F.col(ARRIVAL).isin(list(offenders)))
                 .groupBy(ARRIVAL)
                 .agg(F.max(F.when(accepted & (F.col(TS) <= horizon), F.col(TS))).alias("m"))
                 .collect())
        for row in exact:
            per_bundle[row[ARRIVAL]][1] = row["m"]

    maxima: list[int] = []
    max_seen = initial_max_event_ts
    for a, p in zip(arrivals, processing_times):
        m = per_bundle[a][1]
        if m is not None and m > max_seen:
            max_seen = int(m)
        ov = overrides.get(a)
        if ov is not None and ov.watermark is not None:
            clock.close(ov.watermark)
        else:
            clock.close(strategy.watermark(max_seen, p))
        maxima.append(max_seen)
    return BundlePlan(initial_watermark, initial_processing_time, processing_times,
                      clock.watermarks, arrivals=arrivals,
                      counts=[per_bundle[a][0] for a in arrivals], max_event_ts=maxima,
                      initial_max_event_ts=initial_max_event_ts)
