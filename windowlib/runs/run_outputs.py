"""What one incremental run stages, written by ONE Spark job (``routing.write_routed``).

The engine hands over its outputs as parts in the public schema (``engines/spark/outputs.py``:
firings, late, rejects, side outputs, the new pane state and the processed count); the
source's bad rows and unreadable files join them as rejects. A single pass writes every output
under its own staging location and counts what it wrote. The run's figures come from those
counts — no separate counting job:

- ``processed``: the engine's ``stats`` output (elements it processed);
- ``late``, ``rejects``, ``firings`` (by timing; retractions apart), ``side_outputs``,
  ``state_rows``/``state_entries``: rows written to each output;
- ``schema_rejects`` (rows that did not fit the schema) and ``bad_files`` (unreadable files,
  one reject row each, with the number of input rows it stands for when the file's footer or
  lines tell it, ``None`` when nothing can) split the rejects that never reached the engine;
- ``lateness_histogram``: late rows by how far behind the watermark they were
  (``runs/lateness.py``).

A small run (``SMALL_RUN_ROWS``: new input rows plus saved state rows; ``is_small_run``) is
planned and written with adaptive query execution off and at most ``io_settings.io_parallelism``
shuffle partitions (``small_run``: ``session.scoped_conf`` around the run): adaptive execution
submits every shuffle and broadcast stage as a job of its own, and each job pays Spark's
scheduling latency, which dominates an hourly run; its gains (coalescing partitions by size,
skew splits) need data. It writes with one task per core (``small_writer_tasks``; a large run:
``routing.writer_tasks``): every writer task pays a Python worker round trip and a file per
output, which a few thousand rows do not repay. Its Python tasks take their input in Arrow
batches of up to ``SMALL_RUN_ARROW_ROWS`` rows instead of Spark's 10,000: the writer handles
each batch (routes, counts, a Parquet row group per file) at a cost per batch, so a warm hourly
run's writer task of ~90k rows took nine rounds and wrote nine row groups per file (one now;
the run's job ~30 ms shorter). A tiny run (``INTERPRETED_RUN_ROWS``) is
also evaluated without generated code (whole-stage code generation off, expressions
interpreted): a process's first runs of a pipeline compile 20-50 classes (about 0.5-1 s
here; later runs reuse them, since the run's clocks are not literals: ``native_parts``),
while interpreting a few ten thousand rows costs less (measured in ``docs/performance.md``:
about 5-6 µs more per row). It matters to short-lived processes (a task per run); warm
tiny runs cost the same either way. Results do not change.

Nothing here knows an engine's internals: every column comes from the parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from windowlib.core.errors import InputError
from windowlib.engines.spark.columns import user_col
from windowlib.engines.spark.outputs import SparkOutputs
from windowlib.runs.lateness import LATENESS_BUCKETS, bucket_of, event_ms
from windowlib.runs.routing import (
    OUT,
    OutputSpec,
    RoutedWrite,
    route_columns,
    routed_name,
    write_routed,
)
from windowlib.state.s3config import S3Settings

__all__ = ["INTERPRETED_RUN_ROWS", "SMALL_RUN_ARROW_ROWS", "SMALL_RUN_ROWS", "StagedOutputs",
           "is_small_run", "routed_frame", "small_run", "small_writer_tasks", "stage_outputs"]

# counted, not written (user columns never start with ``__wl_``)
_ORIGIN, _FILE, _ERROR, _BUCKET = "__wl_origin", "__wl_bad_file", "__wl_bad_error", "__wl_bucket"
_ROWS = "__wl_rows"        # input rows a reject stands for (an unreadable file: its count, -1)
_INTERNAL = (_ORIGIN, _FILE, _ERROR, _BUCKET, _ROWS)
WRITTEN = ("state", "firings", "late", "rejects", "side_outputs")
SMALL_RUN_ROWS = 2_000_000
INTERPRETED_RUN_ROWS = 50_000       # interpreting 50k rows costs ~0.3 s: under a cold compile
SMALL_RUN_ARROW_ROWS = 100_000      # rows per Arrow batch into a small run's Python tasks
_INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
                "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@dataclass
class StagedOutputs:
    """The staged outputs of a run: ``frames`` (name -> ``FrameInfo``, incl. ``state``) and the
    figures counted while writing them."""

    frames: dict[str, Any]
    state_schema: Any
    firings_schema: Any
    processed: int = 0
    late: int = 0
    engine_rejects: int = 0
    schema_rejects: int = 0
    bad_files: list[dict[str, Any]] = field(default_factory=list)
    firings: int = 0
    by_timing: dict[str, int] = field(default_factory=dict)
    retractions: int = 0
    side_outputs: int = 0
    state_rows: int = 0
    state_entries: int = 0
    lateness_histogram: list[list[Any]] = field(default_factory=list)

    @property
    def bad_file_rows(self) -> int:
        """Rows of the unreadable files whose row count is known."""
        return sum(b["rows"] for b in self.bad_files if b["rows"] is not None)

    @property
    def rejects(self) -> int:
        """Rejected input rows (unreadable files count their known rows)."""
        return self.engine_rejects + self.schema_rejects + self.bad_file_rows


def _extras(output: str, columns: list[tuple[str, Any]], types: dict[str, Any],
            timestamp: str) -> list[tuple[str, Any]]:
    """Columns counted (not written) besides an output's own: the lateness bucket of late
    rows, the origin of engine rejects."""
    from pyspark.sql import functions as F

    cols = dict(columns)
    if output == "late" and timestamp in cols and timestamp in types:
        try:
            event = event_ms(cols[timestamp], types[timestamp])
        except InputError:
            return []
        return [(_BUCKET, bucket_of(cols["watermark"], event))]
    if output == "rejects":
        none = F.lit(None).cast("string")
        return [(_ORIGIN, F.lit("engine")), (_FILE, none), (_ERROR, none),
                (_ROWS, F.lit(1).cast("long"))]
    return []


def routed_frame(outputs: SparkOutputs, source_frame: Any, timestamp: str
                 ) -> tuple[Any, dict[str, list[str]]]:
    """The routed frame of a run: every part of the engine's outputs plus the source's bad
    rows and files. Returns ``(routed, written columns per output)``."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in source_frame.schema.fields}
    branches, written = [], {}
    for part in outputs.built_parts():
        cols = []
        for output, columns in part.columns.items():
            written.setdefault(output, [c for c, _ in columns])
            cols += route_columns(output, [*columns, *_extras(output, list(columns), types,
                                                              timestamp)])
        route = F.lit(part.route) if isinstance(part.route, str) else part.route
        branches.append(part.frame.select(route.alias(OUT), *cols))
    branches.append(_source_rejects(source_frame, outputs.columns.elements))
    routed = branches[0]
    for branch in branches[1:]:
        routed = routed.unionByName(branch, allowMissingColumns=True)
    return routed, written


