"""Incremental runs (SPEC §8): plan → stage → (validate) → publish.

A run consumes only input files the checkpoint's manifest has not seen, continues from the last
committed checkpoint (pane state + run clock) and publishes outputs and the new checkpoint with
ONE conditional write of the commit record (``windowlib.state``). The steps are separate
functions so that an orchestrator can run them as separate tasks, passing only small JSON:

- ``plan_run`` lists the source and compares it with the manifest: the new files per partition
  (each partition with new files is one bundle, in partition order). Nothing new → nothing to do.
- ``stage_run`` reads exactly those files (Spark tasks), runs the engine through the executor
  contract (``engines.spark.executors.SparkExecutor``) from the saved state and clock, and
  writes every output and the new pane state under a fresh staging prefix in ONE Spark job
  whose counts give the run's figures (``run_outputs.py``). The commit it will make is staged
  too (``pending.json``, for a publish in another process); nothing is visible yet.
- ``publish_run`` commits the staged version (or fails with ``CHECKPOINT_CONFLICT`` when
  another run published first; the loser's files are removed).

Reruns: files that land late in an already-consumed partition are new files; they form a bundle
whose processing time is ``max(P_prev, end of partition)`` — the current processing time — and
meet the current watermark, so windows within allowed lateness fire LATE (pane indices continue)
and the rest goes to the late output. A retried run whose commit succeeded (same ``run_id``) is
a no-op. Crash points: ``state.faults.CrashPoint``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from windowlib.core.errors import DefinitionError, StateError
from windowlib.core.outputs import OUTPUTS
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import finite_ms
from windowlib.core.watermarks import WatermarkStrategy, effective_strategy
from windowlib.runs.footer_plan import EXPLICIT_SCHEMA_FOOTERS, footer_plan, footer_rows
from windowlib.runs.lineage_emit import emits_lineage
from windowlib.runs.outputs import bind_output
from windowlib.runs.protocol import CommitDetails, PlannedBundle, RunPlan, RunStatus
from windowlib.runs.run_inputs import input_schema, prior_state, state_rows, with_footer_rows
from windowlib.runs.schemas import read_footers
from windowlib.runs.source import PartitionedSource, SourceFile
from windowlib.runs.staged import StagedRun, restore_staged
from windowlib.runs.summary import RunSummary, add_phases, iso_ms, timed
from windowlib.runs.tables import sync_tables
from windowlib.state.checkpoint import CheckpointStore, Commit, Staging
from windowlib.state.faults import CrashPoint, fault_point
from windowlib.state.manifest import FileEntry
from windowlib.state.records import RunRecord
from windowlib.state.s3config import S3Settings

Progress = Callable[[str], None]
STAGED = ("state", *OUTPUTS)     # what a run stages, the pane state included


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    return f"run-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def open_checkpoint(pipeline: Pipeline, checkpoint: str | CheckpointStore,
                    settings: S3Settings | None = None, **kwargs: Any) -> CheckpointStore:
    """The pipeline's checkpoint store (a ``CheckpointStore`` given is used as is: rebuilds
    pass their generation's line)."""
    if isinstance(checkpoint, CheckpointStore):
        return checkpoint
    return CheckpointStore(checkpoint, pipeline.name, pipeline.fingerprint, settings=settings,
                           earlier_fingerprints=pipeline.earlier_fingerprints, **kwargs)


def plan_run(pipeline: Pipeline, source: PartitionedSource, checkpoint: str | CheckpointStore,
             *, partitions: Sequence[Any] | None = None, run_id: str | None = None,
             settings: S3Settings | None = None) -> RunPlan:
    """The new files in the partitions to scan (``partitions``: ``(first, last)`` or None)."""
    cs = open_checkpoint(pipeline, checkpoint, settings)
    parent = cs.latest()
    manifest = cs.manifest(parent)
    first, last = partitions if partitions is not None else (None, None)
    bundles = []
    for part in source.list_partitions(first, last):
        new = manifest.new_files([FileEntry(f.path, int(f.size), etag=str(f.version),
                                            partition=f.partition_value) for f in part.files])
        if new:
            bundles.append(PlannedBundle(part.value, part.processing_time_ms, tuple(new)))
    return RunPlan(pipeline.name, run_id or new_run_id(),
                   parent.version if parent else None, tuple(bundles))


