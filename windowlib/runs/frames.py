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
from windowlib.state.hive import NULL_PARTITION, partition_values, split_partitions
from windowlib.state.s3config import S3Settings
from windowlib.state.stores import delete_location, open_store
from windowlib.state.taskfs import TaskFilesystem, arrow_filesystem, task_filesystem
from windowlib.state.uri import Uri

__all__ = ["FrameFile", "FrameInfo", "PartFiles", "conform", "read_frame", "write_frame"]

IO_MODES = ("auto", "spark", "arrow")
S3_IO_CONF = "spark.windowlib.io.s3"
PARALLELISM_CONF = "spark.windowlib.io.parallelism"
_TOKEN = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_META_DDL = "path string, rows long, bytes long, task int"


def use_spark_io(spark: Any, loc: Uri, io: str = "auto") -> bool:
    """Whether Spark's own reader/writer handles ``loc`` (see the module docstring)."""
    if io not in IO_MODES:
        raise DefinitionError(f"io must be one of {IO_MODES}, got {io!r}", code="ARGUMENT_INVALID")
    if io != "auto":
        return io == "spark"
    if loc.scheme == "file":
        return True
    try:
        return str(spark.conf.get(S3_IO_CONF, "arrow")).lower() == "spark"
    except Exception:   # pragma: no cover
        return False


def io_parallelism(spark: Any, n_items: int, parallelism: int | None = None) -> int:
    """Tasks for ``n_items`` files: explicit, else the ``spark.windowlib.io.parallelism`` conf,
    else the cluster's default parallelism (8 when unknown, e.g. over Spark Connect)."""
    if parallelism is None:
        try:
            conf = spark.conf.get(PARALLELISM_CONF, None)
        except Exception:   # pragma: no cover
            conf = None
        if conf:
            parallelism = int(conf)
        else:
            try:
                parallelism = int(spark.sparkContext.defaultParallelism) * 2
            except Exception:
                parallelism = 8
    return max(1, min(n_items, parallelism))


