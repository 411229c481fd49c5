"""A one-shot run's walker output kept as Parquet files its own Python tasks write, instead of
Spark's in-memory cache.

A one-shot run on the general or pane path computes its walker's output once and reads it
several times (firings, late, rejects, side outputs). Cached with ``persist()``, every output
row crosses from Arrow into the JVM as a row, then into the cache's compressed column
batches with statistics per column: at a million firings that is about a third of the
walker stage's time (``docs/performance.md``, ninth session). Here the walker's Python task
writes its Arrow batches straight into Parquet files, and the outputs read them with Spark's
columnar Parquet reader (only the columns each output uses). Each kind of row (firings, late,
rejects, side outputs, statistics) goes to files of its own, in a directory named after it
(``__wl_kind=late``), so an output reads only its own rows' files: the late and rejects
outputs of a million firings read their few rows, not a column of every firing (measured:
0.13 s -> 0.07 s and 0.10 s -> 0.04 s in ``benchmarks/pane_stages.py``).

Invariants:

- Eligible only where every task and the driver see one file system: a classic session on a
  local master (``shipping.is_local_master``; not over Spark Connect, whose server may run
  elsewhere), and only for types Parquet keeps exactly (``_keeps``); otherwise, and when
  ``WALKER_OUTPUT_CONF`` is ``cache``, the caller persists as before (``None``).
- The files live in a new directory under the driver's Spark file root
  (``SparkFiles.getRootDirectory()``, which Spark deletes when its JVM stops) and are deleted
  by ``WalkerFiles.release`` (``SparkRunResult.unpersist``); after that the run's DataFrames
  cannot be read.
- One file per partition and kind, written under a hidden name and renamed into place when
  the task's walk ends, so a retried task replaces its partition's files (and removes those
  of kinds it no longer yields) and a failed one leaves none.
- The write is one Spark job, run by ``write_walker_output`` itself: a failure in it (a user
  function, a limit) is the same coded windowlib error as before (``errors.reraise``), and the
  directory is removed.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.columns import KIND, map_in_arrow
from windowlib.engines.spark.errors import reraise
from windowlib.engines.spark.session import conf_value
from windowlib.engines.spark.shipping import is_connect, is_local_master

__all__ = ["WALKER_OUTPUT_CONF", "WalkerFiles", "walker_output", "write_walker_output"]

WALKER_OUTPUT_CONF = "spark.windowlib.walkerOutput"    # files (default where eligible) | cache


@dataclass
class WalkerFiles:
    """The written output: ``frame`` reads it; ``release()`` deletes the files (idempotent)."""

    frame: Any
    directory: str

    def release(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def walker_output(rows: Any, walker: Callable[[Iterator[Any]], Iterator[Any]], schema: Any,
                  large_types: bool, keep: bool) -> tuple[Any, WalkerFiles | None]:
    """``(frame, files)``: ``walker``'s output over ``rows``. ``keep`` (one-shot runs, whose
    outputs read it several times): written as files where eligible (the walk runs now),
    else persisted (lazy: counting it runs the walk); otherwise the lazy ``mapInArrow``
    frame (``files`` is ``None`` unless written)."""
    files = write_walker_output(rows, walker, schema, large_types) if keep else None
    if files is not None:
        return files.frame, files
    frame = map_in_arrow(rows, walker, schema)
    return (frame.persist() if keep else frame), None


def write_walker_output(rows: Any, walker: Callable[[Iterator[Any]], Iterator[Any]],
                        schema: Any, large_types: bool) -> WalkerFiles | None:
    """Run ``walker`` over ``rows`` (``mapInArrow``) writing its output batches of ``schema``
    as Parquet files, and return the frame reading them; ``None`` where not eligible (module
    docstring). ``large_types``: the walker's Arrow string and list types are the large ones
    (``spark.sql.execution.arrow.useLargeVarTypes``)."""
    spark = rows.sparkSession
    if not _eligible(spark, schema):
        return None
    from pyspark import SparkFiles
    from pyspark.sql.types import LongType, StructField, StructType

    directory = os.path.join(SparkFiles.getRootDirectory(),
                             f"windowlib-walker-{uuid.uuid4().hex}")
    os.makedirs(directory)
    nothing = StructType([StructField("rows", LongType())])
    try:
        # a count, not a write: a failing task is reported as any job's (a write's abort
        # logs the worker's traceback on the console)
        map_in_arrow(rows, _file_writer(walker, directory, schema.json(), large_types),
                     nothing).count()
        frame = _read(spark, schema, directory)
    except BaseException as exc:
        shutil.rmtree(directory, ignore_errors=True)
        if isinstance(exc, Exception):
            reraise(exc)
        raise
    return WalkerFiles(frame, directory)


def _read(spark: Any, schema: Any, directory: str) -> Any:
    """The written files as a frame of ``schema`` (its column order: Spark puts a directory
    column last). A filter on ``KIND`` reads only that kind's files (partition pruning)."""
    from pyspark.sql import functions as F

    frame = spark.read.schema(schema).parquet(_file_uri(directory))
    if frame.columns == schema.fieldNames():
        return frame
    return frame.select(*[F.col(sql_identifier(name)) for name in schema.fieldNames()])


