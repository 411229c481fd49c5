"""What an input DataFrame must offer a pipeline, checked from its schema alone — before any
data is read — so that a typo or a wrong type is one clear error, never a run that rejects
every row, yields nulls or silently changes path.

- every column the pipeline reads (``Pipeline.required_columns``: timestamp, keys, the columns
  of declarative aggregates) exists: else ``COLUMN_MISSING`` with the available columns and the
  closest name;
- the event-time column holds times: timestamp, date, integer ms or ISO string, else
  ``TIMESTAMP_TYPE_INVALID`` (single bad values stay row-level rejects);
- ``sum``/``mean`` read a numeric column, else ``AGGREGATE_TYPE_INVALID``.
"""

from __future__ import annotations

import difflib
from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.pipeline import Pipeline

__all__ = ["check_input"]

_NUMERIC_AGGREGATES = ("sum", "mean")


def check_input(pipeline: Pipeline, schema: Any, *, event_time_given: bool = False) -> None:
    """Raise ``InputError`` when ``schema`` (a ``StructType``) cannot feed ``pipeline``.
    ``event_time_given``: the caller computed the event time itself (the test harness)."""
    from pyspark.sql import types as T

    types = {f.name: f.dataType for f in schema.fields if not f.name.startswith("__wl_")}
    for column, use in pipeline.required_columns().items():
        if column == pipeline.timestamp and event_time_given:
            continue
        if column not in types:
            near = difflib.get_close_matches(column, list(types), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise InputError(f"pipeline {pipeline.name!r} reads column {column!r} ({use}), "
                             f"which the input does not have{hint} (columns: "
                             f"{', '.join(sorted(types))})", code="COLUMN_MISSING")
    ts = pipeline.timestamp
    if not event_time_given and not isinstance(
            types[ts], T.TimestampType | T.TimestampNTZType | T.DateType | T.IntegralType
            | T.StringType):
        raise InputError(f"the event-time column {ts!r} of pipeline {pipeline.name!r} is "
                         f"{types[ts].simpleString()}; event times are timestamps, dates, "
                         "integer epoch milliseconds or ISO-8601 strings: cast the column",
                         code="TIMESTAMP_TYPE_INVALID")
    spec = pipeline.function
    if spec is None or spec.kind != "declarative":
        return
    for agg in spec.fn.aggregates:
        if agg.kind in _NUMERIC_AGGREGATES and not isinstance(types[agg.column],
                                                              T.NumericType):
            raise InputError(f"{agg.kind}({agg.column!r}) of pipeline {pipeline.name!r} needs a "
                             f"numeric column; {agg.column!r} is "
                             f"{types[agg.column].simpleString()}: cast it, or aggregate it "
                             "with min/max/first/last/collect_list", code="AGGREGATE_TYPE_INVALID")
