"""The output tables' names in Spark's catalog: ``<db>.<pipeline>_<output>`` (external Parquet
tables over exactly the files of the table's current version) and the view
``<db>.<pipeline>_latest`` (``outputs.latest_query``). ``runs/tables.py`` calls
:func:`register_names` after a publish and from ``register_tables``.

Invariants:

- A table's location is a Hadoop glob naming exactly its current version's files (one
  ``ALTER TABLE ... SET LOCATION``: a switch, never a mix). The location switches before the
  properties are written (``windowlib.delta_version``, digests of the schema and location), so
  an interrupted registration is completed by the next.
- Per table, only the statements whose effect is not in place run (setting a location makes
  Spark list its files).
- **A publish trusts what this process wrote** (``remembered=True``): every registration
  remembers, per Spark application and table, the properties the table has after its
  statements. A publish looks a table up (one ``SHOW TBLPROPERTIES``, about 20-30 ms in a warm
  run) only when there is no such memory, or when a statement fails on it. Every publish gives
  every table a new Delta version, so each table gets a statement, and a table dropped
  meanwhile fails it: it is then looked up and created again. A change someone else made to an
  entry (by hand, or from another process) stays until a publish changes the same thing again
  (the location: when the table's files change), or until ``register_tables``
  (``remembered=False``), which always looks up and so repairs it. The view is remembered the
  same way, but nothing would fail if it were dropped: a publish asks whether it exists
  (``spark.catalog.tableExists``, a few milliseconds) and creates a dropped one again.
- ``db`` is the ``spark.windowlib.tables.database`` conf (default ``windowlib``). Spark reads
  the tables without Delta's jars; with the s3a connector only on ``s3://``
  (docs/tables.md).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Mapping
from typing import Any

from windowlib.core.errors import DefinitionError, StateError
from windowlib.core.outputs import OUTPUTS
from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.quiet import expected_sql_errors, quiet_glob_locations
from windowlib.engines.spark.session import run_together
from windowlib.state.tables import META, OutputTable

__all__ = ["DATABASE_CONF", "DEFAULT_DATABASE", "database_name", "register_names",
           "spark_names"]

DATABASE_CONF = "spark.windowlib.tables.database"
DEFAULT_DATABASE = "windowlib"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_GLOB_SAFE = re.compile(r"[A-Za-z0-9=_.\-/]+")
_CATALOG_FORMAT = "|spark-specific"   # how register_names stores a table in the catalog

# (Spark application id, quoted table name) -> the table's properties after this process's
# last statements on it (module docstring); distinct tables are written by distinct threads
_WRITTEN: dict[tuple[str, str], dict[str, str]] = {}
# the tables' threads create a missing database one at a time (``_database``)
_DATABASE_LOCK = threading.Lock()


def spark_names(pipeline: str, database: str = DEFAULT_DATABASE) -> dict[str, str]:
    """Catalog names: ``{output: "<db>.<pipeline>_<output>", "latest": ...}``."""
    return {name: f"{database}.{pipeline}_{name}" for name in (*OUTPUTS, "latest")}


def database_name(spark: Any, database: str | None) -> str:
    """``database``, else ``spark``'s ``DATABASE_CONF`` (default ``windowlib``), checked."""
    db = database or str(spark.conf.get(DATABASE_CONF, DEFAULT_DATABASE))
    if not _IDENT.fullmatch(db):
        raise DefinitionError(f"database name {db!r} must match [A-Za-z_][A-Za-z0-9_]*",
                              code="NAME_INVALID")
    return db


def register_names(spark: Any, pipeline: str, tables: Mapping[str, OutputTable], db: str, *,
                   remembered: bool) -> dict[str, str]:
    """Name ``tables`` (output -> table) of ``pipeline`` in ``spark``'s catalog at their
    current version, and the latest view; returns the names registered. ``remembered``: trust
    what this process wrote before instead of looking each table up (module docstring); what
    is written is remembered either way."""
    from windowlib.runs.compaction import table_struct
    from windowlib.runs.io_settings import use_spark_io

    quiet_glob_locations(spark)
    app = _application(spark)
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
        tbl = f"{pipeline}_{name}"
        statements.append((spark, db, tbl, _location(table, dt, struct), struct,
                           {f"{META}delta_version": str(dt.version()), f"{META}table": table.uri},
                           app, remembered))
        names[name] = f"{db}.{tbl}"
        if name == "firings":
            firings_schema = struct
    # independent tables: their statements wait on Spark together
    run_together([(_replace_table, args) for args in statements])
    if firings_schema is not None:
        from windowlib.runs.outputs import latest_query

        latest = latest_query(firings_schema.fieldNames(), _q(db, f"{pipeline}_firings"))
        _replace_view(spark, db, f"{pipeline}_latest", latest, firings_schema, app,
                      remembered)
        names["latest"] = f"{db}.{pipeline}_latest"
    return names


