"""Outputs as tables on ``file://``: after incremental runs, a rerun with late data and a
rebuild, Spark's catalog table, a non-Spark reader (DuckDB over the Delta table) and
``wl.read_latest`` agree; a crash between the commit record and the tables is repaired by the
next run; time travel reads what an earlier version showed."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import random

import duckdb
import pytest
from clicks_lake import T0, clicks_pipeline, locations, write_partition

import windowlib as wl
from windowlib.core.errors import DefinitionError, StateError
from windowlib.runs.incremental import open_checkpoint, plan_run, run_incremental, stage_run
from windowlib.runs.outputs import latest_query, read_firings, read_late, read_latest, read_rejects
from windowlib.runs.tables import (
    open_table,
    read_table,
    spark_names,
    sync_tables,
    table_info,
)

pytestmark = pytest.mark.spark

WM = wl.BoundedOutOfOrderness("10 minutes")


def pipeline() -> wl.Pipeline:
    return clicks_pipeline("clicks_tables")



@pytest.fixture
def lake(tmp_path):
    rng = random.Random(7)
    for hour in range(5):
        start = T0 + dt.timedelta(hours=hour)
        rows = [(rng.choice("abc"), start + dt.timedelta(minutes=rng.randint(-90, 59)),
                 rng.randint(1, 9)) for _ in range(12)]
        write_partition(tmp_path / "events", hour, [*rows, (None, start, 1)])
    return tmp_path



def _rows(rows, drop=("run_id",)) -> list[tuple]:
    out = []
    for r in rows:
        d = r if isinstance(r, dict) else r.asDict()
        out.append(tuple(sorted((k, _norm(v)) for k, v in d.items() if k not in drop)))
    return sorted(out, key=repr)


def _norm(v):
    if isinstance(v, dt.datetime):
        return (v if v.tzinfo else v.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    return v


def _duckdb_latest(output) -> list[dict]:
    firings = open_table(output, "firings").to_pyarrow_dataset()  # noqa: F841 (DuckDB scans it)
    cols = [f.name for f in open_table(output, "firings").schema().to_arrow()]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    res = con.execute(latest_query(cols, "firings", dialect="duckdb"))
    names = [d[0] for d in res.description]
    return [dict(zip(names, row)) for row in res.fetchall()]


def _agree(spark, output, name) -> None:
    names = spark_names(name)
    expected = _rows(read_latest(output, spark=spark).collect())
    assert expected
    assert _rows(spark.table(names["latest"]).collect()) == expected
    assert _rows(spark.sql(f"select * from {names['latest']}").collect()) == expected
    assert _rows(_duckdb_latest(output)) == expected
    for out, reader in (("firings", read_firings), ("late", read_late),
                        ("rejects", read_rejects)):
        want = _rows(reader(output, spark=spark).collect(), drop=())
        assert _rows(spark.table(names[out]).collect(), drop=()) == want
        table = open_table(output, out).to_pyarrow_dataset().to_table().to_pylist()
        assert _rows(table, drop=()) == want


def test_catalog_duckdb_and_read_latest_agree_across_runs_late_data_and_rebuild(spark, lake):
    p, loc = pipeline(), locations(lake, "tables")
    first = run_incremental(p, partitions=("2024-03-01T00", "2024-03-01T02"), watermark=WM,
                            spark=spark, **loc)
    assert first.tables["firings"] == {"version": 1, "delta_version": 0}
    after_first = dt.datetime.now(dt.UTC)
    _agree(spark, loc["output"], p.name)
    v1_firings = _rows(read_firings(loc["output"], spark=spark).collect(), drop=())
    run_incremental(p, watermark=WM, spark=spark, **loc)
    _agree(spark, loc["output"], p.name)
    # late data for an hour already processed: a rerun brings LATE panes
    write_partition(lake / "events", 1, [("a", T0 + dt.timedelta(hours=4, minutes=10), 100)],
                    name="late")
    again = run_incremental(p, watermark=WM, spark=spark, **loc)
    assert again.tables["firings"]["version"] == 3
    _agree(spark, loc["output"], p.name)
    # time travel: the table as checkpoint version 1 showed it
    assert _rows(read_table(loc["output"], "firings", version=1, spark=spark).collect(),
                 drop=()) == v1_firings
    assert _rows(read_table(loc["output"], "firings", as_of=after_first, spark=spark).collect(),
                 drop=()) == v1_firings
    with pytest.raises(StateError) as early:
        read_table(loc["output"], "firings", as_of=after_first - dt.timedelta(days=1),
                   spark=spark)
    assert early.value.code == "TABLE_VERSION_NOT_FOUND"
    with pytest.raises(DefinitionError) as zoneless:  # a wall-clock time without a zone
        read_table(loc["output"], "firings", as_of=after_first.replace(tzinfo=None),
                   spark=spark)
    assert zoneless.value.code == "ARGUMENT_INVALID" and "time zone" in str(zoneless.value)
    # a rebuild replaces every table atomically with the new generation's files
    rebuilt = run_incremental(p, watermark=WM, spark=spark, rebuild=True, **loc)
    assert rebuilt.status == "rebuild published"
    assert rebuilt.tables["firings"]["version"] == rebuilt.version
    _agree(spark, loc["output"], p.name)
    paths = [f for f in open_table(loc["output"], "firings").file_uris()]
    assert paths and all("/generations/g=000002/" in f for f in paths)


def test_a_crash_between_commit_record_and_tables_is_repaired_by_the_next_run(spark, lake):
    p, loc = pipeline(), locations(lake, "tables_crash")
    run_incremental(p, partitions=("2024-03-01T00", "2024-03-01T01"), watermark=WM,
                    spark=spark, **loc)
    before = _rows(open_table(loc["output"], "firings").to_pyarrow_dataset().to_table()
                   .to_pylist(), drop=())
    # the publish step up to the commit record, then the process "dies" (no table commit)
    plan = plan_run(p, loc["source"], loc["checkpoint"], partitions=("2024-03-01T02",
                                                                     "2024-03-01T03"))
    staged = stage_run(p, loc["source"], loc["checkpoint"], loc["output"], plan,
                       watermark=WM, spark=spark)
    staged.staging.checkpoint.commit(staged.staging, staged.record)
    lagging = open_table(loc["output"], "firings")
    assert lagging.transaction_version("windowlib") == 1      # the previous version, whole
    assert _rows(lagging.to_pyarrow_dataset().to_table().to_pylist(), drop=()) == before
    # the next run (here with nothing new in its range) repairs the tables first
    run_incremental(p, partitions=("2024-03-01T02", "2024-03-01T03"), watermark=WM,
                    spark=spark, **loc)
    assert open_table(loc["output"], "firings").transaction_version("windowlib") == 2
    _agree(spark, loc["output"], p.name)
    assert sync_tables(open_checkpoint(p, loc["checkpoint"]))["firings"]["version"] == 2


class _Job:
    """What ``windowlib status`` needs of a registered job."""

    name = "clicks_tables"
    watermark = WM
    pipeline = pipeline()

    def locations(self, root: str) -> tuple[str, str]:
        return f"{root}/_windowlib/checkpoints", f"{root}/windows/{self.name}"


def test_status_shows_table_names_and_locations(spark, lake, monkeypatch, capsys):
    from windowlib import cli
    from windowlib.runs import operations as ops

    job, root = _Job(), (lake / "status").as_uri()
    checkpoint, output = job.locations(root)
    run_incremental(job.pipeline, locations(lake, "unused")["source"], checkpoint, output,
                    partitions=("2024-03-01T00", "2024-03-01T00"), watermark=WM, spark=spark)
    monkeypatch.setattr(ops, "get_job", lambda name: job)
    assert cli.main(["status", "--pipeline", job.name, "--root", root, "--json"]) == 0
    tables = {t["output"]: t for t in json.loads(capsys.readouterr().out)["tables"]}
    assert tables["firings"]["name"] == f"windowlib.{job.name}_firings"
    assert tables["firings"]["location"] == f"{checkpoint}/{job.name}/tables/firings"
    assert tables["firings"]["version"] == 1
    assert open_table(output, "firings").transaction_version("windowlib") == 1
    assert tables["latest"]["name"] == f"windowlib.{job.name}_latest"
    assert cli.main(["status", "--pipeline", job.name, "--root", root]) == 0
    out = capsys.readouterr().out
    assert "output tables" in out        # rendered as its own table (names may wrap)


class _Recorded:
    """``spark`` with the SQL statements it is given recorded (everything else passes
    through): what a registration writes to the catalog."""

    def __init__(self, spark) -> None:
        self._spark, self.statements = spark, []

    def sql(self, text, *args, **kwargs):
        self.statements.append(" ".join(text.split()[:3]))
        return self._spark.sql(text, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._spark, name)


@contextlib.contextmanager
def _pyspark_error_logs():
    """The messages PySpark's query-context loggers emit meanwhile (they do not propagate)."""
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    from pyspark.logger import PySparkLogger

    loggers = [PySparkLogger.getLogger(n) for n in ("SQLQueryContextLogger",
                                                    "DataFrameQueryContextLogger")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        yield records
    finally:
        for lg in loggers:
            lg.removeHandler(handler)


def _catalog_properties(spark, qualified) -> dict:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {qualified}").collect()
            if r["key"].startswith("windowlib.")}


