"""``core.codec.to_json`` over many result rows at once, for a walker's JSON result column.

A run of consecutive rows with the same string keys in the same order, whose every column
holds one kind of scalar (integers that fit int64, strings or booleans, with or without
nulls), is written column by column with Arrow: integers by Arrow's decimal text, strings
by the escaping ``to_json`` uses, booleans as ``true``/``false``, nulls as ``null``, joined
with the quoted keys. Every other row is ``to_json``'s own text. The result equals
``[to_json(row) for row in rows]`` (``tests/unit/test_json_rows.py`` draws rows to check it).
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as quote
from typing import Any

from windowlib.core.codec import TAG, to_json

__all__ = ["json_texts"]

_NONE = type(None)


def json_texts(rows: list[dict]) -> Any:
    """The compact JSON text of each row (dicts), as one Arrow string array."""
    import pyarrow as pa

    parts = []
    i, n = 0, len(rows)
    while i < n:
        keys = tuple(rows[i])
        j = i + 1
        while j < n and tuple(rows[j]) == keys:
            j += 1
        parts.append(_run(rows[i:j], keys))
        i = j
    return pa.concat_arrays(parts) if parts else pa.array([], type=pa.string())


def _run(rows: list[dict], keys: tuple) -> Any:
    """The texts of rows that share ``keys`` (in that order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pieces: list[Any] = []
    if keys and TAG not in keys and all(type(k) is str for k in keys):
        for position, key in enumerate(keys):
            text = _column_text([r[key] for r in rows])
            if text is None:
                break
            pieces += [pa.scalar(("{" if position == 0 else ",") + quote(key) + ":"), text]
        else:
            return pc.binary_join_element_wise(*pieces, pa.scalar("}"), "")
    return pa.array([to_json(r) for r in rows], type=pa.string())


def _column_text(values: list) -> Any:
    """The JSON text of one column's values, or ``None`` when they are not of one scalar
    kind that Arrow writes as ``to_json`` does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kinds = set(map(type, values))
    kinds.discard(_NONE)
    if not kinds:
        return pa.array(["null"] * len(values), type=pa.string())
    if kinds == {int}:
        try:
            text = pc.cast(pa.array(values, type=pa.int64()), pa.string())
        except (OverflowError, pa.ArrowInvalid):
            return None
    elif kinds == {str}:
        text = pa.array([None if v is None else quote(v) for v in values], type=pa.string())
    elif kinds == {bool}:
        text = pc.if_else(pa.array(values, type=pa.bool_()), "true", "false")
    else:
        return None
    return pc.fill_null(text, "null")
