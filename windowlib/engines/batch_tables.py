"""The Arrow table a ``BatchWindowFunction`` gets (``core/batch.py`` builds the columns in
plain Python; this module, outside the core, turns them into a ``pyarrow.Table``). On the pane
path the elements come as one Arrow table — input rows, or ``elements_table`` of Python values
behind an evictor — and ``arrow_panes_table`` adds the pane columns.

Pane columns have fixed types (``pane_id``/``window_start``/``window_end``/``pane_index``
int64, ``timing`` string, ``is_final`` bool); element columns take the input's Arrow types
when the engine knows them (the pane path), else Arrow infers them from the values — a column
whose values Arrow cannot type is ``FUNCTION_FAILED`` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from windowlib.core.batch import META_COLUMNS
from windowlib.core.errors import ExecutionError

__all__ = ["arrow_panes_table", "elements_table", "panes_table"]


def _meta_types(pa: Any) -> dict[str, Any]:
    return dict(zip(META_COLUMNS, (pa.int64(), pa.int64(), pa.int64(), pa.int64(),
                                   pa.string(), pa.bool_())))


def _column(pa: Any, name: str, values: list, arrow_type: Any) -> Any:
    try:
        return pa.array(values, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as exc:
        raise ExecutionError(f"the elements' column {name!r} cannot be an Arrow column "
                             f"for process_panes ({exc})", code="FUNCTION_FAILED") from None


def panes_table(columns: dict[str, list], element_fields: Sequence[Any] | None) -> Any:
    """``columns`` (``core.batch.panes_columns``) as a ``pyarrow.Table``; ``element_fields``
    (``pyarrow.Field``s) type the element columns they name."""
    import pyarrow as pa

    fixed = _meta_types(pa)
    given = {f.name: f.type for f in element_fields or ()}
    return pa.table({name: _column(pa, name, values, fixed.get(name, given.get(name)))
                     for name, values in columns.items()})


def elements_table(rows: Sequence[dict], element_fields: Sequence[Any]) -> Any:
    """Element rows (Python values; an absent field is null) as the ``pyarrow.Table`` of
    ``element_fields``, for ``arrow_panes_table``."""
    import pyarrow as pa

    return pa.table({f.name: _column(pa, f.name, [row.get(f.name) for row in rows], f.type)
                     for f in element_fields})


def arrow_panes_table(per_pane: dict[str, list], lengths: Sequence[int], elements: Any) -> Any:
    """The same table from elements already in Arrow (input rows, or ``elements_table``):
    ``per_pane`` holds one value per pane for each
    of ``META_COLUMNS`` (``pane_id``: the pane's position), ``lengths`` each pane's number
    of elements, and ``elements`` (a ``pyarrow.Table``) the panes' elements one after
    another."""
    import numpy as np
    import pyarrow as pa

    pane_of_row = pa.array(np.repeat(np.arange(len(lengths), dtype=np.int64), lengths))
    arrays = {name: pa.array(per_pane[name], type=t).take(pane_of_row)
              for name, t in _meta_types(pa).items()}
    for name in elements.column_names:
        if name not in arrays:        # a pane column's name wins over an element field's
            arrays[name] = elements.column(name)
    return pa.table(arrays)
