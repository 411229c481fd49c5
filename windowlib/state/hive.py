"""Hive-style partition directories: how a partition value is spelled in a path (``col=value``).

Invariant: the spelling is Spark's — :func:`escape_partition_value` percent-escapes the
characters Spark escapes and writes ``None`` as :data:`NULL_PARTITION`; :func:`partition_value`
undoes one level of escaping. Paths keep the escaped form (see :mod:`windowlib.state.uri`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import unquote

__all__ = ["NULL_PARTITION", "escape_partition_value", "partition_value", "partition_values",
           "split_partitions"]

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(i) for i in range(32)}


def escape_partition_value(value: Any) -> str:
    """Spark's escaping of a Hive partition value in a path."""
    if value is None:
        return NULL_PARTITION
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif hasattr(value, "isoformat"):
        text = value.isoformat()
    else:
        text = str(value)
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


def partition_value(escaped: str) -> str:
    """The value of a ``col=<escaped>`` segment (``NULL_PARTITION`` stays as it is)."""
    return unquote(escaped)


def partition_values(path: str) -> dict[str, str]:
    """``col=value`` segments of a file's path (its directories), unescaped."""
    out: dict[str, str] = {}
    for seg in path.split("/")[:-1]:
        name, eq, value = seg.partition("=")
        if eq and name:
            out[name] = partition_value(value)
    return out


def split_partitions(table: Any, parts: Sequence[str], data_cols: Sequence[str]
                     ) -> Iterator[tuple[str, Any]]:
    """``(directory, rows)`` for each distinct value combination of ``parts`` in the Arrow
    ``table``: ``col=value/...`` (escaped) and those rows' ``data_cols``."""
    import pyarrow.compute as pc

    keys = table.select(list(parts)).group_by(list(parts)).aggregate([]).to_pylist()
    for key in keys:
        mask = None
        for col in parts:
            value = key[col]
            cond = pc.is_null(table[col]) if value is None else pc.equal(table[col], value)
            mask = cond if mask is None else pc.and_(mask, cond)
        directory = "/".join(f"{c}={escape_partition_value(key[c])}" for c in parts)
        yield directory, table.filter(mask).select(list(data_cols)).combine_chunks()
