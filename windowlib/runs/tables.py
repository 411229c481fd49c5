"""Published outputs as tables: the Delta tables of ``windowlib.state.tables`` kept in step
with the commit records, and their names in Spark's catalog.

- :func:`sync_tables` brings every output table of a pipeline to its current checkpoint version
  (one Delta commit per table; nothing when in step). ``publish_run`` and rebuilds call it
  right after the commit record; every run calls it first, so a crash between the record and
  the tables is repaired by the next run (and until then the tables show the previous
  version whole). A table failure never fails a published run: it is reported and retried.
- :func:`register_tables` names the tables in a Spark session's catalog
  (``runs/catalog.py``: ``<db>.<pipeline>_<output>`` and the view ``<db>.<pipeline>_latest``);
  a publish does it too, after it compacted the tables holding many small files
  (``runs/compaction``), so what Spark lists there stays bounded over history.
- :func:`open_table` / :func:`read_table`: a table at its current version or back in time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from windowlib.core.errors import DefinitionError, StateError
from windowlib.core.outputs import OUTPUTS
from windowlib.engines.spark.session import run_together
from windowlib.runs.catalog import DEFAULT_DATABASE, database_name, register_names, spark_names
from windowlib.runs.outputs import reader_store
from windowlib.runs.protocol import CommitDetails
from windowlib.state.checkpoint import CheckpointStore
from windowlib.state.s3config import S3Settings
from windowlib.state.tables import OutputTable, TableSnapshot, snapshot_files

__all__ = ["open_table", "read_table", "register_tables", "spark_names", "sync_tables",
           "table_info"]

log = logging.getLogger(__name__)


def _tables(cs: CheckpointStore, settings: S3Settings | None) -> dict[str, OutputTable]:
    return {name: OutputTable(cs.pipeline_store, name, settings) for name in OUTPUTS}


def _snapshot(cs: CheckpointStore, table: OutputTable, head: Any, dt: Any,
              committed: Callable[[], list[Any]]) -> TableSnapshot | str | None:
    """What ``table`` must show for ``head``: the table's files plus the head run's when the
    table shows the head's parent (one record read), else every committed run's files
    (``committed()``, read on first need). ``None``: an output this pipeline never writes;
    a string: why the table cannot show it."""
    from pyspark.sql.types import StructType

    from windowlib.runs.frames import arrow_target_schema

    def frame(commit: Any) -> Any:
        return CommitDetails.of(commit.extra).frames.get(table.name)

    top = frame(head)
    if not top or not top.get("schema"):
        return None
    state = table.state(dt) if dt is not None else None
    if head.kind == "run" and state is not None \
            and state.checkpoint_version == head.record.get("parent_version"):
        frames, base = [top], table.files(dt)
    else:
        frames, base = [f for c in committed() if (f := frame(c))], []
    files = snapshot_files(table, [(x["path"], int(x["bytes"]), int(x["rows"]))
                                   for f in frames for x in f["files"]])
    if files is None:
        return ("files staged before tables existed (an older windowlib); a rebuild "
                "(--rebuild) brings the table")
    schema = arrow_target_schema(StructType.fromJson(top["schema"]), False)
    return TableSnapshot(head.version, head.generation, head.run_id, (*base, *files), schema)


def sync_tables(source: str | CheckpointStore, *, settings: S3Settings | None = None,
                spark: Any = None, catalog: bool = True) -> dict[str, Any]:
    """Bring the output tables of ``source`` (an output location or a checkpoint store) to
    the current checkpoint version (a rebuild's own line is skipped: readers see it only once
    published). Returns ``{output: {"version", "delta_version"}
    | {"error", "code"}}``; never raises for a table (``TABLE_UNAVAILABLE`` is reported and
    logged). With ``catalog``, when a table moved, the names in ``spark``'s catalog (default:
    the active session, if any, when it can read the location) move too
    (:func:`register_tables`), after the tables over their file budget are compacted
    (``runs/compaction``: what the catalog lists stays bounded)."""
    cs = source if isinstance(source, CheckpointStore) else reader_store(source, settings)
    if cs.line:
        return {}
    tables = _tables(cs, settings)
    report: dict[str, Any] = {}
    moved = False
    try:
        head = cs.latest(check_fingerprint=False)
        if head is None:
            return {}
        committed = _once(cs.committed)

        def sync(table: OutputTable) -> dict[str, Any] | None:
            """The table's report entry (``moved`` when it published), ``None``: no table."""
            try:
                dt = table.current()
                state = table.state(dt) if dt is not None else None
                if state is None or state.checkpoint_version != head.version:
                    snap = _snapshot(cs, table, head, dt, committed)
                    if snap is None:
                        return None
                    if isinstance(snap, str):
                        return {"error": snap, "code": "TABLE_UNAVAILABLE"}
                    return {**_versions(table.publish(snap)), "moved": True}
                return _versions(state)
            except StateError as exc:
                return {"error": str(exc), "code": exc.code}

        # independent Delta tables: their commits are written together
        entries = run_together([(sync, (table,)) for table in tables.values()])
        for name, entry in zip(tables, entries, strict=True):
            if entry is not None:
                moved = entry.pop("moved", False) or moved
                report[name] = entry
    except StateError as exc:
        report["_all"] = {"error": str(exc), "code": exc.code}
    for name, entry in report.items():
        if "error" in entry:
            log.warning("output table %s of %s not in step: %s", name, cs.pipeline,
                        entry["error"])
    spark = (spark or _active_spark()) if catalog and moved else None
    if spark is not None and report and not any("error" in e for e in report.values()) \
            and _spark_reads(spark, cs):
        from windowlib.runs.compaction import compact_tables

        try:     # keeps what the catalog lists below Spark's listing threshold
            compact_tables(spark, cs, tables, settings)
        except Exception as exc:     # the files stay as they are: never fails a publish
            log.warning("output tables of %s not compacted: %s", cs.pipeline, exc)
        try:
            register_names(spark, cs.pipeline, tables, database_name(spark, None),
                           remembered=True)
        except Exception as exc:     # the catalog is a convenience: never fails a publish
            log.warning("Spark catalog names of %s not updated: %s", cs.pipeline, exc)
    return report