def stage_run(pipeline: Pipeline, source: PartitionedSource,
              checkpoint: str | CheckpointStore, output: str,
              plan: RunPlan, *, watermark: WatermarkStrategy | None = None, spark: Any = None,
              settings: S3Settings | None = None, result_schema: str | None = None,
              processing_time: Any = None, progress: Progress | None = None,
              max_key_state: int | None = None, path: str = "auto") -> StagedRun:
    """Run the engine over the plan's new files from the saved state; stage everything.

    ``path``: ``"auto"`` (the path of the saved state; for a first run the planner's choice),
    or ``"native"``/``"general"`` to insist (a mismatch with the saved state's path is a
    ``StateError``). ``processing_time``: the logical time of partitions whose value is not a
    time (default: now)."""
    from pyspark.sql import functions as F

    from windowlib.engines.base import TimePolicy
    from windowlib.engines.spark.executors import FrameBundles, SparkExecutor
    from windowlib.engines.spark.session import get_or_create_session
    from windowlib.runs.frames import read_frame
    from windowlib.runs.io_settings import io_parallelism
    from windowlib.runs.run_outputs import (
        is_small_run,
        small_run,
        small_writer_tasks,
        stage_outputs,
    )
    from windowlib.runs.source import CORRUPT_COLUMN, ERROR_COLUMN

    say = progress or (lambda _m: None)
    started = time.monotonic()
    strategy = effective_strategy(watermark).describe()   # recorded; refused before any I/O
    spark = spark or get_or_create_session()
    phases: dict[str, float] = {}
    with timed(phases, "inputs"):
        cs = open_checkpoint(pipeline, checkpoint, settings)
        parent = cs.latest()
        _check_parent(pipeline, parent, plan.parent_version)
        bind_output(output, cs, pipeline, settings)
        files = [SourceFile(f.path, int(f.size), str(f.etag), b.partition)
                 for b in plan.bundles for f in b.files]
        say(f"reading {len(files)} new file(s) in {len(plan.bundles)} partition(s)")
        footers = read_footers(source, files) \
            if source.schema is None or len(files) <= EXPLICIT_SCHEMA_FOOTERS else []
        schema, changes = input_schema(pipeline, source, parent, footers)
        frame = source.read(spark, files, schema=schema).frame
        stats = footer_plan(pipeline, frame, footers, files)
        prior = prior_state(parent, spark, settings)
        options = {} if max_key_state is None else {"max_key_state": max_key_state}
        executor = SparkExecutor(path=path, incremental=True, result_schema=result_schema,
                                 persist=False, **options)
        rows_schema = frame.drop(ERROR_COLUMN, CORRUPT_COLUMN).schema
        chosen, _ = executor.choose(pipeline, rows_schema, prior)
    new_rows = stats.rows if stats is not None else footer_rows(footers, files)
    rows_in_run = new_rows + state_rows(parent) if new_rows is not None else None
    small = is_small_run(rows_in_run)
    target = io_parallelism(spark, 1 << 30)
    if chosen == "native" and len(files) < target and not small:
        # a task reads whole files: with fewer files than cores, spread the rows before the
        # native plan's row stages (the general path shuffles by key anyway); a small run's
        # rows stay where they are read (the shuffle would cost more than it spreads)
        frame = frame.repartition(target)
    scope = contextlib.ExitStack()     # a small run: one job (run_outputs.small_run)
    scope.enter_context(small_run(spark, rows_in_run))
    try:
        frame = frame.persist()    # the bundle plan (no footers), engine, source rejects
        rows = frame.filter(F.col(ERROR_COLUMN).isNull() & F.col(CORRUPT_COLUMN).isNull()) \
            .drop(ERROR_COLUMN, CORRUPT_COLUMN)
        say("running the pipeline")
        logical = _dt.datetime.now(_dt.UTC) if processing_time is None else processing_time
        policy = TimePolicy(watermark=watermark, processing_time=logical)

        def stage(bundle_stats: Any) -> tuple[Any, Staging, Any]:
            with timed(phases, "build"):
                run = executor.run(pipeline, FrameBundles(rows, source.partition,
                                                          source.arrival_order, bundle_stats),
                                   prior=prior, time=policy, run_id=plan.run_id)
            staging = cs.begin(plan.run_id, parent=parent)
            try:
                say(f"staging version {staging.version}")
                with timed(phases, "write"):
                    return run, staging, stage_outputs(
                        run.outputs, frame, pipeline.timestamp,
                        {name: staging.uri(name) for name in STAGED}, settings=settings,
                        token=staging.token,
                        tasks=small_writer_tasks(spark) if small else None)
            except BaseException:
                staging.abort()
                raise

        run, staging, staged = stage(stats.bundles if stats is not None else None)
        if stats is not None and stats.misread(staged.bad_files):
            # a file's footer was readable but its data was not: its rows are no input, so
            # the plan from the footers was wrong; plan from the rows read
            staging.abort()
            run, staging, staged = stage(None)
        try:
            fault_point(CrashPoint.AFTER_STAGE)
            summary = _summary(pipeline, plan, run, staged, staging, files, started)
            summary.schema_changes, summary.phases = changes, add_phases(phases)
            data = [f for f in frame.schema.fields
                    if f.name != source.partition and not f.name.startswith("__wl_")]
            from pyspark.sql.types import StructType

            details = CommitDetails({name: staged.frames[name].to_dict() for name in STAGED},
                                    staged.state_schema.jsonValue(), run.state_kind,
                                    input_schema=StructType(data).jsonValue(),
                                    watermark_strategy=strategy)
            clock = run.clock
            record = RunRecord(   # no clock sentinels in records: None until known
                watermark_ms=finite_ms(clock.watermark),
                processing_time_ms=finite_ms(clock.processing_time),
                max_event_time_ms=finite_ms(clock.max_event_ts),
                stats={k: v for k, v in summary.to_dict().items()
                       if k not in ("validation", "status", "published")},
                extra=details.to_extra(), consumed=with_footer_rows(plan.files, footers),
                prefixes=list(STAGED))
            # the staged firings, for a validation gate: exactly the staged files (no
            # listing, nothing recomputed), built on first use (most runs have no gate)
            firings, firings_schema = staged.frames["firings"], staged.firings_schema
            result = StagedRun(staging, summary, record, read_firings=lambda: read_frame(
                spark, firings, firings_schema, settings=settings))
            staging.write_json("pending", {"record": record.to_dict(), **result.ref()})
            return result
        except BaseException:
            staging.abort()
            raise
    finally:
        frame.unpersist()
        scope.close()


