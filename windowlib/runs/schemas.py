"""The input schema of a pipeline is part of its checkpoint: recorded at the first commit, and
every new file is checked against it before anything is staged.

Rules (``reconcile``), per column of a new file against the recorded schema:

- the same type: fine; a narrower one (``int`` in a ``bigint`` column, ``bigint`` in a
  ``double`` column): read as the recorded type;
- a safe widening (``int`` → ``bigint`` → ``double``, ``float`` → ``double``): the column is
  widened from this run on and the change recorded — outputs of earlier runs are read as the
  wider type, so every committed version stays readable together; never for key columns
  (window state is keyed by them);
- any other type, or a column the pipeline reads (``Pipeline.required_columns``) missing from
  the file: ``SCHEMA_MISMATCH`` naming the file and the column, before anything is staged;
- a column the pipeline does not read missing from a file reads as null; a new column is added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.pipeline import Pipeline

__all__ = ["Footer", "file_schemas", "read_footers", "reconcile"]

_RANKS = {"byte": 0, "short": 1, "integer": 2, "long": 3, "float": 4, "double": 5}


def _widened(recorded: Any, found: Any) -> Any | None:
    """The type that holds both (``recorded`` when ``found`` fits it), or ``None``."""
    if recorded == found:
        return recorded
    a, b = recorded.typeName(), found.typeName()
    if a in _RANKS and b in _RANKS:
        if a == "float" and b in ("long", "integer", "short", "byte"):
            return None        # a float cannot hold every long (and int would lose digits)
        return recorded if _RANKS[b] <= _RANKS[a] else found
    return None


def reconcile(pipeline: Pipeline, recorded: Any, files: Sequence[tuple[str, Any]]
              ) -> tuple[Any, list[str]]:
    """``(schema to read this run's files with, changes made)``; ``recorded`` is the
    checkpoint's input schema (``None`` before the first commit), ``files`` the new files'
    ``(uri, schema)`` (``schema`` ``None`` for an unreadable file: it is rejected whole later).
    Raises ``InputError(SCHEMA_MISMATCH)``."""
    from pyspark.sql.types import StructField, StructType

    readable = [(uri, s) for uri, s in files if s is not None]
    if recorded is None:
        if not readable:
            return None, []
        recorded = readable[0][1]
    fields = {f.name: f.dataType for f in recorded.fields}
    order = list(fields)
    required = pipeline.required_columns()
    keys = set(pipeline.key_columns)
    changes: list[str] = []
    for uri, schema in readable:
        found = {f.name: f.dataType for f in schema.fields}
        for name in order:
            if name not in found:
                if name in required:
                    raise InputError(f"{uri} lacks column {name!r}, which pipeline "
                                     f"{pipeline.name!r} reads ({required[name]}); restore the "
                                     "column in the file (the checkpoint's input schema has "
                                     "it)", code="SCHEMA_MISMATCH")
                continue
            wide = _widened(fields[name], found[name])
            if wide is None or (wide != fields[name] and name in keys):
                why = " (a key column: its type cannot change)" if name in keys else ""
                raise InputError(f"{uri}: column {name!r} is {found[name].simpleString()}, but "
                                 f"the pipeline's input has been {fields[name].simpleString()}"
                                 f"{why}; cast the column when writing the file, or rebuild "
                                 "the pipeline from scratch with the new type",
                                 code="SCHEMA_MISMATCH")
            if wide != fields[name]:
                changes.append(f"{name}: {fields[name].simpleString()} -> "
                               f"{wide.simpleString()} (first in {uri})")
                fields[name] = wide
        for name, dtype in found.items():
            if name not in fields:
                fields[name] = dtype
                order.append(name)
                changes.append(f"{name}: added as {dtype.simpleString()} (first in {uri})")
    return StructType([StructField(n, fields[n], True) for n in order]), changes


@dataclass(frozen=True)
class Footer:
    """One input file's Parquet footer: ``schema`` (the data columns as a Spark
    ``StructType``) and ``metadata`` (pyarrow ``FileMetaData``: row groups and statistics),
    both ``None`` when the footer cannot be read."""

    uri: str
    partition_value: str
    schema: Any
    metadata: Any


def read_footers(source: Any, files: Sequence[Any]) -> list[Footer]:
    """The footer of each of ``files`` of a Parquet ``source`` (metadata only, on the driver:
    one small read per file); ``[]`` for CSV/JSON."""
    if source.format != "parquet" or not files:
        return []
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType

    from windowlib.state.taskfs import arrow_filesystem
    from windowlib.state.uri import Uri

    fs = arrow_filesystem(Uri.parse(files[0].path), source.settings)
    out = []
    for f in files:
        try:
            with fs.open_input_file(Uri.parse(f.path).arrow_path) as handle:
                parquet = pq.ParquetFile(handle)
                meta = parquet.metadata
                found = from_arrow_schema(parquet.schema_arrow, prefer_timestamp_ntz=False)
        except Exception:               # unreadable: rejected whole when it is read
            out.append(Footer(f.path, f.partition_value, None, None))
            continue
        data = StructType([x for x in found.fields if x.name != source.partition])
        out.append(Footer(f.path, f.partition_value, data, meta))
    return out


def file_schemas(source: Any, footers: Sequence[Footer]) -> list[tuple[str, Any]]:
    """``(uri, data schema)`` of each file (``None`` when unreadable) from its footer;
    ``[]`` for explicit schemas, which fix the columns (and for CSV/JSON: no footers)."""
    if source.schema is not None:
        return []
    return [(f.uri, f.schema) for f in footers]
