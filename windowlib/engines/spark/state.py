"""Pane state as a DataFrame: what a run hands to the next one (SPEC §8).

The general path keeps a key's live state in the core ``KeyDriver``; between runs it travels as
one row per key with **versioned schema** ``STATE_FORMAT_VERSION``:

- the key columns, typed as in the input (state and new rows meet in one shuffle);
- ``state`` (string): ``KeyDriver.snapshot()`` as JSON — windows with pane indices and trigger
  state, contents (accumulators or buffered elements), timers with their owners, per-key state;
- ``next_event_timer`` / ``next_processing_timer`` (long, ms): the key's earliest timers, null
  when none;
- ``entries`` (long): live size, open windows + buffered elements (``max_key_state``, stats);
- ``format_version`` (int): ``STATE_FORMAT_VERSION``.

The next-timer columns let the next run pass a key's state through **without parsing it** when
the key gets no new elements and no timer of it comes due (the row is copied as is), so a run's
Python cost follows new data plus state that has work to do, not the whole history.

Global run time (watermark, processing time, largest accepted event time) is not per key: it
is the ``core.loop.RunClock`` the checkpoint records next to this frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from windowlib.core.errors import StateError, rebuild_hint

STATE_FORMAT_VERSION = 1
STATE_KIND = "general-keys"      # the commit record's name for this state format
STATE_COLUMNS = ("state", "next_event_timer", "next_processing_timer", "entries",
                 "format_version")


def state_schema(key_fields: Sequence[Any]) -> Any:
    """The Spark schema of a state frame for these key fields."""
    from pyspark.sql import types as T

    return T.StructType([
        *key_fields,
        T.StructField("state", T.StringType(), False),
        T.StructField("next_event_timer", T.LongType(), True),
        T.StructField("next_processing_timer", T.LongType(), True),
        T.StructField("entries", T.LongType(), False),
        T.StructField("format_version", T.IntegerType(), False),
    ])


def check_state_frame(state: Any, key_columns: Sequence[str], key_types: dict[str, Any]) -> None:
    """Raise ``StateError`` unless ``state`` has the versioned schema for these keys.

    Only the schema is checked here (no data is read); the version of each row is checked as
    it is read (an unknown version fails the run with ``CHECKPOINT_FORMAT_UNSUPPORTED``).
    """
    from pyspark.sql import types as T

    fields = {f.name: f.dataType for f in state.schema.fields}
    missing = [c for c in (*key_columns, *STATE_COLUMNS) if c not in fields]
    if missing:
        raise StateError(f"the pane state frame lacks columns {missing} (state format "
                         f"{STATE_FORMAT_VERSION} has the key columns and "
                         f"{', '.join(STATE_COLUMNS)})", code="CHECKPOINT_CORRUPT")
    check_key_types(fields, key_columns, key_types)
    if not isinstance(fields["state"], T.StringType):
        raise StateError("the pane state column 'state' is not a string",
                         code="CHECKPOINT_CORRUPT")


def check_key_types(saved: dict[str, Any], key_columns: Sequence[str],
                    key_types: dict[str, Any]) -> None:
    """Raise ``StateError(STATE_SCHEMA_MISMATCH)`` unless every key column has the same type
    in the saved state (``saved``: name -> DataType) as in the input (``key_types``)."""
    for c in key_columns:
        if saved[c] != key_types[c]:
            raise StateError(
                f"key column {c!r} is {saved[c].simpleString()} in the saved state but "
                f"{key_types[c].simpleString()} in the input; the input schema changed: cast "
                f"the column, or {rebuild_hint()}", code="STATE_SCHEMA_MISMATCH")


def empty_state(spark: Any, key_fields: Sequence[Any]) -> Any:
    """An empty state frame (the first run of a pipeline)."""
    return spark.createDataFrame([], state_schema(key_fields))
