"""What an incremental run reads before it runs, from the committed checkpoint and the new files'
footers: the schema to read the files with, the engine's prior state, the state's row count,
each file's row count. Reads only what the commit record names (never a listing that could see
leftovers)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from windowlib.core.loop import RunClock
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MIN_TS
from windowlib.runs.protocol import CommitDetails
from windowlib.runs.schemas import Footer
from windowlib.runs.source import PartitionedSource
from windowlib.state.checkpoint import Commit
from windowlib.state.manifest import FileEntry
from windowlib.state.s3config import S3Settings


def input_schema(pipeline: Pipeline, source: PartitionedSource, parent: Commit | None,
                  footers: list[Footer]) -> tuple[Any, list[str]]:
    """The schema to read this run's files with: the checkpoint's recorded input schema,
    reconciled with the new files' footers (``runs/schemas.py``: safe widenings recorded,
    anything else ``SCHEMA_MISMATCH`` before anything is staged)."""
    from windowlib.runs.schemas import file_schemas, reconcile

    found = file_schemas(source, footers)
    recorded = CommitDetails.of(parent.extra).input_schema if parent is not None else None
    if not found:
        return None, []
    from pyspark.sql.types import StructType

    return reconcile(pipeline, StructType.fromJson(recorded) if recorded else None, found)


def prior_state(parent: Commit | None, spark: Any, settings: S3Settings | None) -> Any:
    """The engine's ``PriorState``: the committed clock and exactly the committed state files
    (never a listing that could see leftovers)."""
    from windowlib.engines.base import PriorState
    from windowlib.runs.frames import FrameInfo, read_frame

    if parent is None:
        return PriorState()
    clock = RunClock(*(MIN_TS if v is None else int(v) for v in (
        parent.watermark_ms, parent.processing_time_ms, parent.max_event_time_ms)))
    details = CommitDetails.of(parent.extra)
    info = details.frames.get("state")
    if not (details.state_schema and info and "state" in parent.record["prefixes"]):
        return PriorState(clock)
    from pyspark.sql.types import StructType

    frame = read_frame(spark, FrameInfo.from_dict(info),
                       StructType.fromJson(details.state_schema), settings=settings)
    return PriorState(clock, frame, details.state_kind)


def state_rows(parent: Commit | None) -> int:
    """Rows of the committed pane state (from its record: no read)."""
    if parent is None:
        return 0
    return int((CommitDetails.of(parent.extra).frames.get("state") or {}).get("rows") or 0)


def with_footer_rows(files: Sequence[FileEntry], footers: Sequence[Footer]) -> list[FileEntry]:
    """``files`` with their row counts from ``footers`` (the consumed files a commit records;
    lineage lists them). A file without a readable footer keeps ``rows=None``."""
    rows = {f.uri: f.metadata.num_rows for f in footers if f.metadata is not None}
    return [dataclasses.replace(f, rows=rows.get(f.path)) for f in files]