def _forget(app: str | None, name: str) -> dict[str, str] | None:
    """What this process last wrote to the catalog entry ``name`` for the application
    ``app`` (``None``: nothing kept), forgotten until :func:`_remember` records it again, so
    that an entry whose statements failed midway is looked up next time."""
    return _WRITTEN.pop((app, name), None) if app is not None else None


def _remember(app: str | None, name: str, props: dict[str, str]) -> None:
    """Record ``props`` as what entry ``name`` holds after this process's statements."""
    if app is not None:
        _WRITTEN[(app, name)] = props


def _application(spark: Any) -> str | None:
    """The id of ``spark``'s application (its catalog's owner); ``None`` when unknown."""
    try:
        return str(spark.conf.get("spark.app.id"))
    except Exception:       # a restricted Connect server: nothing is remembered
        return None


def _q(*parts: str) -> str:
    return ".".join(sql_identifier(p) for p in parts)


def _lit(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


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


def _replace_table(spark: Any, db: str, tbl: str, location: str, struct: Any,
                   props: dict[str, str], app: str | None, remembered: bool) -> None:
    """Create the table, or move it to ``location``, and record ``props`` (and the schema and
    location digests), from what this process wrote before when ``remembered`` and it
    remembers the table, else from one lookup (module docstring). ``app``: the Spark
    application the memory is kept for (``None``: none is kept).

    In a Hive metastore the table is stored in Spark's own format (``skipHiveMetadata``):
    stored Hive-compatibly, the metastore would make a directory of the glob location below
    the table root at creation, and Hive-side readers would read that empty directory — other
    engines read the Delta table at its location instead. A table created before (Hive-
    compatible) is created again once (the format is part of the recorded schema digest)."""
    name = _q(db, tbl)
    digest = _digest(struct.json() + _CATALOG_FORMAT)
    props = {**props, f"{META}schema": digest, f"{META}location": _digest(location)}
    written = _forget(app, name)    # trusted only by a publish
    known = written if remembered else None
    if known is not None:
        try:
            with expected_sql_errors():     # a failure is answered by the lookup below
                _write_table(spark, db, tbl, name, location, struct, props, known)
        except Exception:       # e.g. dropped by someone else: look it up
            known = None
    if known is None:
        _write_table(spark, db, tbl, name, location, struct, props,
                     _properties(spark, name))
    _remember(app, name, props)


def _write_table(spark: Any, db: str, tbl: str, name: str, location: str, struct: Any,
                 props: dict[str, str], current: dict[str, str] | None) -> None:
    """The statements that take the table from ``current`` (its properties; ``None``: it does
    not exist) to ``location`` and ``props``."""
    if current is not None and current.get(f"{META}schema") != props[f"{META}schema"]:
        spark.sql(f"DROP TABLE {name}")
        current = None
    if current is None:
        _database(spark, db)        # (the view always follows a table)
        spark.catalog.createTable(f"{db}.{tbl}", path=location, source="parquet",
                                  schema=struct, skipHiveMetadata="true")
        current = {}
    elif current.get(f"{META}location") != props[f"{META}location"]:
        spark.sql(f"ALTER TABLE {name} SET LOCATION {_lit(location)}")
    changed = {k: v for k, v in props.items() if current.get(k) != v}
    if changed:
        listed = ", ".join(f"{_lit(k)} = {_lit(v)}" for k, v in sorted(changed.items()))
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({listed})")


def _database(spark: Any, db: str) -> None:
    """Create ``db`` unless it exists. The tables' statements run on concurrent threads
    (``register_names``): one thread at a time asks, so one creates it and the others find it
    (Spark warns of every concurrent creation that lost the race)."""
    with _DATABASE_LOCK:
        if not spark.catalog.databaseExists(db):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {_q(db)}")


def _replace_view(spark: Any, db: str, view: str, query: str, firings: Any, app: str | None,
                  remembered: bool) -> None:
    """Create or replace the latest view, unless it already has this query over a firings
    table of this schema (creating a view makes Spark resolve, so list, the table). With
    ``remembered`` and this process's memory of the view (``_forget``), only its existence
    is asked (a catalog call, no statement: a dropped view is created again); else its
    properties are looked up."""
    name = _q(db, view)
    digest = _digest(query + firings.json())
    written = _forget(app, name)
    if remembered and written is not None and written.get(f"{META}query") == digest:
        current = written if spark.catalog.tableExists(name) else None
    else:
        current = _properties(spark, name)
    if current is None or current.get(f"{META}query") != digest:
        spark.sql(f"CREATE OR REPLACE VIEW {name} TBLPROPERTIES ({_lit(META + 'query')} = "
                  f"{_lit(digest)}) AS {query}")
    _remember(app, name, {f"{META}query": digest})
