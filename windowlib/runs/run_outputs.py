"""What one incremental run stages, written by ONE Spark job (``routing.write_routed``).

The general path's tagged output (one row per firing, late element, reject, side-output value,
pane-state row and per-partition statistics row; ``__wl_kind``) — or a native incremental
run's window rows, late, rejects and processed rows (``routed_native_frame``) — and the
source's bad rows and unreadable files are projected into one routed frame; a single pass
writes firings, late, rejects, side outputs and the new pane state, each under its own staging
location, and counts what it wrote. The run's figures come from those counts — no separate
counting job:

- ``processed``: elements the walkers processed (their ``stats`` rows), or the kept rows of a
  native run (one ``stats`` row each);
- ``late``, ``rejects``, ``firings`` (by timing; retractions apart), ``side_outputs``,
  ``state_rows``/``state_entries``: rows written to each output;
- ``schema_rejects`` (rows that did not fit the schema) and ``bad_files`` (unreadable files,
  one reject row each) split the rejects that never reached the engine;
- ``lateness_histogram``: late rows by how far behind the watermark they were.

The columns of each output are exactly those of the engine's public frames
(``engine._public_frames``, ``GeneralRun.state``/``side_outputs``) on both paths, except the
pane state, whose format belongs to the path (``state_kind`` in the commit record); tests pin
this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from windowlib.runs.routing import (
    MULTI,
    OUT,
    SEP,
    OutputSpec,
    RoutedWrite,
    route_columns,
    write_routed,
)
from windowlib.state.s3config import S3Settings

__all__ = ["KIND_OUTPUTS", "StagedOutputs", "routed_run_frame", "stage_outputs"]

# tagged ``__wl_kind`` -> routed output
KIND_OUTPUTS = {"firing": "firings", "late": "late", "reject": "rejects",
                "side": "side_outputs", "state": "state", "stats": "stats"}
BUCKETS = (("<1h", 1), ("1-6h", 6), ("6-24h", 24))
# counted, not written (user columns never start with ``__wl_``)
_ORIGIN, _FILE, _ERROR, _BUCKET = "__wl_origin", "__wl_bad_file", "__wl_bad_error", "__wl_bucket"
_INTERNAL = (_ORIGIN, _FILE, _ERROR, _BUCKET)


def lateness_label(hours: Any) -> Any:
    """The lateness bucket (``<1h``, ``1-6h``, ``6-24h``, ``>1d``) of an hours Column."""
    from pyspark.sql import functions as F

    label = F.lit(">1d")
    for name, bound in reversed(BUCKETS):
        label = F.when(hours < bound, F.lit(name)).otherwise(label)
    return label


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
    bad_files: list[dict[str, str]] = field(default_factory=list)
    firings: int = 0
    by_timing: dict[str, int] = field(default_factory=dict)
    retractions: int = 0
    side_outputs: int = 0
    state_rows: int = 0
    state_entries: int = 0
    lateness_histogram: list[list[Any]] = field(default_factory=list)

    @property
    def rejects(self) -> int:
        return self.engine_rejects + self.schema_rejects + len(self.bad_files)


def _columns(run: Any, run_id: str | None, timestamp: str) -> dict[str, list[tuple[str, Any]]]:
    """Per output, ``(name, Column over the tagged frame)`` — the public frames' columns."""
    from pyspark.sql import functions as F

    from windowlib.engines.spark.columns import (
        ELEMENT,
        NEXT_ET,
        NEXT_PT,
        REASON,
        SIZE,
        STATE,
        VALUE,
    )
    from windowlib.engines.spark.state import STATE_FORMAT_VERSION

    def ts(name: str) -> Any:
        return F.timestamp_millis(F.col(name))

    keys = [(c, F.col(f"`{c}`")) for c in run.key_columns]
    element = [(c, F.col(f"{ELEMENT}.`{c}`")) for c in run.element_columns]
    element_types = {f.name: f.dataType for f in run.tagged.schema[ELEMENT].dataType.fields}
    firings = [*keys, ("window_start", ts("window_start")), ("window_end", ts("window_end")),
               ("pane_index", F.col("pane_index")), ("timing", F.col("timing")),
               ("is_final", F.col("is_final"))]
    if run.retracting:
        firings.append(("retract", F.col("retract")))
    firings += [("watermark", ts("watermark")), ("processing_time", ts("processing_time")),
                ("run_id", F.lit(run_id).cast("string"))]
    firings += [(c, F.col(f"`{c}`")) for c in run.result_columns]
    late = _late_columns(element, element_types, timestamp, F.col(REASON))
    rejects = _engine_reject_columns(element, F.col(REASON))
    side = [*keys, ("tag", F.col(REASON)), ("value_json", F.col(VALUE)),
            ("watermark", ts("watermark")), ("processing_time", ts("processing_time"))]
    state = [*keys, ("state", F.col(STATE)), ("next_event_timer", F.col(NEXT_ET)),
             ("next_processing_timer", F.col(NEXT_PT)), ("entries", F.col(SIZE)),
             ("format_version", F.lit(STATE_FORMAT_VERSION).cast("int"))]
    return {"firings": firings, "late": late, "rejects": rejects, "side_outputs": side,
            "state": state, "stats": [("processed", F.col(SIZE))]}


