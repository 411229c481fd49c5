"""DataFrames in ``file://`` and ``s3://`` locations, moved by Spark tasks in parallel: the Spark
side of ``windowlib.state`` (locations are ``Uri``, listing and deleting go through the object
store, tasks rebuild Arrow filesystems from ``state.taskfs``, which says how credentials travel).

Invariants:

- Data never passes through the driver. The driver only lists objects, deletes the location's
  objects on ``mode="overwrite"`` and receives one small metadata row per written file.
- Two I/O paths (``io=``): ``"spark"`` uses Spark's own Parquet reader/writer (``file://``, and
  ``s3://`` as ``s3a://`` on clusters with Hadoop's S3 connector); ``"arrow"`` runs pyarrow inside
  ``mapInArrow`` tasks (Arrow's S3 filesystem, no Hadoop connector needed). ``"auto"`` (default)
  picks ``spark`` for ``file://`` and ``arrow`` for ``s3://``, unless the session conf
  ``spark.windowlib.io.s3`` is ``"spark"`` (a cluster with s3a).
- Arrow-path file names are ``part-{partition:05d}-{token}-{seq:03d}.parquet``: unique per write
  (``token``), deterministic per task, so a retried task attempt overwrites its own files.
- Timestamps are written and read as UTC instants (``timestamp[us, UTC]``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import DefinitionError, InputError, StateError
from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.columns import struct_of
from windowlib.engines.spark.session import large_var_types
from windowlib.runs.io_settings import io_parallelism, use_spark_io
from windowlib.state.checksums import check_sizes, verified_bytes
from windowlib.state.hive import NULL_PARTITION, partition_values, split_partitions
from windowlib.state.partfiles import PartFiles
from windowlib.state.s3config import S3Settings
from windowlib.state.stores import delete_location, open_store
from windowlib.state.taskfs import TaskFilesystem, arrow_filesystem, task_filesystem
from windowlib.state.uri import Uri

__all__ = ["FrameFile", "FrameInfo", "arrow_rewrite", "arrow_writes", "check_frames", "conform",
           "read_frame", "write_frame", "written_files"]

_TOKEN = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_META = (("path", "string"), ("rows", "long"), ("bytes", "long"), ("sha256", "string"),
         ("task", "int"))     # the writer tasks' rows (column, type)


def as_struct(schema: Any) -> Any:
    """A ``StructType`` from a ``StructType``, a DDL string or Spark's JSON schema string."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        text = schema.strip()
        try:
            if text.startswith("{"):
                return StructType.fromJson(json.loads(text))
            parsed = _parse_datatype_string(text)
        except Exception as exc:
            raise InputError(f"cannot parse schema {schema!r}: {exc}",
                             code="SCHEMA_INVALID") from exc
        if isinstance(parsed, StructType):
            return parsed
    raise InputError(f"schema must be a StructType, DDL or JSON string, got {schema!r}",
                     code="SCHEMA_INVALID")


# --- writing ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FrameFile:
    """One data file: its URI, rows, size and SHA-256 (``None`` when Spark's own writer wrote
    it)."""

    path: str
    rows: int
    bytes: int
    sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"path": self.path, "rows": self.rows, "bytes": self.bytes}
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FrameFile:
        return cls(data["path"], int(data["rows"]), int(data["bytes"]), data.get("sha256"))