def _source_rejects(source_frame: Any, data_cols: Any) -> Any:
    """Rows the engine never saw, routed to the rejects: schema mismatches and unreadable
    files (one row each)."""
    from pyspark.sql import functions as F

    from windowlib.runs.source import CORRUPT_COLUMN, ERROR_COLUMN, FILE_COLUMN, ROW_COLUMN

    error, corrupt = F.col(ERROR_COLUMN), F.col(CORRUPT_COLUMN)
    types = {f.name: f.dataType for f in source_frame.schema.fields}
    ok = error.isNull()
    reason = F.when(ok, F.lit("schema_mismatch")).otherwise(F.concat(
        F.lit("unreadable_file: "), F.col(FILE_COLUMN), F.lit(": "), error))
    bad_cols = [(c, F.when(ok, user_col(c)).otherwise(F.lit(None).cast(types[c])))
                for c in data_cols]
    bad_cols += [("reason", reason),
                 (_ORIGIN, F.when(ok, F.lit("schema")).otherwise(F.lit("file"))),
                 (_FILE, F.when(ok, F.lit(None).cast("string")).otherwise(F.col(FILE_COLUMN))),
                 (_ERROR, error),
                 (_ROWS, F.when(ok, F.lit(1)).otherwise(F.col(ROW_COLUMN)).cast("long"))]
    return source_frame.filter(error.isNotNull() | corrupt.isNotNull()).select(
        F.lit("rejects").alias(OUT), *route_columns("rejects", bad_cols))