def _late_columns(element: list[tuple[str, Any]], types: dict[str, Any], timestamp: str,
                  reason: Any) -> list[tuple[str, Any]]:
    """The late output's columns: the element, its reason, the watermark it missed (a ms
    column ``watermark`` of the frame) and, when the event time has a ms reading, the
    internal lateness bucket of the run report's histogram."""
    from pyspark.sql import functions as F

    cols = [*element, ("reason", reason), ("watermark", F.timestamp_millis(F.col("watermark")))]
    columns = dict(element)
    event = (_ms_column(columns[timestamp], types[timestamp])
             if timestamp in columns and timestamp in types else None)
    if event is not None:
        cols.append((_BUCKET, lateness_label((F.col("watermark") - event) / F.lit(3_600_000))))
    return cols


def _engine_reject_columns(element: list[tuple[str, Any]], reason: Any
                           ) -> list[tuple[str, Any]]:
    """The rejects' columns for rows the engine refused (no file, no read error)."""
    from pyspark.sql import functions as F

    none = F.lit(None).cast("string")
    return [*element, ("reason", reason), (_ORIGIN, F.lit("engine")), (_FILE, none),
            (_ERROR, none)]


def _ms_column(col: Any, dtype: Any) -> Any:
    """``col`` (of Spark type ``dtype``) as epoch ms: timestamps and integers (already ms);
    ``None`` for any other type."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, T.TimestampType | T.TimestampNTZType):
        return F.unix_millis(col.cast("timestamp"))
    if isinstance(dtype, T.IntegralType):
        return col.cast("long")
    return None


def routed_run_frame(run: Any, run_id: str | None, source_frame: Any, timestamp: str
                     ) -> tuple[Any, dict[str, list[str]], dict[str, Any]]:
    """The routed frame of a run: the tagged output plus the source's bad rows and files.

    Returns ``(routed, written columns per output, Spark schema per output)``."""
    from pyspark.sql import functions as F

    from windowlib.engines.spark.columns import KIND

    outputs = _columns(run, run_id, timestamp)
    route = F.col(KIND)
    kind = None
    for k, name in KIND_OUTPUTS.items():
        kind = (F.when(route == k, F.lit(name)) if kind is None
                else kind.when(route == k, F.lit(name)))
    kind = kind.otherwise(route)          # an unknown kind fails the writer: never dropped
    tagged = run.tagged.select(kind.alias(OUT), *[c for name, cols in outputs.items()
                                                  for c in route_columns(name, cols)])
    written = {n: [c for c, _ in cols if c not in _INTERNAL] for n, cols in outputs.items()}
    schemas = _schemas(tagged, written)
    routed = tagged.unionByName(_source_rejects(source_frame, run.element_columns),
                                allowMissingColumns=True)
    return routed, written, _nullable_rejects(schemas)


def _nullable_rejects(schemas: dict[str, Any]) -> dict[str, Any]:
    """The rejects' columns are nullable in either branch (unreadable files: all null)."""
    from pyspark.sql.types import StructField, StructType

    return {**schemas, "rejects": StructType([StructField(f.name, f.dataType, True)
                                              for f in schemas["rejects"].fields])}