@dataclass(frozen=True)
class FrameInfo:
    """What :func:`write_frame` wrote: the files (URIs), totals and the Spark schema (JSON)."""

    uri: str
    files: tuple[FrameFile, ...]
    schema_json: str
    partition_by: tuple[str, ...] = ()

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {"uri": self.uri, "schema": json.loads(self.schema_json),
                "partition_by": list(self.partition_by), "rows": self.rows, "bytes": self.bytes,
                "files": [f.to_dict() for f in self.files]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FrameInfo:
        return cls(data["uri"], tuple(FrameFile.from_dict(f) for f in data["files"]),
                   json.dumps(data["schema"], separators=(",", ":"), sort_keys=True),
                   tuple(data.get("partition_by", ())))


def write_frame(df: Any, uri: str, *, settings: S3Settings | None = None,
                partition_by: Sequence[str] | None = None, mode: str = "error",
                io: str = "auto", token: str | None = None, max_rows_per_file: int = 1_000_000,
                forward_credentials: bool | None = None) -> FrameInfo:
    """Write ``df`` as Parquet files under ``uri`` from Spark tasks; return what was written.

    ``mode``: ``"error"`` refuses a location that already holds files
    (``StateError(FRAME_EXISTS)``); ``"overwrite"`` deletes them first. ``partition_by`` writes
    Hive-style ``col=value`` directories (values escaped as Spark does). An empty ``df`` writes no
    data file on the Arrow path (``FrameInfo.files`` is empty). ``token`` (default: random) makes
    the file names of this write unique.
    """
    from pyspark.sql import functions as F

    loc = Uri.parse(uri)
    if max_rows_per_file < 1:
        raise DefinitionError("max_rows_per_file must be >= 1", code="ARGUMENT_INVALID")
    if mode not in ("error", "overwrite"):
        raise DefinitionError(f"mode must be 'error' or 'overwrite', got {mode!r}",
                              code="ARGUMENT_INVALID")
    token = token or uuid.uuid4().hex[:12]
    if not _TOKEN.match(token):
        raise DefinitionError(f"token must match [A-Za-z0-9_-]{{1,64}}, got {token!r}",
                              code="ARGUMENT_INVALID")
    parts = tuple(partition_by or ())
    for col in parts:
        if col not in df.columns:
            raise InputError(f"partition column {col!r} is not in the DataFrame",
                             code="COLUMN_MISSING")
    spark = df.sparkSession
    schema_json = df.schema.json()
    existing = list(open_store(loc, settings).list(hidden=False))
    if existing and mode == "error":
        raise StateError(f"{loc} already holds {len(existing)} file(s); use "
                         "mode='overwrite' or a new location", code="FRAME_EXISTS")
    if mode == "overwrite":
        delete_location(loc, settings)
    if use_spark_io(spark, loc, io):
        writer = df.write.mode("overwrite")
        if parts:
            writer = writer.partitionBy(*parts)
        writer.option("maxRecordsPerFile", max_rows_per_file).parquet(loc.spark_path)
        return _info_from_listing(loc, settings, schema_json, parts)
    meta = arrow_writes(df, loc, token, settings=settings, partition_by=parts,
                        max_rows_per_file=max_rows_per_file,
                        forward_credentials=forward_credentials)
    files = written_files(loc, meta.orderBy(F.col("task"), F.col("path")).collect())
    return FrameInfo(loc.uri, files, schema_json, parts)


def arrow_writes(df: Any, loc: Uri, token: str, *, settings: S3Settings | None = None,
                 partition_by: Sequence[str] = (), max_rows_per_file: int = 1_000_000,
                 forward_credentials: bool | None = None) -> Any:
    """Lazily, ``df`` written under ``loc`` by pyarrow in Spark tasks: a DataFrame of one small
    row per written file (``path``, ``rows``, ``bytes``, ``sha256``, ``task``) that writes when
    it runs — several of them unioned are written by one job. Collect it once and turn the
    rows into files with :func:`written_files`."""
    fs = task_filesystem(df.sparkSession, loc, settings, forward_credentials)
    parts = tuple(partition_by)
    data_cols = [c for c in df.columns if c not in parts]
    fn = _make_writer(fs, loc.arrow_path, token, max_rows_per_file, parts, data_cols)
    return df.mapInArrow(fn, struct_of(_META))


def arrow_rewrite(spark: Any, files: Sequence[FrameFile], schema: Any, loc: Uri, token: str, *,
                  settings: S3Settings | None = None, max_rows_per_file: int = 1_000_000,
                  forward_credentials: bool | None = None) -> Any:
    """:func:`arrow_writes`' lazy DataFrame for ``files`` (one scheme, at least one; checked
    and conformed to ``schema`` as ``read_frame(io="arrow")`` reads them) written again under
    ``loc`` in their order by ONE task whose Python worker reads and writes: no rows through
    the JVM, one worker. Several unioned run as one job, a task each."""
    struct = as_struct(schema)
    locs = _one_scheme("arrow_rewrite", [Uri.parse(f.path) for f in files])
    if not locs:
        raise InputError("arrow_rewrite: no files to rewrite", code="URI_INVALID")
    read = _make_reader(task_filesystem(spark, locs[0], settings, forward_credentials),
                        _reader_items(locs, files), struct.json(), (), large_var_types(spark))
    write = _make_writer(task_filesystem(spark, loc, settings, forward_credentials),
                         loc.arrow_path, token, max_rows_per_file, (), struct.fieldNames())

    def rewrite(ids: Iterator[Any]) -> Iterator[Any]:
        return write(read(ids))

    return spark.range(0, len(locs), 1, 1).mapInArrow(rewrite, struct_of(_META))


def written_files(loc: Uri, rows: Sequence[Any]) -> tuple[FrameFile, ...]:
    """The files of :func:`arrow_writes`' collected rows (URIs in ``loc``'s scheme)."""
    return tuple(FrameFile(str(Uri.from_arrow_path(loc.scheme, r["path"])), int(r["rows"]),
                           int(r["bytes"]), r["sha256"]) for r in rows)


def _info_from_listing(loc: Uri, settings: S3Settings | None, schema_json: str,
                       parts: tuple[str, ...]) -> FrameInfo:
    """Files Spark wrote, with row counts from their Parquet footers (metadata only)."""
    import pyarrow.parquet as pq

    fs = arrow_filesystem(loc, settings)
    files = []
    for obj in open_store(loc, settings).list(hidden=False):
        if not obj.key.endswith(".parquet"):
            continue
        path = loc.child(obj.key).arrow_path
        rows = pq.ParquetFile(fs.open_input_file(path)).metadata.num_rows
        files.append(FrameFile(obj.uri, rows, obj.size))
    return FrameInfo(loc.uri, tuple(files), schema_json, parts)


def _make_writer(fs: TaskFilesystem, base: str, token: str, max_rows: int,
                 parts: tuple[str, ...], data_cols: list[str]) -> Any:
    def write(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx is not None else 0
        files = PartFiles(fs, task, token, max_rows)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            if not parts:
                files.write(base, base, batch)
                continue
            for directory, sub in split_partitions(pa.Table.from_batches([batch]), parts,
                                                   data_cols):
                for rb in sub.to_batches():
                    files.write(f"{base}/{directory}", f"{base}/{directory}", rb)
        done = [{**{k: f[k] for k in ("path", "rows", "bytes", "sha256")}, "task": task}
                for f in files.close()]
        yield pa.RecordBatch.from_pylist(done, schema=pa.schema([
            ("path", pa.string()), ("rows", pa.int64()), ("bytes", pa.int64()),
            ("sha256", pa.string()), ("task", pa.int32())]))

    return write


# --- reading ----------------------------------------------------------------------------------

def read_frame(spark: Any, source: str | FrameInfo | Sequence[str | FrameFile], schema: Any,
               *, settings: S3Settings | None = None, io: str = "auto",
               parallelism: int | None = None, forward_credentials: bool | None = None) -> Any:
    """A DataFrame of ``schema`` over Parquet files, read by Spark tasks.

    ``source`` is a location URI (every visible ``*.parquet`` file below it), a
    :class:`FrameInfo` (exactly its files, and its ``partition_by`` columns restored from the
    paths) or a list of file URIs or ``FrameFile`` (one scheme). No files: an empty DataFrame of
    ``schema``. Columns missing from a file read as nulls; extra columns are ignored.

    Recorded files (``FrameInfo``, ``FrameFile``) are checked: present with their size before
    the DataFrame is returned (``check_frames``: one listing), and again, with their SHA-256,
    by the tasks that read them — a damaged file is ``CHECKPOINT_CORRUPT``, never misread (in
    a task the error reaches the caller through Spark's task failure, with its code).
    """
    struct = as_struct(schema)
    parts: tuple[str, ...] = ()
    recorded: list[FrameFile] = []
    if isinstance(source, FrameInfo):
        base = Uri.parse(source.uri)
        recorded, parts = list(source.files), source.partition_by
        check_frames([source], source.uri, settings)
    elif isinstance(source, str):
        base = Uri.parse(source)
        recorded = [FrameFile(o.uri, 0, o.size) for o in
                    open_store(base, settings).list(hidden=False) if o.key.endswith(".parquet")]
    else:
        base = None
        recorded = [f if isinstance(f, FrameFile) else FrameFile(f, 0, -1) for f in source]
    locs = _one_scheme("read_frame", [Uri.parse(f.path) for f in recorded])
    if not locs:
        return spark.createDataFrame([], struct)
    checked = any(f.sha256 for f in recorded)
    if use_spark_io(spark, locs[0], io) and not checked:
        reader = spark.read.schema(struct)
        if base is not None and parts:
            reader = reader.option("basePath", base.spark_path)
        df = reader.parquet(*[loc.spark_path for loc in locs])
        # one JVM call per column
        return df.selectExpr(*[sql_identifier(name) for name in struct.fieldNames()])
    fs = task_filesystem(spark, locs[0], settings, forward_credentials)
    items = _reader_items(locs, recorded)
    n = io_parallelism(spark, len(items), parallelism)
    ids = spark.range(0, len(items), 1, n)
    return ids.mapInArrow(_make_reader(fs, items, struct.json(), parts, large_var_types(spark)),
                          struct)


def check_frames(frames: Sequence[FrameInfo], root: str,
                 settings: S3Settings | None = None) -> None:
    """Raise ``CHECKPOINT_CORRUPT`` unless every file of ``frames`` is below ``root`` with its
    recorded size (ONE listing of ``root``, whatever the number of files)."""
    expected = [(f.path, f.bytes) for frame in frames for f in frame.files]
    if not expected:
        return
    listing = {o.uri: o.size for o in open_store(Uri.parse(root), settings).list(hidden=True)}
    check_sizes(expected, listing)


def arrow_target_schema(struct: Any, large: bool) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC", prefers_large_types=large)


def conform(table: Any, target: Any, constants: dict[str, Any] | None = None) -> Any:
    """``table`` with exactly ``target``'s columns in order: missing columns are null (or
    the given constant, e.g. a partition value); types are cast safely (raises on loss)."""
    import pyarrow as pa

    arrays = []
    for fld in target:
        if constants and fld.name in constants:
            value = constants[fld.name]
            raw = pa.array([None if value == NULL_PARTITION else value] * table.num_rows,
                           pa.string())
            arrays.append(raw.cast(fld.type))
        elif fld.name in table.column_names:
            col = table[fld.name]
            arrays.append(col if col.type == fld.type else col.cast(fld.type))
        else:
            arrays.append(pa.nulls(table.num_rows, fld.type))
    return pa.Table.from_arrays(arrays, schema=target)


def _one_scheme(what: str, locs: list[Uri]) -> list[Uri]:
    """``locs``, or ``URI_INVALID`` when they mix schemes (one task filesystem reads them)."""
    if len({loc.scheme for loc in locs}) > 1:
        raise InputError(f"{what}: all files must use one scheme", code="URI_INVALID")
    return locs


def _reader_items(locs: Sequence[Uri], files: Sequence[FrameFile]
                  ) -> list[tuple[str, str, int | None, str | None]]:
    """What ``_make_reader``'s tasks read: per file its Arrow path, URI, size (``None``:
    unknown) and SHA-256."""
    return [(loc.arrow_path, f.path, f.bytes if f.bytes >= 0 else None, f.sha256)
            for loc, f in zip(locs, files)]


def _make_reader(fs: TaskFilesystem, items: list[tuple[str, str, int | None, str | None]],
                 schema_json: str, parts: tuple[str, ...], large: bool) -> Any:
    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.sql.types import StructType

        target = arrow_target_schema(StructType.fromJson(json.loads(schema_json)), large)
        filesystem = fs.open()
        for batch in batches:
            for i in batch.column(0).to_pylist():
                path, uri, size, sha256 = items[i]
                consts = {k: v for k, v in partition_values(path).items() if k in parts}
                data = verified_bytes(filesystem, path, uri, size, sha256)
                try:
                    pf = pq.ParquetFile(pa.BufferReader(data))
                    tables = [pa.Table.from_batches([rb])
                              for rb in pf.iter_batches(batch_size=65_536)]
                except (pa.ArrowException, OSError) as exc:
                    from windowlib.state.checksums import corrupt

                    raise corrupt(uri, f"is not a readable Parquet file ({exc})") from None
                for table in tables:
                    yield from conform(table, target, consts).to_batches()

    return read