def _versions(state: Any) -> dict[str, Any]:
    return {"version": state.checkpoint_version, "delta_version": state.delta_version}


def _once(read: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
    """``read()`` once, on first need, by whichever thread needs it first."""
    lock, found = threading.Lock(), []

    def get() -> list[Any]:
        with lock:
            found[:] = found or [read()]
        return found[0]
    return get


def _spark_reads(spark: Any, cs: CheckpointStore) -> bool:
    from windowlib.runs.io_settings import use_spark_io
    from windowlib.state.uri import Uri

    return use_spark_io(spark, Uri.parse(cs.uri))


def _active_spark() -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:   # pragma: no cover
        return None
    return SparkSession.getActiveSession()


# --- Spark's catalog (runs/catalog.py) ---------------------------------------------------------

def register_tables(spark: Any, source: str | CheckpointStore, *, database: str | None = None,
                    settings: S3Settings | None = None) -> dict[str, str]:
    """Name the output tables of ``source`` (an output location or a pipeline's checkpoint
    store) in ``spark``'s catalog, at their current version; returns the names registered.

    Each table is an external Parquet table whose location is exactly the current version's
    files (one ``ALTER TABLE ... SET LOCATION``: a switch, never a mix); another session with
    a shared metastore runs ``REFRESH TABLE`` to see a newer version. Every table is looked up
    first, so this also repairs entries changed by hand. Needs a location Spark reads:
    ``file://``, or ``s3://`` where the s3a connector is installed
    (``spark.windowlib.io.s3=spark``); otherwise ``TABLE_UNAVAILABLE``."""
    cs = source if isinstance(source, CheckpointStore) else reader_store(source, settings)
    return register_names(spark, cs.pipeline, _tables(cs, settings),
                          database_name(spark, database), remembered=False)


# --- reading -----------------------------------------------------------------------------------

def open_table(output: str, name: str, *, version: int | None = None,
               as_of: datetime | str | None = None,
               settings: S3Settings | None = None) -> Any:
    """The ``deltalake.DeltaTable`` of output ``name`` (``firings``, ``late``, ``rejects``,
    ``side_outputs``) of the pipeline publishing to ``output``: current, or as it showed
    checkpoint ``version``, or as it was at ``as_of`` (``TABLE_VERSION_NOT_FOUND``). Read it
    with ``to_pyarrow_dataset()`` (DuckDB, Polars, pandas)."""
    if name not in OUTPUTS:
        raise DefinitionError(f"unknown output {name!r}; one of {OUTPUTS}",
                              code="ARGUMENT_INVALID")
    table = OutputTable(reader_store(output, settings).pipeline_store, name, settings)
    dt = table.open(checkpoint_version=version, as_of=as_of)
    if dt is None:
        raise StateError(f"{output}: table {name} is not published yet ({table.uri})",
                         code="OUTPUT_NOT_FOUND")
    return dt


def read_table(output: str, name: str, *, version: int | None = None,
               as_of: datetime | str | None = None, spark: Any = None,
               settings: S3Settings | None = None) -> Any:
    """:func:`open_table`'s version as a Spark DataFrame, read by Spark tasks (no Delta jar:
    exactly the files of that version, sizes checked as ``read_frame`` does)."""
    from windowlib.engines.spark.session import get_or_create_session
    from windowlib.runs.compaction import table_struct
    from windowlib.runs.frames import FrameFile, read_frame

    dt = open_table(output, name, version=version, as_of=as_of, settings=settings)
    table = OutputTable(reader_store(output, settings).pipeline_store, name, settings)
    files = [FrameFile(table.file_uri(f.path), f.rows, f.bytes) for f in table.files(dt)]
    return read_frame(spark or get_or_create_session(), files, table_struct(dt),
                      settings=settings)


def table_info(cs: CheckpointStore, settings: S3Settings | None = None,
               database: str = DEFAULT_DATABASE) -> dict[str, Any]:
    """Per output: the Spark name, the Delta location and where the table stands (for
    ``windowlib status``; small)."""
    from windowlib.state.uri import redact

    names = spark_names(cs.pipeline, database)
    out: dict[str, Any] = {}
    for name, table in _tables(cs, settings).items():
        entry: dict[str, Any] = {"name": names[name], "location": redact(table.uri)}
        try:
            state = table.state()
        except StateError as exc:
            entry["error"] = f"[{exc.code}] {exc}"
            state = None
        if state is not None:
            entry.update(delta_version=state.delta_version, version=state.checkpoint_version)
        out[name] = entry
    out["latest"] = {"name": names["latest"], "view_of": names["firings"]}
    return out
