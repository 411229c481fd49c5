"""DataFrames in ``file://`` and ``s3://`` locations, moved by Spark tasks in parallel.

Invariants:

- Data never passes through the driver. The driver only lists objects, deletes a prefix on
  ``mode="overwrite"`` and receives one small metadata row per written file (path, rows, bytes).
- Two I/O paths (``io=``): ``"spark"`` uses Spark's own Parquet reader/writer (``file://``, and
  ``s3://`` as ``s3a://`` on clusters with Hadoop's S3 connector); ``"arrow"`` runs pyarrow inside
  ``mapInArrow`` tasks (``pyarrow.fs.S3FileSystem`` for ``s3://``, which needs no Hadoop
  connector). ``"auto"`` (default) picks ``spark`` for ``file://`` and ``arrow`` for ``s3://``,
  unless the session conf ``spark.windowlib.io.s3`` is ``"spark"`` (a cluster with s3a).
- Arrow-path file names are ``part-{partition:05d}-{token}-{seq:03d}.parquet``: unique per write
  (``token``), deterministic per task, so a retried task attempt overwrites its own files.
- Timestamps are written and read as UTC instants (``timestamp[us, UTC]``).
- Credentials: tasks build their Arrow filesystem from :class:`S3Settings` pickled without
  secrets, so executors use their own credential chain (environment, instance profile...).
  On a local master (same machine, same user) the driver's resolved credentials are forwarded
  inside the task closure, because the workers' environment was fixed when the JVM started;
  ``forward_credentials=`` overrides the choice. Credentials never appear in reprs or logs.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from windowlib.core.errors import InputError, StateError
from windowlib.state.s3config import S3Settings

__all__ = ["FrameFile", "FrameInfo", "Location", "ObjectInfo", "list_objects",
           "parse_location", "read_frame", "write_frame"]

IO_MODES = ("auto", "spark", "arrow")
S3_IO_CONF = "spark.windowlib.io.s3"
PARALLELISM_CONF = "spark.windowlib.io.parallelism"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_TOKEN = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_META_DDL = "path string, rows long, bytes long, task int"


# --- locations --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Location:
    """A validated ``file://`` or ``s3://`` location; ``key`` has no leading/trailing ``/``
    (for ``file://`` it is the absolute path without its leading ``/``)."""

    scheme: str                  # "file" | "s3"
    bucket: str                  # "" for file://
    key: str

    @property
    def uri(self) -> str:
        if self.scheme == "file":
            return f"file:///{self.key}"
        return f"s3://{self.bucket}/{self.key}" if self.key else f"s3://{self.bucket}"

    @property
    def arrow_path(self) -> str:
        """The path as pyarrow's filesystems spell it."""
        return f"/{self.key}" if self.scheme == "file" else f"{self.bucket}/{self.key}".rstrip("/")

    @property
    def spark_path(self) -> str:
        """The path as Spark's (Hadoop) readers spell it; ``s3://`` becomes ``s3a://``."""
        return self.uri if self.scheme == "file" else "s3a" + self.uri[2:]

    def child(self, relative: str) -> Location:
        """A location below this one; ``relative`` is validated like any user path."""
        parts = _clean_parts(relative, self.uri)
        return Location(self.scheme, self.bucket, "/".join([p for p in [self.key] if p] + parts))


def _clean_parts(path: str, uri: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    for p in parts:
        if p in (".", "..") or "\x00" in p or "\\" in p:
            raise InputError(f"location {uri!r}: path segments '.', '..', backslashes and NUL "
                             "are not allowed", code="URI_INVALID")
    return parts


def parse_location(uri: str) -> Location:
    """Parse and validate a ``file:///abs/path`` or ``s3://bucket/prefix`` URI
    (``s3a://`` is accepted as ``s3://``). Raises ``InputError(URI_INVALID)``."""
    if not isinstance(uri, str) or not uri:
        raise InputError(f"a location must be a non-empty URI string, got {uri!r}",
                         code="URI_INVALID")
    if uri.startswith("file://"):
        rest = uri[len("file://"):]
        if not rest.startswith("/"):
            raise InputError(f"file URIs must be absolute: file:///path (got {uri!r})",
                             code="URI_INVALID")
        return Location("file", "", "/".join(_clean_parts(rest, uri)))
    for prefix in ("s3://", "s3a://"):
        if uri.startswith(prefix):
            bucket, _, key = uri[len(prefix):].partition("/")
            if not _BUCKET.match(bucket):
                raise InputError(f"{uri!r}: invalid bucket name {bucket!r}", code="URI_INVALID")
            if "?" in key or "#" in key:
                raise InputError(f"{uri!r}: query strings and fragments are not allowed "
                                 "(credentials go in the AWS_* environment)", code="URI_INVALID")
            return Location("s3", bucket, "/".join(_clean_parts(key, uri)))
    raise InputError(f"unsupported location {uri!r}: use file:///absolute/path or "
                     "s3://bucket/prefix", code="URI_INVALID")


# --- listing ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ObjectInfo:
    """One file: ``uri``, ``relative`` path below the listed location, ``size`` in bytes and
    ``version`` (the S3 ETag without quotes, or ``mtime_ns:<int>`` for local files)."""

    uri: str
    relative: str
    size: int
    version: str


def is_hidden(relative: str) -> bool:
    """Spark's and Hadoop's rule plus temp files: a segment starting with ``_`` or ``.``
    (``_SUCCESS``, ``_temporary``, ``.crc``), or a name ending in ``.tmp``/``~``/``.crc``."""
    parts = relative.split("/")
    name = parts[-1]
    return (any(p.startswith(("_", ".")) for p in parts) or name.endswith((".tmp", "~", ".crc"))
            or not name)


def _settings(settings: S3Settings | None) -> S3Settings:
    return settings if settings is not None else S3Settings.resolve()


def list_objects(loc: Location, settings: S3Settings | None = None, *,
                 include_hidden: bool = False) -> list[ObjectInfo]:
    """Every file below ``loc`` (recursively), sorted by relative path. Driver-side metadata
    only (``os.scandir`` / one paginated ``ListObjectsV2``). A missing location lists empty."""
    out: list[ObjectInfo] = []
    if loc.scheme == "file":
        root = "/" + loc.key
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in filenames:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                try:
                    st = os.stat(full)
                except FileNotFoundError:      # removed while listing
                    continue
                out.append(ObjectInfo("file://" + full, rel, st.st_size,
                                      f"mtime_ns:{st.st_mtime_ns}"))
    else:
        client = _settings(settings).client()
        prefix = loc.key + "/" if loc.key else ""
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=loc.bucket,
                                                                     Prefix=prefix):
            for obj in page.get("Contents", []):
                rel = obj["Key"][len(prefix):]
                if not rel or rel.endswith("/"):
                    continue
                out.append(ObjectInfo(f"s3://{loc.bucket}/{obj['Key']}", rel, int(obj["Size"]),
                                      str(obj.get("ETag", "")).strip('"')))
    out = [o for o in out if include_hidden or not is_hidden(o.relative)]
    return sorted(out, key=lambda o: o.relative)


def _delete_all(loc: Location, settings: S3Settings | None) -> None:
    if loc.scheme == "file":
        import shutil
        shutil.rmtree("/" + loc.key, ignore_errors=True)
        return
    client = _settings(settings).client()
    keys = [o.uri.split("/", 3)[3] for o in list_objects(loc, settings, include_hidden=True)]
    for i in range(0, len(keys), 1000):
        client.delete_objects(Bucket=loc.bucket, Delete={
            "Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})


# --- task-side filesystems --------------------------------------------------------------------

class _Secret:
    """Forwarded credentials (see the module docstring); never shown in reprs."""

    def __init__(self, creds: tuple[str, str, str | None]) -> None:
        self.creds = creds

    def __repr__(self) -> str:
        return "_Secret(***)"


@dataclass(frozen=True)
class TaskFilesystem:
    """Everything a task needs to rebuild the Arrow filesystem of a location (picklable)."""

    scheme: str
    settings: S3Settings | None = None
    secret: _Secret | None = field(default=None, repr=False, compare=False)

    def open(self) -> Any:
        from pyarrow import fs as pafs

        if self.scheme == "file":
            return pafs.LocalFileSystem()
        settings = self.settings or S3Settings.resolve()
        if self.secret is not None:
            import dataclasses
            key, secret, token = self.secret.creds
            settings = dataclasses.replace(settings, access_key_id=key,
                                           secret_access_key=secret, session_token=token)
        return settings.arrow_filesystem()


def _is_local_master(spark: Any) -> bool:
    try:
        return str(spark.conf.get("spark.master", "")).startswith("local")
    except Exception:   # pragma: no cover - restricted Connect servers
        return False


def task_filesystem(spark: Any, loc: Location, settings: S3Settings | None = None,
                    forward_credentials: bool | None = None) -> TaskFilesystem:
    """The picklable filesystem description for tasks reading/writing ``loc``."""
    if loc.scheme == "file":
        return TaskFilesystem("file")
    resolved = _settings(settings)
    forward = _is_local_master(spark) if forward_credentials is None else forward_credentials
    creds = resolved.frozen_credentials() if forward else None
    return TaskFilesystem("s3", resolved.public(), _Secret(creds) if creds else None)


def use_spark_io(spark: Any, loc: Location, io: str = "auto") -> bool:
    """Whether Spark's own reader/writer handles ``loc`` (see the module docstring)."""
    if io not in IO_MODES:
        raise InputError(f"io must be one of {IO_MODES}, got {io!r}", code="ARGUMENT_INVALID")
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

    loc = parse_location(uri)
    if max_rows_per_file < 1:
        raise InputError("max_rows_per_file must be >= 1", code="ARGUMENT_INVALID")
    if mode not in ("error", "overwrite"):
        raise InputError(f"mode must be 'error' or 'overwrite', got {mode!r}",
                         code="ARGUMENT_INVALID")
    token = token or uuid.uuid4().hex[:12]
    if not _TOKEN.match(token):
        raise InputError(f"token must match [A-Za-z0-9_-]{{1,64}}, got {token!r}",
                         code="ARGUMENT_INVALID")
    parts = tuple(partition_by or ())
    for col in parts:
        if col not in df.columns:
            raise InputError(f"partition column {col!r} is not in the DataFrame",
                             code="COLUMN_MISSING")
    spark = df.sparkSession
    schema_json = df.schema.json()
    existing = list_objects(loc, settings)
    if existing and mode == "error":
        raise StateError(f"{loc.uri} already holds {len(existing)} file(s); use "
                         "mode='overwrite' or a new location", code="FRAME_EXISTS")
    if mode == "overwrite":
        _delete_all(loc, settings)
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
    files = tuple(FrameFile(_uri_of(loc, r["path"]), int(r["rows"]), int(r["bytes"]))
                  for r in meta.collect())    # one small row per file written
    return FrameInfo(loc.uri, files, schema_json, parts)


def _uri_of(loc: Location, arrow_path: str) -> str:
    return "file://" + arrow_path if loc.scheme == "file" else "s3://" + arrow_path


def _info_from_listing(loc: Location, settings: S3Settings | None, schema_json: str,
                       parts: tuple[str, ...]) -> FrameInfo:
    """Files Spark wrote, with row counts from their Parquet footers (metadata only)."""
    import pyarrow.parquet as pq

    fs = TaskFilesystem(loc.scheme, _settings(settings) if loc.scheme == "s3" else None,
                        ).open()
    files = []
    for obj in list_objects(loc, settings):
        if not obj.relative.endswith(".parquet"):
            continue
        path = parse_location(obj.uri).arrow_path
        rows = pq.ParquetFile(fs.open_input_file(path)).metadata.num_rows
        files.append(FrameFile(obj.uri, rows, obj.size))
    return FrameInfo(loc.uri, tuple(files), schema_json, parts)


_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(i) for i in range(32)}
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


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
        import pyarrow.compute as pc
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
            table = pa.Table.from_batches([batch])
            keys = table.select(list(parts)).group_by(list(parts)).aggregate([]).to_pylist()
            for key in keys:
                mask = None
                for col in parts:
                    value = key[col]
                    cond = (pc.is_null(table[col]) if value is None
                            else pc.equal(table[col], value))
                    mask = cond if mask is None else pc.and_(mask, cond)
                sub = table.filter(mask).select(data_cols).combine_chunks()
                sub_dir = "/".join([base] + [f"{c}={escape_partition_value(key[c])}"
                                             for c in parts])
                for rb in sub.to_batches():
                    files.write(sub_dir, sub_dir, rb)
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
        base = parse_location(source.uri)
        files = [f.path for f in source.files]
        parts = source.partition_by
    elif isinstance(source, str):
        base = parse_location(source)
        files = [o.uri for o in list_objects(base, settings) if o.relative.endswith(".parquet")]
    else:
        files = list(source)
        base = None
    locs = [parse_location(f) for f in files]
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


def partition_values(path: str) -> dict[str, str]:
    """``col=value`` segments of a path, unescaped (Hive style)."""
    out: dict[str, str] = {}
    for seg in path.split("/")[:-1]:
        name, eq, value = seg.partition("=")
        if eq and name:
            out[name] = unquote(value)
    return out


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
                        table = conform(_table(rb), target, consts)
                        yield from table.to_batches()

    return read


def _table(batch: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_batches([batch])
