"""Incremental runs (SPEC §8): plan → stage → (validate) → publish.

A run consumes only input files the checkpoint's manifest has not seen, continues from the last
committed checkpoint (pane state + run clock) and publishes outputs and the new checkpoint with
ONE conditional write of the commit record (``windowlib.state``). The three steps are separate
functions so that an orchestrator can run them as separate tasks, passing only small JSON:

- ``plan_run`` lists the source, compares it with the manifest: the new files per partition
  (each partition with new files is one bundle, in partition order). Nothing new → nothing to do.
- ``stage_run`` reads exactly those files (Spark tasks), runs the engine from the saved state
  and clock, and writes firings, late, rejects, side outputs and the new pane state under a
  fresh staging prefix — all in ONE Spark job whose per-file and per-group counts give the
  run's figures (``run_outputs.py``); with the bundle plan's aggregate a run is a handful of
  Spark jobs, each paying Spark's scheduling latency once. It records the pending commit
  (``pending.json``) there. Nothing is visible yet.
- ``publish_run`` commits the staged version (or fails with ``CHECKPOINT_CONFLICT`` when
  another run published first; the loser's files are removed).

Reruns: files that land late in an already-consumed partition are new files; they form a bundle
whose processing time is ``max(P_prev, end of partition)`` — the current processing time — and
meet the current watermark, so windows within allowed lateness fire LATE (pane indices continue)
and the rest goes to the late output. A retried run whose commit succeeded (same ``run_id``) is
a no-op. Crash points (``windowlib.state.faults``): ``after_stage_state``,
``after_stage_outputs``, ``before_commit``, ``after_commit``.
"""

from __future__ import annotations

import datetime as _dt
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from windowlib.core.errors import InputError, StateError
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MIN_TS
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.runs.outputs import OUTPUTS, bind_output
from windowlib.runs.source import PartitionedSource
from windowlib.runs.summary import RunSummary, iso_ms
from windowlib.state.checkpoint import CheckpointStore, Staging
from windowlib.state.faults import fault_point
from windowlib.state.manifest import FileEntry
from windowlib.state.records import RunRecord
from windowlib.state.s3config import S3Settings

Progress = Callable[[str], None]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    return f"run-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def _entry(f: Any) -> FileEntry:
    version = str(f.version)
    return FileEntry(path=f.path, size=int(f.size), etag=version,
                     partition=f.partition_value)


@dataclass
class RunPlan:
    """What a run will consume (JSON-able: ``to_dict``/``from_dict``)."""

    pipeline: str
    run_id: str
    parent_version: int | None
    bundles: list[dict[str, Any]] = field(default_factory=list)
    # [{"partition": value, "processing_time_ms": int | None, "files": [FileEntry dict]}]

    @property
    def empty(self) -> bool:
        return not self.bundles

    @property
    def files(self) -> list[FileEntry]:
        return [FileEntry.from_dict(f) for b in self.bundles for f in b["files"]]

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "run_id": self.run_id,
                "parent_version": self.parent_version, "bundles": self.bundles}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunPlan:
        return cls(data["pipeline"], data["run_id"], data.get("parent_version"),
                   list(data.get("bundles") or []))


def open_checkpoint(pipeline: Pipeline, checkpoint: str | CheckpointStore,
                    settings: S3Settings | None = None, **kwargs: Any) -> CheckpointStore:
    """The pipeline's checkpoint store (a ``CheckpointStore`` given is used as is: rebuilds
    pass their generation's line)."""
    if isinstance(checkpoint, CheckpointStore):
        return checkpoint
    return CheckpointStore(checkpoint, pipeline.name, pipeline.fingerprint, settings=settings,
                           **kwargs)


