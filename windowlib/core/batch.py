"""Batch window functions: many panes in one Python call (``Pipeline.process_panes``).

A ``BatchWindowFunction`` declares its result columns (``result_schema``) and implements
``process_panes(panes)``. ``panes`` is a ``pyarrow.Table`` with one row per element of each
pane that fired, in firing order and, within a pane, in the pane's element order:

- ``pane_id`` (int64): the pane's number in this table (0, 1, ...);
- ``window_start``, ``window_end`` (int64 epoch ms; null for global windows), ``pane_index``
  (int64), ``timing`` (``EARLY``/``ON_TIME``/``LATE``), ``is_final`` (bool);
- then the element's columns.

It returns rows with a ``pane_id`` column naming the pane each row belongs to, plus the
declared result columns (so no result column is named ``pane_id``): a ``pyarrow.Table`` or
``RecordBatch``, a ``pandas.DataFrame`` or an iterable of dicts. Each row becomes a firing of
its pane, exactly as a row a ``ProcessWindowFunction`` yields for that firing. Panes without
elements (``fire_empty_on_time``) are not in the table.

Every engine calls it: the reference engine and the general path with one pane per call, the
pane path (``engines/spark/panes.py``) with thousands of panes per call — so the same function
gives the same firings everywhere and pays one Python call per batch where it matters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from windowlib.core.errors import ExecutionError

__all__ = ["META_COLUMNS", "PANE_ID", "BatchWindowFunction", "panes_columns", "panes_table",
           "rows_by_pane", "use_table_builder"]

PANE_ID = "pane_id"
META_COLUMNS = (PANE_ID, "window_start", "window_end", "pane_index", "timing", "is_final")


class BatchWindowFunction:
    """Override ``process_panes``; declare ``result_schema`` (DDL, a dataclass or a
    ``TypedDict`` class). See the module docstring for the table it gets and what it
    returns."""

    result_schema: Any = None

    def process_panes(self, panes: Any) -> Any:
        raise NotImplementedError


def panes_columns(panes: Sequence[tuple[Any, int, str, bool, Sequence[Any]]],
                  element_names: Sequence[str] | None = None) -> dict[str, list]:
    """The ``process_panes`` input for ``panes`` as Python columns (name -> values):
    ``(window, pane index, timing value, is_final, elements)`` each, elements as
    ``TimestampedValue``. ``element_names``: the element columns (default: every field seen,
    in first-seen order); a pane column's name wins over an element field's."""
    meta: dict[str, list] = {name: [] for name in META_COLUMNS}
    values: dict[str, list] = {} if element_names is None else {
        n: [] for n in element_names if n not in meta}
    n_rows = 0
    for number, (window, index, timing, is_final, elements) in enumerate(panes):
        start, end = getattr(window, "start", None), getattr(window, "end", None)
        for element in elements:
            row = element.value
            meta[PANE_ID].append(number)
            meta["window_start"].append(start)
            meta["window_end"].append(end)
            meta["pane_index"].append(index)
            meta["timing"].append(timing)
            meta["is_final"].append(is_final)
            if element_names is None:
                for name in row:
                    if name not in values and name not in meta:
                        values[name] = [None] * n_rows
            for name, column in values.items():
                column.append(row.get(name))
            n_rows += 1
    return {**meta, **values}


_TABLE_BUILDERS: list[Callable[[dict[str, list], Any], Any]] = []


def use_table_builder(build: Callable[[dict[str, list], Any], Any]) -> None:
    """Install how columns become the table ``process_panes`` gets (``windowlib`` installs
    ``engines/batch_tables.panes_table`` on import; the core imports no Arrow)."""
    _TABLE_BUILDERS[:] = [build]


def panes_table(panes: Sequence[tuple[Any, int, str, bool, Sequence[Any]]]) -> Any:
    """The ``process_panes`` input for ``panes`` (see ``panes_columns``), element types
    inferred from the values, built by the installed table builder."""
    if not _TABLE_BUILDERS:
        raise ExecutionError("batch window functions need windowlib's table builder: import "
                             "windowlib (not only windowlib.core)", code="FUNCTION_FAILED")
    return _TABLE_BUILDERS[0](panes_columns(panes), None)


def rows_by_pane(output: Any, n_panes: int, what: str) -> list[list[dict]]:
    """The rows ``process_panes`` returned, grouped by their ``pane_id`` column (the column
    removed); a row without a valid ``pane_id`` is ``FUNCTION_FAILED``."""
    if output is None:
        rows: list = []
    elif hasattr(output, "to_pylist"):          # pyarrow Table / RecordBatch
        rows = output.to_pylist()
    elif hasattr(output, "to_dict"):            # pandas DataFrame
        rows = output.to_dict("records")
    else:
        rows = list(output)
    out: list[list[dict]] = [[] for _ in range(n_panes)]
    for row in rows:
        if not isinstance(row, dict):
            raise ExecutionError(f"{what} must return rows (dicts, a pyarrow Table or a pandas "
                                 f"DataFrame), got {type(row).__name__}",
                                 code="FUNCTION_FAILED")
        row = dict(row)
        pane = row.pop(PANE_ID, None)
        try:
            number = int(pane)
        except (TypeError, ValueError):
            number = -1
        if not 0 <= number < n_panes:
            raise ExecutionError(f"{what} returned a row whose {PANE_ID!r} is {pane!r}: every row "
                                 f"names the pane it belongs to (0..{n_panes - 1})",
                                 code="FUNCTION_FAILED")
        out[number].append(row)
    return out