def _check_parent(pipeline: Pipeline, parent: Commit | None, planned: int | None) -> None:
    if (parent.version if parent else None) != planned:
        raise StateError(f"pipeline {pipeline.name!r}: the checkpoint moved to version "
                         f"{parent.version if parent else None} since this run was planned "
                         f"on {planned}; another run holds the pipeline — plan again",
                         code="CHECKPOINT_CONFLICT")


def _summary(pipeline: Pipeline, plan: RunPlan, run: Any, staged: Any, staging: Staging,
             files: list[SourceFile], started: float) -> RunSummary:
    """The run's figures, from what the routed write counted (conservation checked here,
    once, before anything is published)."""
    summary = RunSummary(pipeline=pipeline.name, run_id=plan.run_id, status=RunStatus.STAGED,
                         started_at=_now(), path=run.path,
                         inputs=(run.inputs or 0) + staged.schema_rejects
                         + staged.bad_file_rows,
                         processed=staged.processed, late=staged.late, rejects=staged.rejects,
                         firings=staged.firings, firings_by_timing=staged.by_timing,
                         retractions=staged.retractions, side_outputs=staged.side_outputs,
                         state_rows=staged.state_rows, state_entries=staged.state_entries,
                         state_bytes=staged.frames["state"].bytes, files_consumed=len(files),
                         partitions=plan.partitions, bad_files=staged.bad_files,
                         lateness_histogram=staged.lateness_histogram,
                         version=staging.version, generation=staging.generation)
    summary.check_conservation()
    w = run.clock.watermark
    summary.watermark_ms = finite_ms(w)
    summary.watermark, summary.processing_time = iso_ms(w), iso_ms(run.clock.processing_time)
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def publish_run(pipeline: Pipeline, checkpoint: str | CheckpointStore,
                staged: StagedRun | dict[str, Any], *,
                validation: dict[str, Any] | None = None, publish_on_failure: bool = False,
                settings: S3Settings | None = None) -> RunSummary:
    """Commit a staged run (a ``StagedRun`` or its ``ref()`` from another process).

    A failed ``validation`` (``{"success": False, ...}``) blocks the publish — the staged files
    are removed and the summary says ``blocked`` — unless ``publish_on_failure`` is set, which
    is recorded in the commit. Another run that committed first makes it a
    ``CHECKPOINT_CONFLICT`` (``CheckpointStore.commit``); a retry of this very commit is a
    no-op."""
    if isinstance(staged, dict):
        staged = restore_staged(open_checkpoint(pipeline, checkpoint, settings), staged)
    cs = staged.staging.checkpoint
    summary = staged.summary
    summary.validation = validation
    summary.publish_on_failure = bool(publish_on_failure)
    if validation is not None and not validation.get("success", False) \
            and not publish_on_failure:
        staged.staging.abort()
        summary.status, summary.published = RunStatus.BLOCKED, False
        summary.finished_at = _now()
        return summary
    record = staged.record
    details = CommitDetails(**{**asdict(staged.details), "validation": validation,
                               "publish_on_failure": bool(publish_on_failure)})
    with timed(summary.phases, "commit"):
        cs.commit(staged.staging, RunRecord(record.watermark_ms, record.processing_time_ms,
                                            record.max_event_time_ms, record.stats,
                                            details.to_extra(), record.consumed,
                                            record.prefixes))
    summary.status, summary.published = RunStatus.PUBLISHED, True
    with timed(summary.phases, "tables"):
        summary.tables = sync_tables(cs, settings=settings)    # a rebuild's line: nothing yet
    summary.finished_at = _now()
    return summary