def plan_run(pipeline: Pipeline, source: PartitionedSource, checkpoint: str | CheckpointStore,
             *,
             partitions: Sequence[Any] | None = None, run_id: str | None = None,
             settings: S3Settings | None = None) -> RunPlan:
    """The new files in the partitions to scan (``partitions``: ``(first, last)`` or None)."""
    cs = open_checkpoint(pipeline, checkpoint, settings)
    parent = cs.latest()
    manifest = cs.manifest(parent)
    first, last = (partitions or (None, None)) if partitions is not None else (None, None)
    bundles = []
    for part in source.list_partitions(first, last):
        new = manifest.new_files([_entry(f) for f in part.files])
        if new:
            bundles.append({"partition": part.value,
                            "processing_time_ms": part.processing_time_ms,
                            "files": [asdict(f) for f in new]})
    return RunPlan(pipeline.name, run_id or new_run_id(),
                   parent.version if parent else None, bundles)


@dataclass
class StagedRun:
    """A staged, unpublished run: where its files are and its summary so far."""

    staging: Staging
    summary: RunSummary
    record: RunRecord
    firings: Any = None   # the staged firings DataFrame (read back), for validation

    def ref(self) -> dict[str, Any]:
        """Small JSON that ``publish_run`` needs in another process."""
        s = self.staging
        return {"version": s.version, "generation": s.generation, "run_id": s.run_id,
                "token": s.token, "parent_version": s.parent.version if s.parent else None,
                "names": sorted(s.names), "summary": self.summary.to_dict()}


