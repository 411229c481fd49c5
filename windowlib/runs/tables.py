"""Published outputs as tables: the Delta tables of ``windowlib.state.tables`` kept in step
with the commit records, and their names in Spark's catalog.

- :func:`sync_tables` brings every output table of a pipeline to its current checkpoint version
  (one Delta commit per table; nothing when in step). ``publish_run`` and rebuilds call it
  right after the commit record; every run calls it first, so a crash between the record and
  the tables is repaired by the next run (and until then the tables show the previous
  version whole). A table failure never fails a published run: it is reported and retried.
- :func:`register_tables` names the tables in a Spark session's catalog:
  ``<db>.<pipeline>_<output>`` (external Parquet tables over exactly the files of the table's
  current version) and the view ``<db>.<pipeline>_latest`` (:func:`outputs.latest_query`);
  before that a publish compacts tables holding many small files (``runs/compaction``), so
  what Spark lists here stays bounded over history. Per table one catalog lookup, then only
  the statements whose effect is not in place (a location or properties it already has are
  not written again).
  ``db`` is the ``spark.windowlib.tables.database`` conf (default ``windowlib``). Spark reads
  them without Delta's jars; with the s3a connector only on ``s3://`` (see docs/tables.md).
- :func:`open_table` / :func:`read_table`: a table at its current version or back in time.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from windowlib.core.errors import DefinitionError, StateError
from windowlib.core.outputs import OUTPUTS
from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.quiet import expected_sql_errors, quiet_glob_locations
from windowlib.engines.spark.session import run_together
from windowlib.runs.outputs import reader_store
from windowlib.runs.protocol import CommitDetails
from windowlib.state.checkpoint import CheckpointStore
from windowlib.state.s3config import S3Settings
from windowlib.state.tables import META, OutputTable, TableSnapshot, snapshot_files

__all__ = ["open_table", "read_table", "register_tables", "spark_names", "sync_tables",
           "table_info"]

log = logging.getLogger(__name__)
DATABASE_CONF = "spark.windowlib.tables.database"
DEFAULT_DATABASE = "windowlib"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_GLOB_SAFE = re.compile(r"[A-Za-z0-9=_.\-/]+")


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
            _register(spark, cs, tables, _database(spark, None))
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
    from windowlib.runs.frames import use_spark_io
    from windowlib.state.uri import Uri

    return use_spark_io(spark, Uri.parse(cs.uri))


def _active_spark() -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:   # pragma: no cover
        return None
    return SparkSession.getActiveSession()


# --- Spark's catalog ---------------------------------------------------------------------------

def spark_names(pipeline: str, database: str = DEFAULT_DATABASE) -> dict[str, str]:
    """Catalog names: ``{output: "<db>.<pipeline>_<output>", "latest": ...}``."""
    return {name: f"{database}.{pipeline}_{name}" for name in (*OUTPUTS, "latest")}


def _database(spark: Any, database: str | None) -> str:
    db = database or str(spark.conf.get(DATABASE_CONF, DEFAULT_DATABASE))
    if not _IDENT.fullmatch(db):
        raise DefinitionError(f"database name {db!r} must match [A-Za-z_][A-Za-z0-9_]*",
                              code="NAME_INVALID")
    return db


def _q(*parts: str) -> str:
    return ".".join(sql_identifier(p) for p in parts)


def _lit(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def register_tables(spark: Any, source: str | CheckpointStore, *, database: str | None = None,
                    settings: S3Settings | None = None) -> dict[str, str]:
    """Name the output tables of ``source`` (an output location or a pipeline's checkpoint
    store) in ``spark``'s catalog, at their current version; returns the names registered.

    Each table is an external Parquet table whose location is exactly the current version's
    files (one ``ALTER TABLE ... SET LOCATION``: a switch, never a mix); another session with
    a shared metastore runs ``REFRESH TABLE`` to see a newer version. Needs a location Spark
    reads: ``file://``, or ``s3://`` where the s3a connector is installed
    (``spark.windowlib.io.s3=spark``); otherwise ``TABLE_UNAVAILABLE``."""
    cs = source if isinstance(source, CheckpointStore) else reader_store(source, settings)
    return _register(spark, cs, _tables(cs, settings), _database(spark, database))


def _register(spark: Any, cs: CheckpointStore, tables: dict[str, OutputTable],
              db: str) -> dict[str, str]:
    """:func:`register_tables` with the table objects a publish already opened."""
    from windowlib.runs.compaction import table_struct
    from windowlib.runs.frames import use_spark_io

    quiet_glob_locations(spark)
    names: dict[str, str] = {}
    firings_schema = None
    statements = []
    for name, table in tables.items():
        dt = table.current()
        if dt is None:
            continue
        if not use_spark_io(spark, table.location):
            raise StateError(f"Spark cannot read {table.uri} here (no s3a connector): read the "
                             "table with wl.read_table or a Delta reader instead",
                             code="TABLE_UNAVAILABLE")
        struct = table_struct(dt)
        tbl = f"{cs.pipeline}_{name}"
        statements.append((spark, db, tbl, _location(table, dt, struct), struct,
                           {f"{META}delta_version": str(dt.version()), f"{META}table": table.uri}))
        names[name] = f"{db}.{tbl}"
        if name == "firings":
            firings_schema = struct
    # independent tables: their statements wait on Spark together
    run_together([(_replace_table, args) for args in statements])
    if firings_schema is not None:
        from windowlib.runs.outputs import latest_query

        latest = latest_query(firings_schema.fieldNames(), _q(db, f"{cs.pipeline}_firings"))
        _replace_view(spark, db, f"{cs.pipeline}_latest", latest, firings_schema)
        names["latest"] = f"{db}.{cs.pipeline}_latest"
    return names


def _location(table: OutputTable, dt: Any, struct: Any) -> str:
    """A Hadoop glob naming exactly ``dt``'s files (an empty table: a zero-row file)."""
    root = table.location.spark_path
    paths = [f.path for f in table.files(dt)]
    bad = [p for p in paths if not _GLOB_SAFE.fullmatch(p)]
    if bad:
        raise StateError(f"table {table.uri}: file name {bad[0]!r} cannot be named in a "
                         "Spark location", code="TABLE_UNAVAILABLE")
    if not paths:
        paths = [_empty_file(table, struct)]
    return f"{root}/{{{','.join(paths)}}}"