@emits_lineage(open_checkpoint)   # OpenLineage events when configured (docs/lineage.md)
def run_incremental(pipeline: Pipeline, source: PartitionedSource,
                    checkpoint: str | CheckpointStore,
                    output: str, partitions: Sequence[Any] | None = None,
                    watermark: WatermarkStrategy | None = None, *, spark: Any = None,
                    run_id: str | None = None, settings: S3Settings | None = None,
                    result_schema: str | None = None, processing_time: Any = None,
                    validate: Callable[[Any, RunSummary], dict[str, Any]] | None = None,
                    publish_on_failure: bool = False, dry_run: bool = False,
                    progress: Progress | None = None, path: str = "auto",
                    rebuild: bool = False) -> RunSummary:
    """One incremental run (SPEC §9): plan, stage, optionally validate, publish. ``path``:
    see ``stage_run`` (the native path runs declarative pipelines with the default trigger in
    Spark SQL, carrying window state between runs).

    ``validate(staged_firings_df, summary) -> {"success": bool, "failed": [...], ...}`` gates
    the publish (see ``publish_run``). With ``run_id`` given, a retry of a run whose commit
    already succeeded returns that commit's summary (status ``already_published``).

    ``rebuild=True`` (SPEC §8): a new state generation from scratch over ``partitions`` (all
    when ``None``), run in its own line and published — one atomic commit replacing the state
    and the history readers see — only when its run published (validated); until then readers
    and runs keep the current generation. It is how a changed definition or a damaged
    checkpoint starts over. Status ``rebuild published``, or ``rebuild not published
    (blocked | nothing_new)``.
    """
    if not isinstance(source, PartitionedSource):
        raise DefinitionError("source must be a wl.PartitionedSource", code="ARGUMENT_INVALID")
    if run_id is not None:
        done = open_checkpoint(pipeline, checkpoint, settings).find_run(run_id)
        if done is not None:
            summary = RunSummary.from_dict({**done.stats, "pipeline": pipeline.name,
                                            "run_id": run_id,
                                            "status": RunStatus.ALREADY_PUBLISHED})
            summary.published, summary.version = True, done.version
            return summary
    options = {"spark": spark, "settings": settings, "result_schema": result_schema,
               "processing_time": processing_time, "validate": validate,
               "publish_on_failure": publish_on_failure, "progress": progress, "path": path}
    phases: dict[str, float] = {}
    with timed(phases, "tables"):   # repairs a crash between a commit record and the tables
        sync_tables(open_checkpoint(pipeline, checkpoint, settings), settings=settings,
                    spark=spark)
    if rebuild:
        return _rebuild(pipeline, source, open_checkpoint(pipeline, checkpoint, settings),
                        output, partitions, watermark, run_id, dry_run, options)
    with timed(phases, "plan"):
        plan = plan_run(pipeline, source, checkpoint, partitions=partitions, run_id=run_id,
                        settings=settings)
    if plan.empty or dry_run:
        return RunSummary(pipeline=pipeline.name, run_id=plan.run_id,
                          status=RunStatus.DRY_RUN if dry_run else RunStatus.NOTHING_NEW,
                          version=plan.parent_version, started_at=_now(),
                          finished_at=_now(), files_consumed=len(plan.files),
                          partitions=plan.partitions, phases=phases)
    staged = stage_run(pipeline, source, checkpoint, output, plan, watermark=watermark,
                       spark=spark, settings=settings, result_schema=result_schema,
                       processing_time=processing_time, progress=progress, path=path)
    staged.summary.phases = add_phases(phases, staged.summary.phases)
    outcome = None
    try:
        if validate is not None:
            with timed(staged.summary.phases, "validate"):
                outcome = validate(staged.firings, staged.summary)
    except BaseException:     # the gate could not decide (QUALITY_UNAVAILABLE...): fail closed
        staged.staging.abort()
        raise
    if progress is not None:
        progress(f"publishing version {staged.staging.version}")
    return publish_run(pipeline, checkpoint, staged, validation=outcome,
                       publish_on_failure=publish_on_failure, settings=settings)