def stage_run(pipeline: Pipeline, source: PartitionedSource,
              checkpoint: str | CheckpointStore, output: str,
              plan: RunPlan, *, watermark: WatermarkStrategy | None = None, spark: Any = None,
              settings: S3Settings | None = None, result_schema: str | None = None,
              processing_time: Any = None, progress: Progress | None = None,
              max_key_state: int | None = None, path: str = "auto") -> StagedRun:
    """Run the engine over the plan's new files from the saved state; stage everything.

    ``path``: ``"auto"`` (the path of the saved state; for a first run the planner's choice,
    ``planner.incremental_path``), or ``"native"``/``"general"`` to insist (a mismatch with
    the saved state's path is a ``StateError``)."""
    from windowlib.core.loop import RunClock
    from windowlib.engines.spark.general import DEFAULT_MAX_KEY_STATE, run_general
    from windowlib.engines.spark.session import get_or_create_session
    from windowlib.runs.frames import FrameInfo, read_frame
    from windowlib.runs.run_outputs import stage_outputs
    from windowlib.runs.source import CORRUPT_COLUMN, ERROR_COLUMN

    say = progress or (lambda _m: None)
    started = time.monotonic()
    spark = spark or get_or_create_session()
    cs = open_checkpoint(pipeline, checkpoint, settings)
    parent = cs.latest()
    if (parent.version if parent else None) != plan.parent_version:
        raise StateError(f"pipeline {pipeline.name!r}: the checkpoint moved to version "
                         f"{parent.version if parent else None} since this run was planned "
                         f"on {plan.parent_version}; another run holds the pipeline — plan "
                         "again", code="CHECKPOINT_CONFLICT")
    bind_output(output, cs, pipeline, settings)
    summary = RunSummary(pipeline=pipeline.name, run_id=plan.run_id, status="staged",
                         started_at=_now(), path="general")

    # --- read exactly the new files (cached: the bundle plan, the engine and the rejects of
    # bad rows/files all read it; the bundle plan's aggregate fills the cache) ---------------
    files = _source_files(plan)
    say(f"reading {len(files)} new file(s) in {len(plan.bundles)} partition(s)")
    frame = source.read(spark, files).frame
    from pyspark.sql import functions as F

    # --- the engine, from the saved state and clock --------------------------------------
    clock = RunClock()
    state = None
    path = choose_path(pipeline, frame, parent, path)   # only the frame's schema is read
    summary.path = path
    if path == "native":
        # a task reads whole files: with fewer files than cores, spread the rows before the
        # native plan's row stages (the general path shuffles by key anyway)
        from windowlib.runs.frames import io_parallelism

        target = io_parallelism(spark, 1 << 30)
        if len(files) < target:
            frame = frame.repartition(target)
    frame = frame.persist()
    good = frame.filter(F.col(ERROR_COLUMN).isNull() & F.col(CORRUPT_COLUMN).isNull())
    if parent is not None:
        clock = RunClock(_ms(parent.watermark_ms), _ms(parent.processing_time_ms),
                         _ms(parent.max_event_time_ms))
        schema = parent.extra.get("state_schema")
        info = (parent.extra.get("frames") or {}).get("state")
        if schema and info and "state" in parent.record["prefixes"]:
            from pyspark.sql.types import StructType

            # exactly the committed files (never a listing that could see leftovers)
            state = read_frame(spark, FrameInfo.from_dict(info), StructType.fromJson(schema),
                               settings=settings)
    times = {b["partition"]: b["processing_time_ms"] for b in plan.bundles
             if b["processing_time_ms"] is not None}
    logical = processing_time
    if logical is None and len(times) < len(plan.bundles):
        logical = _dt.datetime.now(_dt.UTC)
    given: Any = times if logical is None else {
        b["partition"]: times.get(b["partition"], logical) for b in plan.bundles}
    say("running the pipeline")
    run = None
    try:
        rows = good.drop(ERROR_COLUMN, CORRUPT_COLUMN)
        if path == "native":
            from windowlib.engines.spark.native_incremental import run_native_incremental

            run = run_native_incremental(pipeline, rows, source.partition, watermark=watermark,
                                         order_by=list(source.arrival_order),
                                         processing_time=given, state=state, clock=clock)
        else:
            run = run_general(pipeline, rows, source.partition, watermark=watermark,
                              processing_time=given, order_by=list(source.arrival_order),
                              result_schema=result_schema,
                              max_key_state=max_key_state or DEFAULT_MAX_KEY_STATE,
                              state=state, clock=clock, emit_state=True, persist=False)
        # --- stage: every output and the new state in one Spark job ----------------------
        staging = cs.begin(plan.run_id, parent=parent)
    except BaseException:
        frame.unpersist()
        raise
    try:
        say(f"staging version {staging.version}")
        staged_out = stage_outputs(run, plan.run_id, frame, pipeline.compile().timestamp,
                                   {name: staging.uri(name) for name in ("state", *OUTPUTS)},
                                   settings=settings, token=staging.token)
        fault_point("after_stage_state")
        fault_point("after_stage_outputs")
        infos = {name: staged_out.frames[name].to_dict() for name in ("state", *OUTPUTS)}
        summary.inputs = (sum(run.plan.counts) + staged_out.schema_rejects
                          + len(staged_out.bad_files))
        summary.processed = staged_out.processed
        summary.late = staged_out.late
        summary.rejects = staged_out.rejects
        summary.firings = staged_out.firings
        summary.firings_by_timing = staged_out.by_timing
        summary.retractions = staged_out.retractions
        summary.side_outputs = staged_out.side_outputs
        summary.state_rows = staged_out.state_rows
        summary.state_entries = staged_out.state_entries
        summary.state_bytes = staged_out.frames["state"].bytes
        summary.files_consumed = len(files)
        summary.partitions = [b["partition"] for b in plan.bundles]
        summary.bad_files = staged_out.bad_files
        summary.check_conservation()
        summary.lateness_histogram = staged_out.lateness_histogram
        plan_b = run.plan
        w = plan_b.watermarks[-1] if len(plan_b) else clock.watermark
        p = plan_b.processing_times[-1] if len(plan_b) else clock.processing_time
        m = plan_b.max_event_ts[-1] if len(plan_b) else clock.max_event_ts
        summary.version, summary.generation = staging.version, staging.generation
        summary.watermark_ms = None if w == MIN_TS else w
        summary.watermark, summary.processing_time = iso_ms(w), iso_ms(p)
        record = RunRecord(
            watermark_ms=w, processing_time_ms=p, max_event_time_ms=m,
            stats={k: v for k, v in summary.to_dict().items()
                   if k not in ("validation", "status", "published")},
            extra={"state_schema": staged_out.state_schema.jsonValue(), "frames": infos,
                   "state_kind": STATE_KINDS[path]},
            consumed=plan.files, prefixes=["state", *OUTPUTS])
        summary.seconds = round(time.monotonic() - started, 3)
        staged = StagedRun(staging, summary, record)
        staging.write_json("pending", {"record": _record_dict(record), **staged.ref()})
        # exactly the staged files: no listing, and nothing is recomputed
        staged.firings = read_frame(spark, staged_out.frames["firings"],
                                    staged_out.firings_schema, settings=settings)
        return staged
    except BaseException:
        staging.abort()
        raise
    finally:
        frame.unpersist()


