"""How late a dropped element was: ``watermark - event time``, in the buckets the run report
charts. One rule for the figures a run records while writing its late output
(``run_outputs.py``) and for the report over committed outputs (``quality/lateness.py``).
"""

from __future__ import annotations

from typing import Any

from windowlib.core.errors import InputError

_HOUR_MS = 3_600_000
#: (label, exclusive upper bound in ms); the last bucket is unbounded.
LATENESS_BUCKETS: tuple[tuple[str, int | None], ...] = (
    ("<1h", _HOUR_MS), ("1-6h", 6 * _HOUR_MS), ("6-24h", 24 * _HOUR_MS), (">1d", None))
UNKNOWN = "unknown"

__all__ = ["LATENESS_BUCKETS", "UNKNOWN", "bucket_of", "event_ms"]


def event_ms(column: Any, dtype: Any, name: str = "event time") -> Any:
    """``column`` (of Spark type ``dtype``) as epoch ms: timestamps, dates, integer ms and ISO
    strings. Raises ``InputError(TIMESTAMP_INVALID)`` for other types."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, T.TimestampType | T.TimestampNTZType | T.DateType):
        return F.unix_millis(column.cast("timestamp"))
    if isinstance(dtype, T.IntegralType):
        return column.cast("long")
    if isinstance(dtype, T.StringType):
        return F.unix_millis(F.try_to_timestamp(column))
    raise InputError(f"{name} has type {dtype.simpleString()}; expected a timestamp, integer "
                     "ms or ISO string", code="TIMESTAMP_INVALID")


def bucket_of(watermark: Any, event: Any) -> Any:
    """The bucket label of each row: ``watermark`` is a timestamp Column, ``event`` epoch ms;
    ``unknown`` where either is null (negative lateness counts as ``<1h``)."""
    from pyspark.sql import functions as F

    lateness = F.unix_millis(watermark) - event
    bucket = F.when(lateness.isNull(), F.lit(UNKNOWN))
    for label, bound in LATENESS_BUCKETS:
        bucket = bucket.when(lateness < bound, F.lit(label)) if bound is not None else \
            bucket.otherwise(F.lit(label))
    return bucket
