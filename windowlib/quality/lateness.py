"""How late the dropped elements were: a bucketed histogram of ``watermark - event time``.

Invariants: computed with one Spark aggregate (nothing but the bucket counts reaches the
driver); every bucket of ``LATENESS_BUCKETS`` is returned, in order, zeros included, so charts
over runs line up; rows whose lateness cannot be computed (null event time or watermark) are
counted under ``unknown``, which appears only when non-zero. The buckets are
``runs.lateness``'s (the same as a run's recorded histogram).
"""

from __future__ import annotations

from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.pipeline import Pipeline
from windowlib.engines.spark.columns import user_col
from windowlib.runs.lateness import LATENESS_BUCKETS, UNKNOWN, bucket_of, event_ms


def _event_ms(df: Any, column: str) -> Any:

    if column not in df.columns:
        raise InputError(f"the late output has no event-time column {column!r} "
                         f"(columns: {', '.join(df.columns)})", code="COLUMN_MISSING")
    return event_ms(user_col(column), df.schema[column].dataType,
                    f"event-time column {column!r}")


def lateness_histogram(late_df: Any, timestamp: str | Pipeline = "ts",
                       watermark: str = "watermark") -> list[list[Any]]:
    """``[[label, count], ...]`` of ``watermark - event time`` over ``late_df``.

    ``timestamp`` is the pipeline (its ``timestamp`` column is used) or the column name.
    Negative lateness (impossible for ``too_late`` rows) counts as ``<1h``.
    """
    from pyspark.sql import functions as F

    ts_col = timestamp.timestamp if isinstance(timestamp, Pipeline) else timestamp
    if watermark not in late_df.columns:
        raise InputError(f"the late output has no {watermark!r} column", code="COLUMN_MISSING")
    bucket = bucket_of(user_col(watermark), _event_ms(late_df, ts_col))
    labels = [label for label, _ in LATENESS_BUCKETS] + [UNKNOWN]
    sums = [F.sum(F.when(bucket == label, 1).otherwise(0)).cast("long").alias(f"b{i}")
            for i, label in enumerate(labels)]
    row = late_df.agg(*sums).first()
    out = [[label, int(row[i] or 0)] for i, label in enumerate(labels)]
    return [pair for pair in out if pair[0] != UNKNOWN or pair[1] > 0]


__all__ = ["LATENESS_BUCKETS", "lateness_histogram"]