def _empty_file(table: OutputTable, struct: Any) -> str:
    """A zero-row Parquet file of ``struct`` below the table root (outside Delta's files)."""
    import pyarrow.parquet as pq

    from windowlib.runs.frames import arrow_target_schema
    from windowlib.state.taskfs import arrow_filesystem

    schema = arrow_target_schema(struct, False)
    digest = hashlib.sha256(schema.to_string().encode()).hexdigest()[:16]
    rel = f"_spark_empty/{digest}.parquet"
    fs = arrow_filesystem(table.location, table.settings)
    path = table.location.child(rel).arrow_path
    if fs.get_file_info(path).size is None:
        if table.location.scheme == "file":
            fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        pq.write_table(schema.empty_table(), path, filesystem=fs)
    return rel


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _properties(spark: Any, quoted: str) -> dict[str, str] | None:
    """The table properties of a catalog table or view, ``None`` when it (or its database)
    does not exist: one statement."""
    from pyspark.errors import AnalysisException

    try:
        with expected_sql_errors():     # absence is an answer here, not an error to log
            rows = spark.sql(f"SHOW TBLPROPERTIES {quoted}").collect()
    except AnalysisException as exc:
        if exc.getCondition() == "TABLE_OR_VIEW_NOT_FOUND":
            return None
        raise
    return {r["key"]: r["value"] for r in rows}


_CATALOG_FORMAT = "|spark-specific"   # how register_tables stores a table in the catalog


def _replace_table(spark: Any, db: str, tbl: str, location: str, struct: Any,
                   props: dict[str, str]) -> None:
    """Create the table, or move it to ``location``, and record ``props`` (and the schema and
    location digests): one lookup, then only what is not in place (setting a location makes
    Spark list its files). The location switches before the properties are written, so an
    interrupted registration is completed by the next.

    In a Hive metastore the table is stored in Spark's own format (``skipHiveMetadata``):
    stored Hive-compatibly, the metastore would make a directory of the glob location below
    the table root at creation, and Hive-side readers would read that empty directory — other
    engines read the Delta table at its location instead. A table created before (Hive-
    compatible) is created again once (the format is part of the recorded schema digest)."""
    name = _q(db, tbl)
    digest = _digest(struct.json() + _CATALOG_FORMAT)
    props = {**props, f"{META}schema": digest, f"{META}location": _digest(location)}
    current = _properties(spark, name)
    if current is not None and current.get(f"{META}schema") != digest:
        spark.sql(f"DROP TABLE {name}")
        current = None
    if current is None:
        if not spark.catalog.databaseExists(db):      # (the view always follows a table)
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {_q(db)}")
        spark.catalog.createTable(f"{db}.{tbl}", path=location, source="parquet",
                                  schema=struct, skipHiveMetadata="true")
        current = {}
    elif current.get(f"{META}location") != props[f"{META}location"]:
        spark.sql(f"ALTER TABLE {name} SET LOCATION {_lit(location)}")
    changed = {k: v for k, v in props.items() if current.get(k) != v}
    if changed:
        listed = ", ".join(f"{_lit(k)} = {_lit(v)}" for k, v in sorted(changed.items()))
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({listed})")


def _replace_view(spark: Any, db: str, view: str, query: str, firings: Any) -> None:
    """Create or replace the latest view, unless it already has this query over a firings
    table of this schema (creating a view makes Spark resolve, so list, the table)."""
    name = _q(db, view)
    digest = _digest(query + firings.json())
    current = _properties(spark, name)
    if current is not None and current.get(f"{META}query") == digest:
        return
    spark.sql(f"CREATE OR REPLACE VIEW {name} TBLPROPERTIES ({_lit(META + 'query')} = "
              f"{_lit(digest)}) AS {query}")


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