def test_registration_moves_the_tables_records_their_versions_and_writes_only_what_changed(
        spark, lake):
    p, loc = pipeline(), locations(lake, "tables_register")
    names = spark_names(p.name)
    other = spark.newSession()          # another session over the same catalog
    run_incremental(p, partitions=("2024-03-01T00", "2024-03-01T01"), watermark=WM,
                    spark=spark, **loc)
    assert other.table(names["firings"]).count() == read_firings(loc["output"], spark=spark).count()
    run_incremental(p, partitions=("2024-03-01T02", "2024-03-01T03"), watermark=WM,
                    spark=spark, **loc)
    _agree(spark, loc["output"], p.name)       # every table at its new files
    other.sql(f"REFRESH TABLE {names['firings']}")
    assert _rows(other.table(names["firings"]).collect(), drop=()) \
        == _rows(read_firings(loc["output"], spark=spark).collect(), drop=())

    def recorded_versions() -> dict:
        return {out: _catalog_properties(spark, names[out]).get("windowlib.delta_version")
                for out in ("firings", "late", "rejects", "side_outputs")}

    def delta_versions() -> dict:
        return {out: str(open_table(loc["output"], out).version())
                for out in ("firings", "late", "rejects", "side_outputs")}

    assert recorded_versions() == delta_versions()
    located = table_info(open_checkpoint(p, loc["checkpoint"]))
    assert {out: _catalog_properties(spark, names[out])["windowlib.table"]
            for out in ("firings", "late")} \
        == {out: located[out]["location"] for out in ("firings", "late")}
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j     # glob locations' WARN quieted
    assert str(log4j.LogManager.getLogger(
        "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink").getLevel()) == "ERROR"
    # registering tables that already show their current version writes nothing
    recorded = _Recorded(spark)
    assert wl.register_tables(recorded, loc["output"]) == names
    assert not [s for s in recorded.statements if not s.startswith("SHOW TBLPROPERTIES")]
    # a registration interrupted after the switch (properties not yet written) is completed
    spark.sql(f"ALTER TABLE {names['late']} SET TBLPROPERTIES "
              "('windowlib.delta_version' = '0', 'windowlib.location' = 'stale')")
    recorded = _Recorded(spark)
    wl.register_tables(recorded, loc["output"])
    assert recorded_versions() == delta_versions()
    assert [s for s in recorded.statements if s.startswith("ALTER")] \
        == [f"ALTER TABLE `windowlib`.`{p.name}_late`"] * 2     # location, then properties
    _agree(spark, loc["output"], p.name)
    # a database that does not exist yet is created with its tables, and probing the absent
    # tables logs nothing (PySpark logs every caught SQL error at ERROR with its Java trace)
    with _pyspark_error_logs() as logged:
        fresh = wl.register_tables(spark, loc["output"], database="wl_tables_fresh")
    assert logged == []
    assert fresh == spark_names(p.name, "wl_tables_fresh")
    assert _rows(spark.table(fresh["latest"]).collect()) \
        == _rows(read_latest(loc["output"], spark=spark).collect())