def publish_run(pipeline: Pipeline, checkpoint: str | CheckpointStore,
                staged: StagedRun | dict[str, Any], *,
                validation: dict[str, Any] | None = None, publish_on_failure: bool = False,
                settings: S3Settings | None = None) -> RunSummary:
    """Commit a staged run (a ``StagedRun`` or its ``ref()`` from another process).

    A failed ``validation`` (``{"success": False, ...}``) blocks the publish — the staged files
    are removed and the summary says ``blocked`` — unless ``publish_on_failure`` is set, which
    is recorded in the commit."""
    if isinstance(staged, dict):
        staged = _restore_staged(open_checkpoint(pipeline, checkpoint, settings), staged)
    cs = staged.staging.checkpoint
    summary = staged.summary
    summary.validation = validation
    summary.publish_on_failure = bool(publish_on_failure)
    if validation is not None and not validation.get("success", False) \
            and not publish_on_failure:
        staged.staging.abort()
        summary.status, summary.published = "blocked", False
        summary.finished_at = _now()
        return summary
    record = staged.record
    extra = dict(record.extra)
    extra["validation"] = validation
    extra["publish_on_failure"] = bool(publish_on_failure)
    record = RunRecord(record.watermark_ms, record.processing_time_ms, record.max_event_time_ms,
                       record.stats, extra, record.consumed, record.prefixes)
    cs.commit(staged.staging, record)
    summary.status, summary.published = "published", True
    summary.finished_at = _now()
    return summary


def run_incremental(pipeline: Pipeline, source: PartitionedSource,
                    checkpoint: str | CheckpointStore,
                    output: str, partitions: Sequence[Any] | None = None,
                    watermark: WatermarkStrategy | None = None, *, spark: Any = None,
                    run_id: str | None = None, settings: S3Settings | None = None,
                    result_schema: str | None = None, processing_time: Any = None,
                    validate: Callable[[Any, RunSummary], dict[str, Any]] | None = None,
                    publish_on_failure: bool = False, dry_run: bool = False,
                    progress: Progress | None = None, path: str = "auto") -> RunSummary:
    """One incremental run (SPEC §9): plan, stage, optionally validate, publish. ``path``:
    see ``stage_run`` (the native path runs declarative pipelines with the default trigger in
    Spark SQL, carrying window state between runs).

    ``validate(staged_firings_df, summary) -> {"success": bool, "failed": [...], ...}`` gates
    the publish (see ``publish_run``). With ``run_id`` given, a retry of a run whose commit
    already succeeded returns that commit's summary (status ``already_published``).
    """
    if not isinstance(source, PartitionedSource):
        raise InputError("source must be a wl.PartitionedSource", code="ARGUMENT_INVALID")
    if run_id is not None:
        done = open_checkpoint(pipeline, checkpoint, settings).find_run(run_id)
        if done is not None:
            summary = RunSummary.from_dict({**done.stats, "pipeline": pipeline.name,
                                            "run_id": run_id, "status": "already_published"})
            summary.published, summary.version = True, done.version
            return summary
    plan = plan_run(pipeline, source, checkpoint, partitions=partitions, run_id=run_id,
                    settings=settings)
    if plan.empty or dry_run:
        summary = RunSummary(pipeline=pipeline.name, run_id=plan.run_id,
                             status="dry_run" if dry_run else "nothing_new",
                             version=plan.parent_version, started_at=_now(),
                             finished_at=_now(), files_consumed=len(plan.files),
                             partitions=[b["partition"] for b in plan.bundles])
        return summary
    staged = stage_run(pipeline, source, checkpoint, output, plan, watermark=watermark,
                       spark=spark, settings=settings, result_schema=result_schema,
                       processing_time=processing_time, progress=progress, path=path)
    outcome = validate(staged.firings, staged.summary) if validate is not None else None
    if progress is not None:
        progress(f"publishing version {staged.staging.version}")
    return publish_run(pipeline, checkpoint, staged, validation=outcome,
                       publish_on_failure=publish_on_failure, settings=settings)


