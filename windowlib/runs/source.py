"""``PartitionedSource``: Hive-style partitioned input (``{uri}/{partition}={value}/...``).

Invariants:

- Listing is driver-side metadata only: each file's URI, size and version (S3 ETag, or
  ``mtime_ns:<int>`` for local files). ``(path, size, version)`` identifies a file's content, so a
  file that lands late in an old partition, or is rewritten, is seen as new. Hidden and temp
  files (``_SUCCESS``, ``_temporary/``, ``.name``, ``*.tmp``, ``*.crc``) are ignored.
- Partitions come in ascending order: time values by time, integers numerically, other strings
  lexicographically. A time value's bundle processing time is the END of its interval (SPEC §1):
  ``2013-01-01T05`` covers ``[05:00, 06:00)`` UTC, a date a day, ``YYYY-MM`` a calendar month,
  minutes a minute, seconds a second; offsets (``+02:00``, ``Z``) are honoured, no offset is UTC.
- Reading never collects data and never drops input silently. Files are read by Spark tasks
  (pyarrow inside ``mapInArrow``; ``s3://`` through Arrow's S3 filesystem). Each output row
  carries the partition value (string), ``__wl_file`` and ``__wl_row`` (the row's index in its
  file: arrival order inside a file). A file that cannot be read (corrupt, truncated, wrong
  types, bad encoding, CSV header not matching the schema) becomes ONE row with every data column
  null, ``__wl_error`` set to the reason and ``__wl_row`` holding the file's row count when it
  can be known (a readable Parquet footer, the lines of a text file) or -1;
  :class:`SourceRead` splits the two. A task holds
  one file in memory at a time (so a bad file is rejected whole, never half-read).
- CSV and JSON (JSON Lines) rows are parsed by Spark's ``from_csv``/``from_json`` in PERMISSIVE
  mode: a line that does not fit the schema keeps its parseable fields, nulls elsewhere, and its
  raw text in ``__wl_corrupt`` — the engine rejects such rows (reason ``schema_mismatch``).
  CSV records must not contain newlines inside quoted fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.partitions import (
    check_partition_range,
    partition_interval,
    partition_precision,
)
from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.session import large_var_types
from windowlib.runs.frames import as_struct
from windowlib.runs.io_settings import io_parallelism
from windowlib.runs.source_readers import (
    ERROR_COLUMN,
    FILE_COLUMN,
    LINE_COLUMN,
    ROW_COLUMN,
    make_line_reader,
    make_parquet_reader,
)
from windowlib.state.hive import partition_value
from windowlib.state.objectstore import is_hidden
from windowlib.state.s3config import S3Settings
from windowlib.state.stores import open_store
from windowlib.state.taskfs import arrow_filesystem, task_filesystem
from windowlib.state.uri import Uri

__all__ = [
    "CORRUPT_COLUMN",
    "ERROR_COLUMN",
    "FILE_COLUMN",
    "ROW_COLUMN",
    "BadFile",
    "Partition",
    "PartitionedSource",
    "SourceFile",
    "SourceRead",
]

CORRUPT_COLUMN = "__wl_corrupt"
FORMATS = ("parquet", "csv", "json")
_NAME = re.compile(r"^[A-Za-z0-9_]+$")


# --- listing ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceFile:
    """One input file; ``(path, size, version)`` identifies its content."""

    path: str
    size: int
    version: str
    partition_value: str


@dataclass(frozen=True)
class Partition:
    """One partition (one bundle): its value, time interval (``None`` when not a time) and
    files sorted by path. ``processing_time_ms`` is the interval's end (SPEC §1)."""

    value: str
    start_ms: int | None
    end_ms: int | None
    files: tuple[SourceFile, ...]

    @property
    def processing_time_ms(self) -> int | None:
        return self.end_ms


@dataclass(frozen=True)
class BadFile:
    path: str
    reason: str