def large_var_types(spark: Any) -> bool:
    try:
        value = spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
    except Exception:   # pragma: no cover
        return False
    return str(value).lower() == "true"


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
    path: str
    rows: int
    bytes: int


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
                "files": [{"path": f.path, "rows": f.rows, "bytes": f.bytes} for f in self.files]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FrameInfo:
        return cls(data["uri"], tuple(FrameFile(f["path"], int(f["rows"]), int(f["bytes"]))
                                      for f in data["files"]),
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
    fs = task_filesystem(spark, loc, settings, forward_credentials)
    data_cols = [c for c in df.columns if c not in parts]
    fn = _make_writer(fs, loc.arrow_path, token, max_rows_per_file, parts, data_cols)
    meta = df.mapInArrow(fn, _META_DDL).orderBy(F.col("task"), F.col("path"))
    files = tuple(FrameFile(str(Uri.from_arrow_path(loc.scheme, r["path"])), int(r["rows"]),
                            int(r["bytes"]))
                  for r in meta.collect())    # one small row per file written
    return FrameInfo(loc.uri, files, schema_json, parts)


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


class PartFiles:
    """The Parquet part files one Spark task writes (inside the task): under each directory,
    ``part-{task:05d}-{token}-{seq:03d}.parquet`` — unique per write, deterministic per task, so
    a retried attempt overwrites its own files — rolled over at ``max_rows`` rows. ``close``
    returns one ``{"key", "path", "rows", "bytes"}`` per file written (``key``: the caller's
    name for the directory's stream)."""

    def __init__(self, fs: TaskFilesystem, task: int, token: str, max_rows: int) -> None:
        self.fs, self.task, self.token, self.max_rows = fs, task, token, max_rows
        self._filesystem: Any = None
        self._open: dict[str, list[Any]] = {}   # key -> [stream, writer, rows, seq, path]
        self._done: list[dict[str, Any]] = []

    def write(self, key: str, directory: str, batch: Any) -> None:
        import pyarrow.parquet as pq

        if self._filesystem is None:
            self._filesystem = self.fs.open()
        while batch.num_rows:
            state = self._open.get(key)
            if state is None or state[1] is None:
                seq = 0 if state is None else state[3] + 1
                if self.fs.scheme == "file":     # S3 has no directories to create
                    self._filesystem.create_dir(directory, recursive=True)
                path = f"{directory}/part-{self.task:05d}-{self.token}-{seq:03d}.parquet"
                stream = self._filesystem.open_output_stream(path)
                state = [stream, pq.ParquetWriter(stream, batch.schema), 0, seq, path]
                self._open[key] = state
            room = self.max_rows - state[2]
            state[1].write_batch(batch.slice(0, room))
            state[2] += min(room, batch.num_rows)
            batch = batch.slice(room)
            if state[2] >= self.max_rows:     # a file never holds more than max_rows
                self._close(key, state)

    def _close(self, key: str, state: list[Any]) -> None:
        stream, writer, rows, _, path = state
        writer.close()
        size = stream.tell()
        stream.close()
        state[1] = None
        self._done.append({"key": key, "path": path, "rows": rows, "bytes": size})

    def close(self) -> list[dict[str, Any]]:
        for key, state in self._open.items():
            if state[1] is not None:
                self._close(key, state)
        return self._done


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
        done = [{"path": f["path"], "rows": f["rows"], "bytes": f["bytes"], "task": task}
                for f in files.close()]
        yield pa.RecordBatch.from_pylist(done, schema=pa.schema([
            ("path", pa.string()), ("rows", pa.int64()), ("bytes", pa.int64()),
            ("task", pa.int32())]))

    return write


# --- reading ----------------------------------------------------------------------------------

def read_frame(spark: Any, source: str | FrameInfo | Sequence[str], schema: Any, *,
               settings: S3Settings | None = None, io: str = "auto",
               parallelism: int | None = None, forward_credentials: bool | None = None) -> Any:
    """A DataFrame of ``schema`` over Parquet files, read by Spark tasks.

    ``source`` is a location URI (every visible ``*.parquet`` file below it), a
    :class:`FrameInfo` (exactly its files, and its ``partition_by`` columns restored from the
    paths) or a list of file URIs (one scheme). No files: an empty DataFrame of ``schema``.
    Columns missing from a file read as nulls; extra columns are ignored.
    """
    struct = as_struct(schema)
    parts: tuple[str, ...] = ()
    if isinstance(source, FrameInfo):
        base = Uri.parse(source.uri)
        files = [f.path for f in source.files]
        parts = source.partition_by
    elif isinstance(source, str):
        base = Uri.parse(source)
        files = [o.uri for o in open_store(base, settings).list(hidden=False)
                 if o.key.endswith(".parquet")]
    else:
        files = list(source)
        base = None
    locs = [Uri.parse(f) for f in files]
    if not locs:
        return spark.createDataFrame([], struct)
    schemes = {loc.scheme for loc in locs}
    if len(schemes) > 1:
        raise InputError("read_frame: all files must use one scheme", code="URI_INVALID")
    if use_spark_io(spark, locs[0], io):
        reader = spark.read.schema(struct)
        if base is not None and parts:
            reader = reader.option("basePath", base.spark_path)
        df = reader.parquet(*[loc.spark_path for loc in locs])
        return df.select(*[f"`{name}`" for name in struct.fieldNames()])
    fs = task_filesystem(spark, locs[0], settings, forward_credentials)
    paths = [loc.arrow_path for loc in locs]
    n = io_parallelism(spark, len(paths), parallelism)
    ids = spark.range(0, len(paths), 1, n)
    return ids.mapInArrow(_make_reader(fs, paths, struct.json(), parts, large_var_types(spark)),
                          struct)


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


def _make_reader(fs: TaskFilesystem, paths: list[str], schema_json: str,
                 parts: tuple[str, ...], large: bool) -> Any:
    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.sql.types import StructType

        target = arrow_target_schema(StructType.fromJson(json.loads(schema_json)), large)
        filesystem = fs.open()
        for batch in batches:
            for i in batch.column(0).to_pylist():
                path = paths[i]
                consts = {k: v for k, v in partition_values(path).items() if k in parts}
                with filesystem.open_input_file(path) as handle:
                    pf = pq.ParquetFile(handle)
                    for rb in pf.iter_batches(batch_size=65_536):
                        table = conform(pa.Table.from_batches([rb]), target, consts)
                        yield from table.to_batches()

    return read
