"""Published outputs and their readers (SPEC §7, §9).

An output location is a **windowlib table**: ``{output}/_windowlib_table.json`` names the
pipeline's checkpoint; the data files of each run live with that run's committed version and are
listed in its commit record. Readers therefore see exactly the committed runs of the current
state generation — a staged or crashed run is invisible, and a rebuild replaces the history
atomically when its generation is published. (Bind one output to one pipeline: binding it to
another checkpoint is refused with ``OUTPUT_IN_USE``.)

- ``read_firings(output)``: every firing row of every committed run (with ``run_id``).
- ``read_latest(output)``: the last firing per window — the rows of its highest pane index,
  dropped when that pane was retracted (a session window merged away).
- ``read_late(output)``, ``read_rejects(output)``, ``read_side_outputs(output, tag=None)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from windowlib.core.errors import DefinitionError, StateError
from windowlib.core.outputs import OUTPUTS
from windowlib.core.pipeline import Pipeline
from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.columns import user_col
from windowlib.state.s3config import S3Settings

TABLE_FILE = "_windowlib_table.json"
TABLE_FORMAT = 1


def bind_output(output: str, checkpoint: Any, pipeline: Pipeline,
                settings: S3Settings | None = None) -> None:
    """Write (once) the pointer from ``output`` to the pipeline's checkpoint store."""
    from windowlib.state.stores import open_store

    store = open_store(output, settings)
    body = {"format_version": TABLE_FORMAT, "pipeline": pipeline.name,
            "checkpoint": checkpoint.root_store.root_uri.rstrip("/")}
    data = json.dumps(body, sort_keys=True).encode()
    if store.create_exclusive(TABLE_FILE, data):
        return
    current = _pointer(output, settings)
    if (current.get("pipeline"), current.get("checkpoint")) != (body["pipeline"],
                                                                 body["checkpoint"]):
        raise StateError(f"output {output} belongs to pipeline {current.get('pipeline')!r} "
                         f"with checkpoint {current.get('checkpoint')}; use another output "
                         "location", code="OUTPUT_IN_USE")


def _pointer(output: str, settings: S3Settings | None) -> dict[str, Any]:
    from windowlib.state.stores import open_store

    raw = open_store(output, settings).read_bytes(TABLE_FILE)
    if raw is None:
        raise StateError(f"{output} is not a windowlib output (no {TABLE_FILE}); has the "
                         "pipeline published a run yet?", code="OUTPUT_NOT_FOUND")
    try:
        body = json.loads(raw)
        if body.get("format_version") != TABLE_FORMAT:
            raise StateError(f"{output}: table format {body.get('format_version')!r} is not "
                             f"supported (this windowlib reads {TABLE_FORMAT})",
                             code="CHECKPOINT_FORMAT_UNSUPPORTED")
        return body
    except ValueError as exc:
        raise StateError(f"{output}/{TABLE_FILE} is corrupt", code="CHECKPOINT_CORRUPT") \
            from exc


def reader_store(output: str, settings: S3Settings | None = None) -> Any:
    """The checkpoint store ``output`` is bound to (read-only use: any fingerprint)."""
    from windowlib.state.checkpoint import CheckpointStore

    body = _pointer(output, settings)
    return CheckpointStore(body["checkpoint"], body["pipeline"], "reader", settings=settings)


def committed_commits(output: str, settings: S3Settings | None = None) -> list[Any]:
    """The commits whose outputs readers see (oldest first); the commit chain is verified
    (``CheckpointStore.committed``)."""
    return reader_store(output, settings).committed()


def read_output(output: str, name: str, *, spark: Any = None,
                settings: S3Settings | None = None) -> Any:
    """The committed rows of output ``name`` (one of ``OUTPUTS``) as one DataFrame. Every
    committed file is checked before the DataFrame is returned (present, its recorded size:
    one listing) and, with its checksum, as it is read (``CHECKPOINT_CORRUPT``)."""
    from pyspark.sql.types import StructType

    from windowlib.engines.spark.session import get_or_create_session
    from windowlib.runs.frames import FrameInfo, check_frames, read_frame
    from windowlib.runs.protocol import CommitDetails

    if name not in OUTPUTS:
        raise DefinitionError(f"unknown output {name!r}; one of {OUTPUTS}",
                              code="ARGUMENT_INVALID")
    spark = spark or get_or_create_session()
    store = reader_store(output, settings)
    frames = [FrameInfo.from_dict(info) for commit in store.committed()
              if (info := CommitDetails.of(commit.extra).frames.get(name)) is not None]
    if not frames:
        raise StateError(f"{output}: no committed run yet", code="OUTPUT_NOT_FOUND")
    check_frames(frames, store.uri, settings)
    return read_frame(spark, [f for frame in frames for f in frame.files],
                      StructType.fromJson(json.loads(frames[-1].schema_json)),
                      settings=settings)