@dataclass
class SourceRead:
    """The result of :meth:`PartitionedSource.read`. ``frame`` holds data rows and bad-file
    rows; ``rows`` and ``bad_files_frame`` split it lazily (each re-reads unless ``frame`` is
    persisted — persist it when you need both). ``bad_files()`` collects the small list."""

    frame: Any

    @property
    def rows(self) -> Any:
        from pyspark.sql import functions as F

        return self.frame.filter(F.col(ERROR_COLUMN).isNull()).drop(ERROR_COLUMN)

    @property
    def bad_files_frame(self) -> Any:
        from pyspark.sql import functions as F

        return (self.frame.filter(F.col(ERROR_COLUMN).isNotNull())
                .select(F.col(FILE_COLUMN).alias("path"), F.col(ERROR_COLUMN).alias("reason")))

    def bad_files(self) -> list[BadFile]:
        return [BadFile(r["path"], r["reason"])
                for r in self.bad_files_frame.orderBy("path").collect()]


@dataclass
class PartitionedSource:
    """Partitioned files under ``uri`` (SPEC §9). ``schema``: a ``StructType``, or a DDL or
    JSON string (parsed when the source is first read: no Spark session is needed to define
    one); ``None`` infers it (Parquet: the first readable file's footer; CSV: the header, all
    strings; JSON: required). ``order_by``: columns giving arrival order inside a bundle
    (default: file, then row index — see :attr:`arrival_order`). ``options``: CSV/JSON parser
    options (``sep``, ``quote``, ``nullValue``, ``header`` (default true), ...)."""

    uri: str
    partition: str = "arrival_hour"
    format: str = "parquet"
    schema: Any = None
    order_by: Sequence[str] | None = None
    options: Mapping[str, Any] | None = None
    settings: S3Settings | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.location = Uri.parse(self.uri)
        if not isinstance(self.partition, str) or not _NAME.match(self.partition):
            raise InputError(f"partition column name must match [A-Za-z0-9_]+, got "
                             f"{self.partition!r}", code="PARTITION_NAME_INVALID")
        if self.format not in FORMATS:
            raise InputError(f"format must be one of {FORMATS}, got {self.format!r}",
                             code="FORMAT_INVALID")
        if isinstance(self.schema, str):
            if not self.schema.strip():
                raise InputError("schema must not be empty (a DDL or JSON string, or a "
                                 "StructType)", code="SCHEMA_INVALID")
            # kept as text: DDL parsing needs a Spark session, and sources are defined where
            # there is none (the registry, DAG parsing); parsed on first use
        elif self.schema is not None:
            self.schema = as_struct(self.schema)
        if self.format == "json" and self.schema is None:
            raise InputError("a JSON source needs a schema", code="SCHEMA_REQUIRED")
        self.order_by = tuple(self.order_by) if self.order_by else None
        self.options = dict(self.options or {})

    @property
    def arrival_order(self) -> tuple[str, ...]:
        """The columns giving arrival order inside one bundle."""
        return self.order_by or (FILE_COLUMN, ROW_COLUMN)

    def list_partitions(self, first: Any = None, last: Any = None) -> list[Partition]:
        """Partitions in ascending order, optionally only those between ``first`` and ``last``
        (inclusive; partition values, or datetimes for time partitions). Empty partitions
        (only hidden files) are left out.

        Raises ``InputError``: ``SOURCE_NOT_FOUND`` when the location does not exist (no
        folder; on S3 no object at all under the prefix — an existing empty folder, or a
        hidden marker object such as ``_SUCCESS``, lists as empty); ``PARTITION_RANGE_REVERSED``
        and ``PARTITION_PRECISION_MISMATCH`` for bad bounds (``core.partitions
        .check_partition_range``, with the listed partitions' precision)."""
        groups: dict[str, list[SourceFile]] = {}
        prefix = self.partition + "="
        store = open_store(self.location, self.settings)
        seen = False
        for obj in store.list(hidden=True):
            seen = True
            if is_hidden(obj.key):
                continue
            head, _, rest = obj.key.partition("/")
            if not rest or not head.startswith(prefix):
                continue
            value = partition_value(head[len(prefix):])
            groups.setdefault(value, []).append(
                SourceFile(obj.uri, obj.size, obj.version, value))
        parts = [Partition(v, *partition_interval(v, self.partition),
                           tuple(sorted(fs, key=lambda f: f.path)))
                 for v, fs in groups.items()]
        if not seen and not self._location_exists():
            raise self._not_found()
        kinds = {p.start_ms is not None for p in parts}
        if len(kinds) > 1:
            raise InputError(f"{self.uri}: partition values mix times and non-times "
                             f"({', '.join(sorted(groups)[:5])}...)",
                             code="PARTITION_VALUE_INVALID")
        key = self._sort_key(parts)
        parts.sort(key=key)
        precisions = {partition_precision(p.value) for p in parts}
        check_partition_range(first, last, self.partition,
                              precisions.pop() if len(precisions) == 1 else None)
        lo = None if first is None else key(self._bound(first))
        hi = None if last is None else key(self._bound(last))
        return [p for p in parts
                if (lo is None or key(p) >= lo) and (hi is None or key(p) <= hi)]

    def require_location(self) -> None:
        """``SOURCE_NOT_FOUND`` (as :meth:`list_partitions` raises it) unless the location
        exists; reads at most one listing page — a check cheap enough to run before a Spark
        session is started."""
        first = next(iter(open_store(self.location, self.settings).list(hidden=True)), None)
        if first is None and not self._location_exists():
            raise self._not_found()

    def _not_found(self) -> InputError:
        return InputError(f"source {self.location} does not exist (no folder, or no object "
                          "under the prefix): check the root and the source path, or land "
                          "data first", code="SOURCE_NOT_FOUND")

    def _location_exists(self) -> bool:
        """Whether the (empty) location exists: a folder for ``file://``; on S3 a prefix
        exists only through its objects."""
        return self.location.scheme == "file" and Path(self.location.arrow_path).is_dir()

    def _bound(self, value: Any) -> Partition:
        if hasattr(value, "isoformat") and not isinstance(value, str):
            from windowlib.core.time import timestamp_ms
            ms = timestamp_ms(value)
            return Partition(str(value), ms, ms, ())
        return Partition(str(value), *partition_interval(str(value), self.partition), ())

    @staticmethod
    def _sort_key(parts: list[Partition]) -> Any:
        if parts and parts[0].start_ms is not None:
            return lambda p: (p.start_ms if p.start_ms is not None else 0, p.value)
        if all(re.fullmatch(r"-?\d+", p.value) for p in parts):
            return lambda p: (int(p.value) if re.fullmatch(r"-?\d+", p.value) else 0, p.value)
        return lambda p: (0, p.value)

    # --- reading ------------------------------------------------------------------------------

    def output_schema(self, spark: Any, files: Sequence[SourceFile], data: Any = None) -> Any:
        """The data schema (``data``, else given, else inferred) followed by the partition
        column."""
        from pyspark.sql.types import StringType, StructField, StructType

        if data is None:
            data = as_struct(self.schema) if self.schema is not None else \
                self._infer(spark, files)
        fields = [StructField(f.name, f.dataType, True, f.metadata)
                  for f in data.fields if f.name != self.partition]
        return StructType([*fields, StructField(self.partition, StringType(), True)])

    def read(self, spark: Any, files: Sequence[SourceFile], *,
             parallelism: int | None = None, forward_credentials: bool | None = None,
             schema: Any = None) -> SourceRead:
        """Read exactly ``files`` (from :meth:`list_partitions`) by Spark tasks; see the module
        docstring for the columns added and how bad files and bad rows are reported.
        ``schema``: the data schema to read them with (default: given or inferred)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import LongType, StringType, StructField, StructType

        files = list(files)
        schema = self.output_schema(spark, files, schema)
        data_fields = schema.fields[:-1]
        extra = [StructField(FILE_COLUMN, StringType(), True),
                 StructField(ROW_COLUMN, LongType(), True),
                 StructField(ERROR_COLUMN, StringType(), True)]
        locs = [Uri.parse(f.path) for f in files]
        if not locs:
            out = StructType(list(schema.fields) + extra[:2]
                             + [StructField(CORRUPT_COLUMN, StringType(), True), extra[2]])
            return SourceRead(spark.createDataFrame([], out))
        fs = task_filesystem(spark, locs[0], self.settings, forward_credentials)
        items = [(loc.arrow_path, f.path, f.partition_value) for loc, f in zip(locs, files)]
        n = io_parallelism(spark, len(items), parallelism)
        ids = spark.range(0, len(items), 1, n)
        part_field = StructField(self.partition, StringType(), True)
        if self.format == "parquet":
            task_schema = StructType([*data_fields, part_field, *extra])
            fn = make_parquet_reader(fs, items, task_schema.json(), large_var_types(spark))
            frame = ids.mapInArrow(fn, task_schema)
            frame = frame.withColumn(CORRUPT_COLUMN, F.lit(None).cast("string"))
        else:
            task_schema = StructType([StructField(LINE_COLUMN, StringType(), True), part_field,
                                      *extra])
            header = str(self.options.get("header", self.format == "csv")).lower() == "true"
            names = [f.name for f in data_fields] if self.format == "csv" else []
            fn = make_line_reader(fs, items, header, names, self.options.get("sep", ","),
                                   self.partition)
            lines = ids.mapInArrow(fn, task_schema)
            rec = StructType([*data_fields, StructField(CORRUPT_COLUMN, StringType())])
            opts = {str(k): str(v) for k, v in self.options.items() if k != "header"}
            opts.update(mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT_COLUMN)
            parse = F.from_csv if self.format == "csv" else F.from_json
            ddl = (", ".join(f"{sql_identifier(f.name)} {f.dataType.simpleString()}"
                             for f in rec.fields)
                   if self.format == "csv" else rec)
            parsed = lines.withColumn("__wl_rec", parse(F.col(LINE_COLUMN), ddl, opts))
            frame = parsed.select(*[F.col("__wl_rec")[f.name].alias(f.name) for f in data_fields],
                                  F.col(self.partition), F.col(FILE_COLUMN), F.col(ROW_COLUMN),
                                  F.col("__wl_rec")[CORRUPT_COLUMN].alias(CORRUPT_COLUMN),
                                  F.col(ERROR_COLUMN))
        cols = [f.name for f in schema.fields] + [FILE_COLUMN, ROW_COLUMN, CORRUPT_COLUMN,
                                                   ERROR_COLUMN]
        # one JVM call per column
        return SourceRead(frame.selectExpr(*[sql_identifier(c) for c in cols]))

    def _infer(self, spark: Any, files: Sequence[SourceFile]) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema
        from pyspark.sql.types import StringType, StructField, StructType

        if not files:
            return StructType([])
        fs = arrow_filesystem(Uri.parse(files[0].path), self.settings)
        for f in files:
            path = Uri.parse(f.path).arrow_path
            try:
                with fs.open_input_file(path) as handle:
                    if self.format == "parquet":
                        import pyarrow.parquet as pq
                        return from_arrow_schema(pq.read_schema(handle),
                                                 prefer_timestamp_ntz=False)
                    first = handle.read(min(f.size, 1 << 16)).decode("utf-8").split("\n")[0]
                    names = [c.strip().strip('"') for c in
                             first.rstrip("\r").split(self.options.get("sep", ","))]
                    return StructType([StructField(c, StringType(), True) for c in names])
            except Exception:
                continue
        raise InputError(f"{self.uri}: cannot infer a schema, no file is readable; give "
                         "schema=", code="SCHEMA_REQUIRED")
