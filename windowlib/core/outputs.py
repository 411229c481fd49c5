"""The public output contract of a run (SPEC §7): its outputs, their columns in order, and the
metadata columns windowlib sets itself. Names and logical types only; engines render them
(``engines/spark/outputs.py`` for Spark) and readers read them. No output column is named or
ordered anywhere else.

- **firings**: key columns, ``window_start``, ``window_end``, ``pane_index``, ``timing``,
  ``is_final``, ``retract`` (``accumulating_and_retracting`` only), ``watermark``,
  ``processing_time``, ``run_id``, then the result columns (declarative aggregates: one per
  aggregate; Python functions: ``result_json`` unless a result schema is given).
- **late**: the element's columns, ``reason`` (``too_late``), ``watermark`` (the one it met).
- **rejects**: the element's columns and ``reason``.
- **side_outputs**: key columns, ``tag``, ``value_json``, ``value_typed`` (only when a tag of
  the pipeline declares a schema), ``watermark``, ``processing_time``. A value of a tag declared
  with a schema is in ``value_typed``, a struct with one field per typed tag (named by the tag;
  the others null); every other value is ``value_json`` (``codec`` JSON text).
  ``side_output_columns(tag, fields)`` gives one tag's values as columns (``side_output(tag)``
  on a one-shot result, ``read_side_outputs(output, tag=...)``).

Inside engines, window bounds and clocks are epoch milliseconds (``TIME_COLUMNS``); outputs
carry them as timestamps (null while a clock is -inf, and at the end of a finalized input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import ExecutionError

OUTPUTS = ("firings", "late", "rejects", "side_outputs")

WINDOW_COLUMNS = ("window_start", "window_end")
PANE_COLUMNS = ("pane_index", "timing", "is_final")
RETRACT = "retract"
CLOCK_COLUMNS = ("watermark", "processing_time")
RUN_ID = "run_id"
TOO_LATE = "too_late"     # the reason of every late record
REASON = "reason"
TAG, VALUE_JSON, VALUE_TYPED = "tag", "value_json", "value_typed"
RESULT_JSON = "result_json"

RESERVED_COLUMNS = frozenset((*WINDOW_COLUMNS, *PANE_COLUMNS, RETRACT, *CLOCK_COLUMNS, RUN_ID))
TIME_COLUMNS = frozenset((*WINDOW_COLUMNS, *CLOCK_COLUMNS))
# logical types of the columns windowlib sets (key, element and result columns keep theirs)
METADATA_TYPES = {
    "window_start": "timestamp", "window_end": "timestamp", "pane_index": "long",
    "timing": "string", "is_final": "boolean", "retract": "boolean",
    "watermark": "timestamp", "processing_time": "timestamp", "run_id": "string",
    "reason": "string", "tag": "string", "value_json": "string", "result_json": "string",
    "value_typed": "struct",
}


@dataclass(frozen=True)
class OutputColumns:
    """The columns of every output of one pipeline's runs, in order."""

    keys: tuple[str, ...]
    elements: tuple[str, ...]
    results: tuple[str, ...]
    retracting: bool = False
    typed_tags: tuple[str, ...] = ()     # side outputs declared with a schema

    @property
    def firings(self) -> tuple[str, ...]:
        pane = (*PANE_COLUMNS, RETRACT) if self.retracting else PANE_COLUMNS
        return (*self.keys, *WINDOW_COLUMNS, *pane, *CLOCK_COLUMNS, RUN_ID, *self.results)

    @property
    def late(self) -> tuple[str, ...]:
        return (*self.elements, REASON, "watermark")

    @property
    def rejects(self) -> tuple[str, ...]:
        return (*self.elements, REASON)

    @property
    def side_outputs(self) -> tuple[str, ...]:
        typed = (VALUE_TYPED,) if self.typed_tags else ()
        return (*self.keys, TAG, VALUE_JSON, *typed, *CLOCK_COLUMNS)

    def of(self, output: str) -> tuple[str, ...]:
        """The columns of ``output`` (one of ``OUTPUTS``)."""
        if output not in OUTPUTS:
            raise KeyError(output)
        return getattr(self, output)


def side_output_columns(fields: tuple[str, ...] | None) -> tuple[str, ...]:
    """The columns of one side output's values: the fields of its declared type, or
    ``value_json`` when it has none (``fields`` is ``None``)."""
    return (VALUE_JSON,) if fields is None else fields


def check_result_columns(result: dict) -> None:
    """``RESULT_COLUMN_CONFLICT`` when a result row names a column windowlib sets itself
    (``RESERVED_COLUMNS``); engines that write a firing without ``firing_row`` call it."""
    if not RESERVED_COLUMNS.isdisjoint(result):
        name = next(n for n in result if n in RESERVED_COLUMNS)
        raise ExecutionError(
            f"the window function returned a column named {name!r}, which windowlib "
            f"sets itself; rename it (reserved: {', '.join(sorted(RESERVED_COLUMNS))})",
            code="RESULT_COLUMN_CONFLICT")


def firing_row(logic: Any, key_row: dict, window: Any, index: int, timing: str, result: dict,
               is_last: bool, retracting: bool) -> dict:
    """The firing row of one result row (SPEC §7 column order): the key, the window, pane
    index and timing (``Timing`` value), the result's columns (key columns never overwritten;
    a reserved name is ``RESULT_COLUMN_CONFLICT``), ``is_final`` and, when retracting,
    ``retract``. Every engine's firings are built here, except the Spark pane walker's, which
    writes the same columns straight into its output rows (``Walker.emit_result``)."""
    row = dict(key_row)
    row["window_start"] = window.start
    row["window_end"] = window.end
    row["pane_index"] = index
    row["timing"] = timing
    check_result_columns(result)
    keys = logic.key_column_set
    if keys.isdisjoint(result):
        row.update(result)
    else:
        for name, value in result.items():
            if name not in keys:
                row[name] = value
    row["is_final"] = is_last
    if retracting:
        row["retract"] = False
    return row