def _source_rejects(source_frame: Any, data_cols: Any) -> Any:
    """Rows the engine never saw, routed to the rejects: schema mismatches and unreadable
    files (one row each)."""
    from pyspark.sql import functions as F

    from windowlib.runs.source import CORRUPT_COLUMN, ERROR_COLUMN, FILE_COLUMN

    error, corrupt = F.col(ERROR_COLUMN), F.col(CORRUPT_COLUMN)
    types = {f.name: f.dataType for f in source_frame.schema.fields}
    ok = error.isNull()
    reason = F.when(ok, F.lit("schema_mismatch")).otherwise(F.concat(
        F.lit("unreadable_file: "), F.col(FILE_COLUMN), F.lit(": "), error))
    bad_cols = [(c, F.when(ok, F.col(f"`{c}`")).otherwise(F.lit(None).cast(types[c])))
                for c in data_cols]
    bad_cols += [("reason", reason),
                 (_ORIGIN, F.when(ok, F.lit("schema")).otherwise(F.lit("file"))),
                 (_FILE, F.when(ok, F.lit(None).cast("string")).otherwise(F.col(FILE_COLUMN))),
                 (_ERROR, error)]
    return source_frame.filter(error.isNotNull() | corrupt.isNotNull()).select(
        F.lit("rejects").alias(OUT), *route_columns("rejects", bad_cols))


def _schemas(routed: Any, written: dict[str, list[str]]) -> dict[str, Any]:
    """Per output, the Spark schema of its written columns (one analysis of ``routed``)."""
    from pyspark.sql.types import StructField, StructType

    fields = {f.name: f for f in routed.schema.fields}
    return {name: StructType([StructField(c, fields[f"{name}{SEP}{c}"].dataType,
                                          fields[f"{name}{SEP}{c}"].nullable) for c in cols])
            for name, cols in written.items()}