def stage_outputs(outputs: SparkOutputs, source_frame: Any, timestamp: str,
                  uris: dict[str, str], *, settings: S3Settings | None = None,
                  token: str | None = None, tasks: int | None = None) -> StagedOutputs:
    """Write every output of a run (``uris``: output name -> staging location, ``state``
    included) in one Spark job and return their ``FrameInfo`` and figures. ``tasks``: the
    writer tasks (``routing.write_routed``; ``small_writer_tasks`` for a small run)."""
    from windowlib.engines.spark.errors import reraise

    routed, written = routed_frame(outputs, source_frame, timestamp)
    late_by = (_BUCKET,) if routed_name("late", _BUCKET) in routed.columns else ()
    retracting = outputs.columns.retracting
    specs = {
        "firings": OutputSpec(uris["firings"], tuple(written["firings"]),
                              count_by=("timing", *(("retract",) if retracting else ()))),
        "late": OutputSpec(uris["late"], tuple(written["late"]), count_by=late_by),
        # nullable: an unreadable file's reject row leaves the data columns null
        "rejects": OutputSpec(uris["rejects"], tuple(written["rejects"]),
                              count_by=(_ORIGIN, _FILE, _ERROR), total=_ROWS, nullable=True),
        "side_outputs": OutputSpec(uris["side_outputs"], tuple(written["side_outputs"])),
        # state entries: live entries per row when the state counts them (the general path's
        # keys), else one per row (a native window)
        "state": OutputSpec(uris["state"], tuple(written["state"]),
                            total="entries" if "entries" in written["state"] else None),
        "stats": OutputSpec(None, total="processed"),
    }
    try:
        done = write_routed(routed, specs, settings=settings, token=token, tasks=tasks)
    except Exception as exc:   # a user function failing in the walker, KEY_STATE_LIMIT...
        reraise(exc)
    return _figures(done, bool(late_by), retracting)


def is_small_run(rows: int | None) -> bool:
    """Whether a run of ``rows`` (new input plus saved state rows, ``None`` if unknown) is
    small (see the module docstring)."""
    return rows is not None and rows <= SMALL_RUN_ROWS


def small_writer_tasks(spark: Any) -> int:
    """A small run's writer tasks: one per core (``io_settings.cores``), not more.

    With two, most rows land in one writer task (``coalesce`` keeps the shuffled partitions
    apart from the cached ones), yet more tasks measured slower (``docs/performance.md``, "The
    thirteenth session"): they write the state as more files, and the next run then needs a
    stage and an exchange to join its state with its input, which it joins without one when
    both are a single partition."""
    from windowlib.runs.io_settings import cores

    return cores(spark)


def small_run(spark: Any, rows: int | None) -> Any:
    """A context manager: the settings of a small run (see the module docstring; none for a
    large or unknown one — ``rows``: new input plus saved state rows, ``None`` if unknown).
    Enter it before the run's frames are persisted (a cached plan keeps the settings it was
    planned with) and leave it after the write."""
    import contextlib

    from windowlib.engines.spark.session import scoped_conf
    from windowlib.runs.io_settings import io_parallelism
    from windowlib.runs.routing import writer_tasks

    if not is_small_run(rows):
        return contextlib.nullcontext(False)
    settings = {"spark.sql.adaptive.enabled": "false",
                "spark.sql.execution.arrow.maxRecordsPerBatch": str(SMALL_RUN_ARROW_ROWS)}
    if rows is not None and rows <= INTERPRETED_RUN_ROWS:
        settings.update(_INTERPRETED)
    cap = io_parallelism(spark, 1 << 30)
    if writer_tasks(spark) > cap:     # without coalescing, every shuffle partition is a task
        settings["spark.sql.shuffle.partitions"] = str(cap)
    return scoped_conf(spark, settings)


def _figures(done: RoutedWrite, histogram: bool, retracting: bool) -> StagedOutputs:
    out = StagedOutputs(frames=dict(done.frames), state_schema=done.schemas["state"],
                        firings_schema=done.schemas["firings"])
    out.processed = done.total("stats")
    out.late = done.rows("late")
    for (origin, path, error), (n, rows) in sorted(done.counts.get("rejects", {}).items(),
                                                   key=repr):
        if origin == "engine":
            out.engine_rejects += n
        elif origin == "schema":
            out.schema_rejects += n
        else:        # one reject row per unreadable file, standing for its rows (-1: unknown)
            out.bad_files.append({"path": path, "reason": error,
                                  "rows": rows if rows >= 0 else None})
    out.bad_files.sort(key=lambda b: b["path"])
    for group, (n, _) in done.counts.get("firings", {}).items():
        out.firings += n
        if retracting and group[1]:
            out.retractions += n
        else:
            out.by_timing[group[0]] = out.by_timing.get(group[0], 0) + n
    out.side_outputs = done.rows("side_outputs")
    out.state_rows = done.rows("state")
    out.state_entries = done.total("state") or out.state_rows
    if histogram:
        late = {g[0]: n for g, (n, _) in done.counts.get("late", {}).items()}
        out.lateness_histogram = [[name, late.get(name, 0)]
                                  for name, _ in LATENESS_BUCKETS]
    return out