def test_a_publish_trusts_what_it_wrote_and_creates_a_dropped_table_again(spark, lake):
    """A registration of tables this process wrote does not look them up, nor the view (it
    asks whether the view exists: a dropped view is created again); a table dropped
    meanwhile fails the next publish's statement on it (every publish gives every table a
    new Delta version), and is looked up and created again, logging nothing."""
    from windowlib.runs.catalog import database_name, register_names
    from windowlib.state.tables import OutputTable

    p, loc = pipeline(), locations(lake, "tables_remembered")
    names = spark_names(p.name)
    run_incremental(p, partitions=("2024-03-01T00", "2024-03-01T01"), watermark=WM,
                    spark=spark, **loc)
    cs = open_checkpoint(p, loc["checkpoint"])
    tables = {out: OutputTable(cs.pipeline_store, out) for out in
              ("firings", "late", "rejects", "side_outputs")}

    def register(remembered: bool) -> list[str]:
        recorded = _Recorded(spark)
        assert register_names(recorded, p.name, tables, database_name(spark, None),
                              remembered=remembered) == names
        return recorded.statements

    lookup = "SHOW TBLPROPERTIES `windowlib`.`{}`".format
    assert register(remembered=True) == []
    assert sorted(register(remembered=False)) == sorted(lookup(f"{p.name}_{out}") for out in
                                                        (*tables, "latest"))
    spark.sql(f"DROP VIEW {names['latest']}")
    assert register(remembered=True) == ["CREATE OR REPLACE"]
    assert register(remembered=True) == []
    assert _rows(spark.table(names["latest"]).collect()) \
        == _rows(read_latest(loc["output"], spark=spark).collect())
    spark.sql(f"DROP TABLE {names['late']}")
    with _pyspark_error_logs() as logged:
        summary = run_incremental(p, partitions=("2024-03-01T02", "2024-03-01T02"),
                                  watermark=WM, spark=spark, **loc)
    assert logged == []
    assert summary.tables["late"]["version"] == summary.version
    _agree(spark, loc["output"], p.name)