def routed_native_frame(run: Any, run_id: str | None, source_frame: Any, timestamp: str
                        ) -> tuple[Any, dict[str, list[str]], dict[str, Any]]:
    """The routed frame of a native incremental run (``native_incremental``): firings and
    window state from its window rows, late, rejects, the processed count, and the source's
    bad rows and files — the same outputs and columns as ``routed_run_frame``, with the
    native window state."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from windowlib.engines.spark.native_incremental import FIRES, FIRING, KEEPS, STATE

    windows = run.windows
    fires, keeps = F.col(FIRES), F.col(KEEPS)
    kind = (F.when(fires & keeps, F.lit(f"firings{MULTI}state"))
            .when(fires, F.lit("firings")).otherwise(F.lit("state")))
    firings = [(c, F.col(f"{FIRING}.`{c}`")) for c in run.firing_columns]
    firings.insert(len(firings) - len(run.result_columns),
                   ("run_id", F.lit(run_id).cast("string")))
    state = [(c, F.col(f"{STATE}.`{c}`")) for c in run.state_columns]
    key_types = {f.name: f.dataType for f in source_frame.schema.fields}
    side = [*[(c, F.lit(None).cast(key_types[c])) for c in run.key_columns],
            ("tag", F.lit(None).cast("string")), ("value_json", F.lit(None).cast("string")),
            ("watermark", F.lit(None).cast(T.TimestampType())),
            ("processing_time", F.lit(None).cast(T.TimestampType()))]
    window_rows = windows.select(kind.alias(OUT), *route_columns("firings", firings),
                                 *route_columns("state", state),
                                 *route_columns("side_outputs", side))
    element = [(c, F.col(f"`{c}`")) for c in run.element_columns]
    late_cols = _late_columns(element, {f.name: f.dataType for f in run.late.schema.fields},
                              timestamp, F.col("reason"))
    late = run.late.select(F.lit("late").alias(OUT), *route_columns("late", late_cols))
    reject_cols = _engine_reject_columns(element, F.col("reason"))
    rejects = run.rejects.select(F.lit("rejects").alias(OUT),
                                 *route_columns("rejects", reject_cols))
    stats = run.processed.select(F.lit("stats").alias(OUT),
                                 *route_columns("stats", [("processed", F.col("processed"))]))
    routed = (window_rows.unionByName(late, allowMissingColumns=True)
              .unionByName(rejects, allowMissingColumns=True)
              .unionByName(stats, allowMissingColumns=True)
              .unionByName(_source_rejects(source_frame, run.element_columns),
                           allowMissingColumns=True))
    outputs = {"firings": firings, "late": late_cols, "rejects": reject_cols,
               "side_outputs": side, "state": state}
    written = {n: [c for c, _ in cols if c not in _INTERNAL] for n, cols in outputs.items()}
    written["stats"] = ["processed"]
    return routed, written, _nullable_rejects(_schemas(routed, written))


def stage_outputs(run: Any, run_id: str | None, source_frame: Any, timestamp: str,
                  uris: dict[str, str], *, settings: S3Settings | None = None,
                  token: str | None = None) -> StagedOutputs:
    """Write every output of ``run`` (``uris``: output name -> staging location, ``state``
    included) in one Spark job and return their ``FrameInfo`` and figures."""
    from windowlib.engines.spark.errors import reraise
    from windowlib.engines.spark.native_incremental import NativeIncrementalRun

    native = isinstance(run, NativeIncrementalRun)
    build = routed_native_frame if native else routed_run_frame
    routed, written, schemas = build(run, run_id, source_frame, timestamp)
    late_by = (_BUCKET,) if f"late::{_BUCKET}" in routed.columns else ()
    specs = {
        "firings": OutputSpec(uris["firings"], tuple(written["firings"]), schemas["firings"],
                              count_by=("timing", *(("retract",) if run.retracting else ()))),
        "late": OutputSpec(uris["late"], tuple(written["late"]), schemas["late"],
                           count_by=late_by),
        "rejects": OutputSpec(uris["rejects"], tuple(written["rejects"]), schemas["rejects"],
                              count_by=(_ORIGIN, _FILE, _ERROR)),
        "side_outputs": OutputSpec(uris["side_outputs"], tuple(written["side_outputs"]),
                                   schemas["side_outputs"]),
        # state entries: the general path's live entries per key; a native state row is one
        # window (counted as one entry)
        "state": OutputSpec(uris["state"], tuple(written["state"]), schemas["state"],
                            total=None if native else "entries"),
        "stats": OutputSpec(None, total="processed"),
    }
    try:
        done = write_routed(routed, specs, settings=settings, token=token)
    except Exception as exc:   # a user function failing in the walker, KEY_STATE_LIMIT...
        reraise(exc)
    return _figures(done, schemas, bool(late_by), run.retracting)


def _figures(done: RoutedWrite, schemas: dict[str, Any], histogram: bool,
             retracting: bool) -> StagedOutputs:
    out = StagedOutputs(frames=dict(done.frames), state_schema=schemas["state"],
                        firings_schema=schemas["firings"])
    out.processed = done.total("stats")
    out.late = done.rows("late")
    for (origin, path, error), (n, _) in sorted(done.counts.get("rejects", {}).items(),
                                                key=repr):
        if origin == "engine":
            out.engine_rejects += n
        elif origin == "schema":
            out.schema_rejects += n
        else:
            out.bad_files += [{"path": path, "reason": error} for _ in range(n)]
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
                                  for name in (*(b for b, _ in BUCKETS), ">1d")]
    return out