# --- helpers ----------------------------------------------------------------------------------

# the pane state's format per path (recorded in every commit; a checkpoint without it was
# written by the general path)
STATE_KINDS = {"general": "general-keys", "native": "native-windows"}
INCREMENTAL_PATHS = ("auto", "native", "general")


def choose_path(pipeline: Pipeline, rows: Any, parent: Any, requested: str = "auto") -> str:
    """The path of this run: the saved state's path (a checkpoint keeps its path until a
    rebuild), else the planner's choice for incremental runs; ``requested`` insists."""
    from windowlib.engines.spark.planner import incremental_path

    if requested not in INCREMENTAL_PATHS:
        raise InputError(f"path must be one of {', '.join(INCREMENTAL_PATHS)}, got "
                         f"{requested!r}", code="ARGUMENT_INVALID")
    saved = None
    if parent is not None and "state" in (parent.record.get("prefixes") or []):
        kind = parent.extra.get("state_kind", STATE_KINDS["general"])
        saved = next((p for p, k in STATE_KINDS.items() if k == kind), None)
        if saved is None:
            raise StateError(f"pipeline {pipeline.name!r}: the checkpoint's pane state has "
                             f"the unknown kind {kind!r} (a newer windowlib wrote it?); "
                             "upgrade, or start a new state generation (backfill --rebuild)",
                             code="CHECKPOINT_FORMAT_UNSUPPORTED")
    types = {f.name: f.dataType for f in rows.schema.fields}
    choice = incremental_path(pipeline, types)
    path = saved or (choice.path if requested == "auto" else requested)
    if requested != "auto" and path != requested:
        raise StateError(f"pipeline {pipeline.name!r}: the checkpoint's pane state belongs to "
                         f"the {saved} path, not {requested}; start a new state generation "
                         "(backfill --rebuild) to switch", code="STATE_SCHEMA_MISMATCH")
    if path == "native" and choice.path != "native":
        raise StateError(f"pipeline {pipeline.name!r} cannot run natively ("
                         f"{'; '.join(choice.reasons)}); its checkpoint holds native window "
                         "state: start a new state generation (backfill --rebuild)",
                         code="STATE_SCHEMA_MISMATCH")
    return path


def _ms(value: Any) -> int:
    return MIN_TS if value is None else int(value)


def _source_files(plan: RunPlan) -> list[Any]:
    from windowlib.runs.source import SourceFile

    return [SourceFile(f["path"], int(f["size"]), str(f["etag"]), b["partition"])
            for b in plan.bundles for f in b["files"]]


def _record_dict(record: RunRecord) -> dict[str, Any]:
    return {"watermark_ms": record.watermark_ms,
            "processing_time_ms": record.processing_time_ms,
            "max_event_time_ms": record.max_event_time_ms, "stats": dict(record.stats),
            "extra": dict(record.extra), "consumed": [asdict(f) for f in record.consumed],
            "prefixes": list(record.prefixes or [])}


def _restore_staged(cs: CheckpointStore, ref: dict[str, Any]) -> StagedRun:
    parent = cs.get(ref["parent_version"]) if ref.get("parent_version") else None
    staging = Staging(cs, int(ref["version"]), int(ref["generation"]), ref["run_id"],
                      ref["token"], parent, names=set(ref["names"]))
    pending = cs.pipeline_store.read_bytes(f"{staging.key}/pending.json")
    if pending is None:
        raise StateError(f"staged run {ref['run_id']} (version {ref['version']}) is gone: it "
                         "was published, aborted or garbage-collected; run again",
                         code="STAGING_MISSING")
    import json

    rec = json.loads(pending)["record"]
    record = RunRecord(rec["watermark_ms"], rec["processing_time_ms"], rec["max_event_time_ms"],
                       rec["stats"], rec["extra"],
                       [FileEntry.from_dict(f) for f in rec["consumed"]], rec["prefixes"])
    return StagedRun(staging, RunSummary.from_dict(ref["summary"]), record)