def read_firings(output: str, **kwargs: Any) -> Any:
    """Committed firings of every run (SPEC §9)."""
    return read_output(output, "firings", **kwargs)


def read_late(output: str, **kwargs: Any) -> Any:
    """Elements dropped as too late, in committed runs."""
    return read_output(output, "late", **kwargs)


def read_rejects(output: str, **kwargs: Any) -> Any:
    """Quarantined elements with reasons, in committed runs."""
    return read_output(output, "rejects", **kwargs)


def read_side_outputs(output: str, tag: str | None = None, **kwargs: Any) -> Any:
    """``context.output(tag, value)`` values in committed runs: every row (key columns,
    ``tag``, ``value_json``, ``value_typed`` when a tag declares a schema, clocks), or with
    ``tag`` that tag's values alone (its declared columns, else ``value_json``)."""
    frame = read_output(output, "side_outputs", **kwargs)
    if tag is None:
        return frame
    from windowlib.engines.spark.outputs import side_values

    return side_values(frame, tag)


def latest_query(columns: Sequence[str], source: str, *, dialect: str = "spark") -> str:
    """The SQL of the latest view over firings ``source`` with ``columns`` — the one rule
    ``read_latest``, the Spark catalog's ``<pipeline>_latest`` view and non-Spark readers
    (``dialect="duckdb"``) share: rows at the window's highest pane index, unless that pane is
    a retraction (the window merged away). Key columns are every column before
    ``window_start``."""
    cols = list(columns)
    if "window_start" not in cols or "pane_index" not in cols:
        raise DefinitionError(f"not firings: {cols}", code="ARGUMENT_INVALID")
    quote = sql_identifier if dialect == "spark" else (lambda c: '"' + c.replace('"', '""') + '"')
    window = ", ".join(quote(c) for c in (*cols[:cols.index("window_start")], "window_start",
                                          "window_end"))
    shown = ", ".join(quote(c) for c in cols)
    query = (f"SELECT *, MAX({quote('pane_index')}) OVER (PARTITION BY {window}) AS __wl_top "
             f"FROM {source}")
    query = f"SELECT * FROM ({query}) AS t WHERE {quote('pane_index')} = __wl_top"
    if "retract" in cols:
        query = (f"SELECT * FROM (SELECT *, MAX(CAST({quote('retract')} AS INT)) OVER "
                 f"(PARTITION BY {window}) AS __wl_gone FROM ({query}) AS u) AS v "
                 "WHERE __wl_gone = 0")
    return f"SELECT {shown} FROM ({query}) AS w"


def read_latest(output: str, **kwargs: Any) -> Any:
    """The last firing per window (:func:`latest_query`)."""
    firings = read_firings(output, **kwargs)
    return firings.sparkSession.sql(latest_query(firings.columns, "{firings}"),
                                    firings=firings)


def lateness_histogram(late: Any, timestamp: str) -> list[list[Any]]:
    """How late the dropped elements were (watermark - event time), in coarse buckets; one
    small aggregate."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if timestamp not in late.columns:
        return []
    ts = late.schema[timestamp].dataType
    if isinstance(ts, T.TimestampType | T.TimestampNTZType):
        event_ms = F.unix_millis(user_col(timestamp).cast("timestamp"))
    elif isinstance(ts, T.IntegralType):
        event_ms = user_col(timestamp)
    else:
        return []
    hours = (F.unix_millis(F.col("watermark")) - event_ms) / F.lit(3_600_000)
    buckets = [("<1h", 1), ("1-6h", 6), ("6-24h", 24)]
    label = F.lit(">1d")
    for name, bound in reversed(buckets):
        label = F.when(hours < bound, F.lit(name)).otherwise(label)
    counts = {r["b"]: int(r["n"]) for r in
              late.select(label.alias("b")).groupBy("b").agg(F.count(F.lit(1)).alias("n"))
              .collect()}
    return [[name, counts.get(name, 0)] for name in ("<1h", "1-6h", "6-24h", ">1d")]
