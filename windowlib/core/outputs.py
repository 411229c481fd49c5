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
- **side_outputs**: key columns, ``tag``, ``value_json``, ``watermark``, ``processing_time``.

Inside engines, window bounds and clocks are epoch milliseconds (``TIME_COLUMNS``); outputs
carry them as timestamps (null while a clock is -inf, and at the end of a finalized input).
"""

from __future__ import annotations

from dataclasses import dataclass

OUTPUTS = ("firings", "late", "rejects", "side_outputs")

WINDOW_COLUMNS = ("window_start", "window_end")
PANE_COLUMNS = ("pane_index", "timing", "is_final")
RETRACT = "retract"
CLOCK_COLUMNS = ("watermark", "processing_time")
RUN_ID = "run_id"
REASON = "reason"
TAG, VALUE_JSON = "tag", "value_json"
RESULT_JSON = "result_json"

RESERVED_COLUMNS = frozenset((*WINDOW_COLUMNS, *PANE_COLUMNS, RETRACT, *CLOCK_COLUMNS, RUN_ID))
TIME_COLUMNS = frozenset((*WINDOW_COLUMNS, *CLOCK_COLUMNS))
# logical types of the columns windowlib sets (key, element and result columns keep theirs)
METADATA_TYPES = {
    "window_start": "timestamp", "window_end": "timestamp", "pane_index": "long",
    "timing": "string", "is_final": "boolean", "retract": "boolean",
    "watermark": "timestamp", "processing_time": "timestamp", "run_id": "string",
    "reason": "string", "tag": "string", "value_json": "string", "result_json": "string",
}


@dataclass(frozen=True)
class OutputColumns:
    """The columns of every output of one pipeline's runs, in order."""

    keys: tuple[str, ...]
    elements: tuple[str, ...]
    results: tuple[str, ...]
    retracting: bool = False

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
        return (*self.keys, TAG, VALUE_JSON, *CLOCK_COLUMNS)

    def of(self, output: str) -> tuple[str, ...]:
        """The columns of ``output`` (one of ``OUTPUTS``)."""
        if output not in OUTPUTS:
            raise KeyError(output)
        return getattr(self, output)