def _rebuild(pipeline: Pipeline, source: PartitionedSource, main: CheckpointStore, output: str,
             partitions: Sequence[Any] | None, watermark: WatermarkStrategy | None,
             run_id: str | None, dry_run: bool, options: dict[str, Any]) -> RunSummary:
    """``run_incremental(..., rebuild=True)``: one run in a new generation's line, then the
    generation's commit in the main line. No generation is started for a dry run or an empty
    range; an unpublished line is left to ``gc``."""
    first, last = partitions if partitions is not None else (None, None)
    parts = source.list_partitions(first, last)
    files = sum(len(p.files) for p in parts)
    if dry_run or not files:
        return RunSummary(pipeline=pipeline.name, run_id=run_id or "rebuild",
                          status=RunStatus.DRY_RUN if dry_run else RunStatus.REBUILD_NOTHING_NEW,
                          started_at=_now(), finished_at=_now(), files_consumed=files,
                          partitions=[p.value for p in parts])
    line = main.start_generation(run_id or "rebuild")
    summary = run_incremental(pipeline, source, line, output, partitions, watermark,
                              run_id=run_id, **options)
    if summary.status != RunStatus.PUBLISHED:
        summary.status = summary.status.as_rebuild()
        return summary
    commit = main.commit_generation(line, run_id=summary.run_id)   # the run that built it
    summary.version, summary.generation = commit.version, commit.generation
    summary.tables = sync_tables(main, settings=options["settings"])
    summary.status = RunStatus.REBUILD_PUBLISHED
    return summary