def _file_uri(directory: str) -> str:
    from pathlib import Path

    return Path(directory).as_uri()


def _eligible(spark: Any, schema: Any) -> bool:
    if is_connect(spark):
        return False
    setting = (conf_value(spark, WALKER_OUTPUT_CONF) or "files").strip().lower()
    return setting != "cache" and is_local_master(spark) and _keeps(schema)


def _keeps(data_type: Any) -> bool:
    """Whether Parquet written by pyarrow reads back into ``data_type`` exactly: numbers,
    strings, binary, booleans, dates, timestamps and decimals, nested in structs (field names
    distinct also ignoring case, as Spark's reader resolves them), arrays and maps."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.StructType):
        names = [f.name.lower() for f in data_type.fields]
        return len(set(names)) == len(names) and all(_keeps(f.dataType)
                                                     for f in data_type.fields)
    if isinstance(data_type, T.ArrayType):
        return _keeps(data_type.elementType)
    if isinstance(data_type, T.MapType):
        return _keeps(data_type.keyType) and _keeps(data_type.valueType)
    return isinstance(data_type, (T.NumericType, T.StringType, T.BinaryType, T.BooleanType,
                                  T.DateType, T.TimestampType, T.TimestampNTZType))


def _file_writer(walker: Callable[[Iterator[Any]], Iterator[Any]], directory: str,
                 schema_json: str, large_types: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: the walk of one partition into its files (it yields no
    rows). With a ``KIND`` column, one file per kind under ``KIND=<kind>/`` (the column is
    in the directory's name, not in the file); without one, a single file."""

    def write(batches: Iterator[Any]) -> Iterator[Any]:
        import json

        from pyspark import TaskContext
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType

        target = to_arrow_schema(StructType.fromJson(json.loads(schema_json)), timezone="UTC",
                                 prefers_large_types=large_types)
        task = TaskContext.get()
        files = _PartitionFiles(directory, task.partitionId() if task is not None else 0,
                                target)
        try:
            for batch in walker(batches):
                if not batch.schema.equals(target):
                    batch = batch.cast(target)
                files.write(batch)
            files.commit()
        finally:
            files.discard()
        yield from ()

    return write


class _PartitionFiles:
    """One partition's output files: written under hidden names, renamed into place by
    ``commit`` (which also removes the files an earlier attempt of the partition wrote for
    kinds this one did not yield), removed by ``discard`` unless committed."""

    def __init__(self, directory: str, partition: int, target: Any) -> None:
        self.directory = directory
        self.name = f"part-{partition:05d}.parquet"
        self.hidden = f".part-{partition:05d}-{uuid.uuid4().hex}.parquet"
        self.kind_at = target.get_field_index(KIND)      # -1: no kinds
        self.stored = target if self.kind_at < 0 else target.remove(self.kind_at)
        self.open: dict[str | None, tuple[Any, str]] = {}    # kind -> (writer, folder)

    def write(self, batch: Any) -> None:
        if self.kind_at < 0:
            self._writer(None).write_batch(batch)
            return
        import pyarrow.compute as pc

        kinds = batch.column(self.kind_at)
        rows = batch.remove_column(self.kind_at)
        present = pc.unique(kinds).to_pylist()       # usually one: the walker's batches
        for kind in present:                          # are of one kind
            part = rows if len(present) == 1 else rows.filter(pc.equal(kinds, kind))
            self._writer(kind).write_batch(part)

    def _writer(self, kind: str | None) -> Any:
        entry = self.open.get(kind)
        if entry is None:
            import pyarrow.parquet as pq

            folder = self.directory if kind is None else os.path.join(
                self.directory, f"{KIND}={_kind_name(kind)}")
            os.makedirs(folder, exist_ok=True)
            # short-lived files on local disk, read a few times: plain pages, no
            # dictionaries (most of their strings are distinct JSON texts)
            writer = pq.ParquetWriter(os.path.join(folder, self.hidden), self.stored,
                                      compression="none", use_dictionary=False)
            entry = self.open[kind] = (writer, folder)
        return entry[0]

    def commit(self) -> None:
        for writer, folder in self.open.values():
            writer.close()
            os.replace(os.path.join(folder, self.hidden), os.path.join(folder, self.name))
        written = {folder for _, folder in self.open.values()}
        self.open = {}
        if self.kind_at < 0:
            return
        for entry in os.scandir(self.directory):
            stale = os.path.join(entry.path, self.name)
            if entry.is_dir() and entry.path not in written and os.path.exists(stale):
                os.remove(stale)

    def discard(self) -> None:
        for writer, folder in self.open.values():
            writer.close()
            hidden = os.path.join(folder, self.hidden)
            if os.path.exists(hidden):
                os.remove(hidden)
        self.open = {}


def _kind_name(kind: Any) -> str:
    """A row kind as a directory name: the walker's kinds are plain words; anything else is
    a defect of the walker, not data to write under an unsafe name."""
    if not isinstance(kind, str) or not kind.isidentifier():
        raise ValueError(f"unexpected walker row kind {kind!r}")
    return kind