class _SlowCatalog:
    """``spark`` whose catalog answers ``databaseExists`` slowly (every other call passes
    through): registrations on concurrent threads all ask before any of them creates."""

    def __init__(self, spark) -> None:
        self._catalog = spark.catalog

    def databaseExists(self, name):
        import time

        time.sleep(0.2)
        return self._catalog.databaseExists(name)

    def __getattr__(self, name):
        return getattr(self._catalog, name)


def test_a_new_database_is_created_once_by_the_concurrent_registrations(spark, lake):
    """The tables' statements run on concurrent threads; the database they all need is created
    by one of them, the others wait for it (one ``CREATE DATABASE``: Spark logs a WARN for
    every losing concurrent creation)."""
    p, loc = pipeline(), locations(lake, "tables_new_database")
    run_incremental(p, partitions=("2024-03-01T00", "2024-03-01T01"), watermark=WM,
                    spark=spark, **loc)
    recorded = _Recorded(spark)
    recorded.catalog = _SlowCatalog(spark)
    names = wl.register_tables(recorded, loc["output"], database="wl_tables_once")
    assert names == spark_names(p.name, "wl_tables_once")
    assert [s for s in recorded.statements if s.startswith("CREATE DATABASE")] \
        == ["CREATE DATABASE IF"]
    assert _rows(spark.table(names["firings"]).collect()) \
        == _rows(read_firings(loc["output"], spark=spark).collect())
