"""An incremental run's bundle plan from the Parquet footers the run reads anyway.

``stage_run`` reads each new file's footer before any Spark job (``schemas.read_footers``: the
schema reconciliation needs it). The same footers hold each file's row count and, per row
group, the min/max of the event-time column and the null counts of the key columns — what the
bundle plan (``engines/spark/bundles.plan_bundles``) would otherwise compute with an aggregate
job over the rows. ``bundle_stats.files_bundle_stats`` turns them into exact per-bundle figures
or says why it cannot (statistics missing, INT96 or local-time timestamps, null keys, event
times out of range...); then the plan falls back to the job.

Invariant: the figures are those of the rows the engine gets. Every file whose footer is
readable is counted, so a file whose footer reads but whose data does not (it becomes one
bad-file reject instead of rows) makes them wrong: ``FooterPlan.misread`` tells, and the run is
planned again from the rows (rare: a damaged file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.pipeline import Pipeline
from windowlib.runs.schemas import Footer

__all__ = ["EXPLICIT_SCHEMA_FOOTERS", "FooterPlan", "footer_plan", "footer_rows"]

# a source with an explicit schema needs no footer for its schema: read them for the plan only
# when there are few files (each footer is one small read on the driver)
EXPLICIT_SCHEMA_FOOTERS = 256


@dataclass(frozen=True)
class FooterPlan:
    """Per-bundle figures (``bundles``: partition value -> ``BundleStats``) of the rows in the
    files with readable footers (``files``), ``rows`` in all."""

    bundles: dict[Any, Any]
    rows: int
    files: frozenset[str]

    def misread(self, bad_files: Sequence[dict[str, Any]]) -> bool:
        """Whether a file counted here turned out unreadable (``StagedOutputs.bad_files``)."""
        return any(b["path"] in self.files for b in bad_files)


def footer_plan(pipeline: Pipeline, frame: Any, footers: Sequence[Footer],
                files: Sequence[Any]) -> FooterPlan | None:
    """The plan's figures from ``footers`` of ``files`` read as ``frame`` (the source's read:
    its schema gives the event-time column's type), or ``None`` when a footer of the files is
    missing or its statistics cannot give them exactly."""
    from windowlib.engines.spark.bundle_stats import files_bundle_stats

    if not footers or len(footers) != len(files):
        return None
    types = {f.name: type(f.dataType).__name__ for f in frame.schema.fields}
    if pipeline.timestamp not in types:
        return None
    readable = [f for f in footers if f.metadata is not None]
    stats, _ = files_bundle_stats([(f.partition_value, f.metadata) for f in readable],
                                  timestamp=pipeline.timestamp,
                                  ts_type=types[pipeline.timestamp],
                                  key_columns=pipeline.key_columns)
    if stats is None:
        return None
    return FooterPlan(stats, sum(s.count for s in stats.values()),
                      frozenset(f.uri for f in readable))


def footer_rows(footers: Sequence[Footer], files: Sequence[Any]) -> int | None:
    """The rows ``files`` hold by their footers, or ``None`` when a footer is missing or
    unreadable: a size for choosing how to run (``run_outputs.is_small_run``) when the
    statistics cannot give the plan's figures (null keys, say), never a figure itself."""
    if not footers or len(footers) != len(files) or any(f.metadata is None for f in footers):
        return None
    return sum(int(f.metadata.num_rows) for f in footers)
