"""A one-shot run's walker output kept as Parquet files its own Python tasks write, instead of
Spark's in-memory cache.

A one-shot run on the general or pane path computes its walker's output once and reads it
several times (firings, late, rejects, side outputs). Cached with ``persist()``, every output
row crosses from Arrow into the JVM as a row, then into the cache's compressed column
batches with statistics per column: at a million firings that is about a third of the
walker stage's time (``docs/performance.md``, ninth session). Here the walker's Python task
writes its Arrow batches straight into one Parquet file per partition, and the outputs read
them with Spark's columnar Parquet reader (only the columns each output uses).

Invariants:

- Eligible only where every task and the driver see one file system: a classic session on a
  local master (``shipping.is_local_master``; not over Spark Connect, whose server may run
  elsewhere), and only for types Parquet keeps exactly (``_keeps``); otherwise, and when
  ``WALKER_OUTPUT_CONF`` is ``cache``, the caller persists as before (``None``).
- The files live in a new directory under the driver's Spark file root
  (``SparkFiles.getRootDirectory()``, which Spark deletes when its JVM stops) and are deleted
  by ``WalkerFiles.release`` (``SparkRunResult.unpersist``); after that the run's DataFrames
  cannot be read.
- One file per partition, written under a hidden name and renamed into place when the task's
  walk ends, so a retried task replaces its partition's file and a failed one leaves none.
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

from windowlib.engines.spark.columns import map_in_arrow
from windowlib.engines.spark.errors import reraise
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
        frame = spark.read.schema(schema).parquet(_file_uri(directory))
    except BaseException as exc:
        shutil.rmtree(directory, ignore_errors=True)
        if isinstance(exc, Exception):
            reraise(exc)
        raise
    return WalkerFiles(frame, directory)


def _file_uri(directory: str) -> str:
    from pathlib import Path

    return Path(directory).as_uri()


def _eligible(spark: Any, schema: Any) -> bool:
    if is_connect(spark):
        return False
    try:
        setting = str(spark.conf.get(WALKER_OUTPUT_CONF, "files")).strip().lower()
    except Exception:  # pragma: no cover - a conf that cannot be read: keep the cache
        return False
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
    """The ``mapInArrow`` function: the walk of one partition into its one file (it yields
    no rows)."""

    def write(batches: Iterator[Any]) -> Iterator[Any]:
        import json

        import pyarrow.parquet as pq
        from pyspark import TaskContext
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType

        target = to_arrow_schema(StructType.fromJson(json.loads(schema_json)), timezone="UTC",
                                 prefers_large_types=large_types)
        task = TaskContext.get()
        part = task.partitionId() if task is not None else 0
        final = os.path.join(directory, f"part-{part:05d}.parquet")
        partial = os.path.join(directory, f".part-{part:05d}-{uuid.uuid4().hex}.parquet")
        try:
            # short-lived files on local disk, read a few times: plain pages, no
            # dictionaries (most of their strings are distinct JSON texts)
            with pq.ParquetWriter(partial, target, compression="none",
                                  use_dictionary=False) as out:
                for batch in walker(batches):
                    if not batch.schema.equals(target):
                        batch = batch.cast(target)
                    out.write_batch(batch)
            os.replace(partial, final)
        finally:
            if os.path.exists(partial):
                os.remove(partial)
        yield from ()

    return write
