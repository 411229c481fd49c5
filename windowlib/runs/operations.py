"""Operations on registered jobs: run, status, backfill, gc (what the CLI and the DAGs call).

A *job* is any object with the attributes of ``jobs.registry.PipelineJob`` (``name``,
``pipeline``, ``watermark``, ``result_schema``, ``expectations``, ``source_for(root)``,
``locations(root)``; ``retain_versions`` is optional, default 3). The registry module is
``jobs.registry`` unless ``WINDOWLIB_REGISTRY`` names another module exposing ``get(name)``
and ``registry()``.

The quality gate fails closed: every job has expectations (the suite derived from its
pipeline, plus its own), so a run with validation on that cannot be validated — Great
Expectations not importable, or the validation itself erroring — raises
``QualityError(QUALITY_UNAVAILABLE)`` and publishes nothing. Only ``validate=False`` (the CLI's
``--no-validate``) publishes unvalidated, and the commit records ``validation: off``.
"""

from __future__ import annotations

import importlib
import math
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from windowlib.core.errors import DefinitionError, QualityError, suggests_rebuild
from windowlib.core.partitions import check_partition_range
from windowlib.runs.incremental import Progress, open_checkpoint, run_incremental
from windowlib.runs.protocol import RunPlan, RunStatus
from windowlib.runs.summary import RunSummary

DEFAULT_REGISTRY = "jobs.registry"


def registry_name() -> str:
    """The pipeline registry's module name: ``$WINDOWLIB_REGISTRY``, else ``jobs.registry``."""
    return os.environ.get("WINDOWLIB_REGISTRY", DEFAULT_REGISTRY)


def registry_module() -> Any:
    name = registry_name()
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise DefinitionError(f"cannot import the pipeline registry {name!r} ({exc}); run from "
                              "the project directory or set WINDOWLIB_REGISTRY",
                              code="REGISTRY_MISSING") from exc


def get_job(name: str) -> Any:
    return registry_module().get(name)


def job_session(spark: Any = None) -> Any:
    """``spark`` (default ``get_or_create_session()``) with windowlib and the registry's top-level
    package (where the jobs' functions live) shipped to its executors; nothing is shipped (and
    the registry not looked up) on a local master (``engines.spark.shipping``). A registry the
    driver cannot find as source is not shipped: executors that need it then fail with
    ``MODULE_UNAVAILABLE`` naming it."""
    from windowlib.core.errors import ExecutionError
    from windowlib.engines.spark.session import get_or_create_session
    from windowlib.engines.spark.shipping import is_local_master, ship_code

    spark = spark or get_or_create_session()
    if is_local_master(spark):
        return spark
    try:
        ship_code(spark, [registry_name()])
    except ExecutionError:
        ship_code(spark)
    return spark


def job_code_digest() -> str | None:
    """The digest of the code ``job_session`` ships (windowlib and the registry's package,
    ``shipping.code_digest``): a Spark session that ran other code is not reused. ``None``
    when windowlib itself has no Python source to digest (then no session is reused)."""
    from windowlib.core.errors import ExecutionError
    from windowlib.engines.spark.shipping import code_digest

    try:
        return code_digest([registry_name()])
    except ExecutionError:
        pass
    try:
        return code_digest()
    except ExecutionError:
        return None


def default_root() -> str:
    module = registry_module()
    root = getattr(module, "default_root", None)
    if root is None:
        raise DefinitionError("the registry has no default_root(); pass --root",
                              code="ARGUMENT_INVALID")
    return root()


Gate = Callable[[Any, Any], dict[str, Any]]
VALIDATION_OFF = {"success": True, "status": "off", "failed": [],
                  "reason": "turned off by the caller (validate=False / --no-validate)"}


def _unavailable(job: Any, exc: BaseException) -> QualityError:
    return QualityError(
        f"pipeline {job.name!r} has expectations but cannot be validated: Great Expectations "
        f"is not importable ({type(exc).__name__}: {exc}); nothing was published. Install "
        "great-expectations, or turn validation off explicitly (--no-validate, "
        "validate=False: the commit records validation 'off')", code="QUALITY_UNAVAILABLE")


def require_quality(job: Any) -> None:
    """Raise ``QualityError(QUALITY_UNAVAILABLE)`` unless Great Expectations and windowlib's
    quality module import (checked before a run stages anything)."""
    try:
        import great_expectations  # noqa: F401

        from windowlib.quality import validate as _validate  # noqa: F401
    except ImportError as exc:
        raise _unavailable(job, exc) from exc


def validator(job: Any, context_dir: str | None = None) -> Gate:
    """The GX gate for ``job``'s staged firings: ``gate(firings_df, summary)`` returns the
    outcome's JSON (``status`` ``passed``/``failed``; a failed one blocks the publish).
    Raises ``QualityError(QUALITY_UNAVAILABLE)`` — now when GX is not importable, or later from
    the gate when the expectations cannot be built or evaluated."""
    require_quality(job)
    from windowlib.quality import validate_outputs

    def validate(firings: Any, summary: Any) -> dict[str, Any]:
        data = summary if isinstance(summary, Mapping) else summary.to_dict()
        try:
            extra = list(job.expectations()) if job.expectations else []
        except ImportError as exc:
            raise _unavailable(job, exc) from exc
        outcome = validate_outputs(job.pipeline, firings, data, extra_expectations=extra,
                                   context_dir=context_dir)
        return outcome.to_dict()

    return validate


def validation_off(firings: Any, summary: Any) -> dict[str, Any]:
    """The gate of a run whose caller turned validation off: publishes, recorded as ``off``."""
    return dict(VALIDATION_OFF, failed=[])


def run_job(job: Any, root: str, *, partitions: Sequence[Any] | None = None,
            run_id: str | None = None, spark: Any = None, validate: bool = True,
            publish_on_failure: bool = False, dry_run: bool = False,
            progress: Progress | None = None, rebuild: bool = False) -> RunSummary:
    """One incremental run (or, ``rebuild=True``, a rebuild) of a registered job under
    ``root`` (see ``run_incremental``).

    ``validate=True`` gates the publish with the job's expectations and fails closed:
    ``QUALITY_UNAVAILABLE`` before anything is staged (or a rebuild's generation started) when
    GX is missing, or from the gate when the validation itself errors (the staged run is then
    never committed; ``gc`` removes it). ``validate=False`` publishes unvalidated and records
    ``validation: off``."""
    if partitions is not None:      # before anything is listed or staged
        check_job_range(job, *partitions)
    checkpoint, output = job.locations(root)
    docs = f"{root.rstrip('/')}/_windowlib/quality/{job.name}"
    source = job.source_for(root)
    gate: Gate | None = None
    if not dry_run:
        source.require_location()   # a missing source is told before a JVM is started
        gate = validator(job, _local_path(docs)) if validate else validation_off
        spark = job_session(spark)
    return run_incremental(job.pipeline, source, checkpoint, output, partitions,
                           job.watermark, spark=spark, run_id=run_id,
                           result_schema=job.result_schema, validate=gate,
                           publish_on_failure=publish_on_failure, dry_run=dry_run,
                           progress=progress, rebuild=rebuild)


def check_job_range(job: Any, first: Any, last: Any) -> None:
    """``core.partitions.check_partition_range`` with the job's partition column and, when
    the job declares one (``partition_step``: ``hour``/``day``), its partitions' precision."""
    source = getattr(job, "source", None)
    check_partition_range(first, last, getattr(source, "partition", None),
                          getattr(job, "partition_step", None))


def backfill_job(job: Any, root: str, first: Any, last: Any, *, rebuild: bool = False,
                 spark: Any = None, validate: bool = True, dry_run: bool = False,
                 run_id: str | None = None, progress: Progress | None = None
                 ) -> RunSummary:
    """Process partitions ``first..last`` (both ``None``: every partition).

    ``rebuild=False``: an incremental run over the range (files that landed late become LATE
    firings against the current state). ``rebuild=True``: ``run_incremental(...,
    rebuild=True)`` over the range — a new state generation from scratch, published
    (atomically replacing what readers see) only when its run validated; until then readers
    keep the old generation."""
    if (first is None) != (last is None):
        raise DefinitionError("first and last partitions go together (or neither: all)",
                              code="ARGUMENT_INVALID")
    partitions = None if first is None else (first, last)
    return run_job(job, root, partitions=partitions, spark=spark, validate=validate,
                   dry_run=dry_run, run_id=run_id, progress=progress, rebuild=rebuild)


def rebuild_line(exc: BaseException, program: Sequence[str], pipeline: str,
                 root: str | None) -> str | None:
    """``rebuild with: <command>`` when ``exc`` suggests a rebuild: the exact command of the
    entry point ``program`` (e.g. ``["windowlib", "backfill"]``) for this pipeline and the root
    it ran with (``None``: the default root); ``None`` otherwise."""
    if not suggests_rebuild(exc):
        return None
    argv = [*program, "--pipeline", pipeline, *(["--root", root] if root else []), "--rebuild"]
    return "rebuild with: " + shlex.join(argv)


def is_blocked(status: Any) -> bool:
    """Whether a run's (or rebuild's) status, or its JSON value, says validation blocked the
    publish."""
    try:
        return RunStatus(status).blocked
    except ValueError:
        return False


def blocked_message(name: str, validation: dict[str, Any] | None, override: str) -> str:
    """What to tell an operator when validation blocked a publish: the failed expectations,
    the Data Docs, and how to publish anyway (``override``: e.g. a flag or a Param)."""
    validation = validation or {}
    failed = validation.get("failed") or ["(no detail)"]
    docs = validation.get("data_docs") or "(no Data Docs site)"
    return (f"pipeline {name!r}: the audit failed, nothing was published (staged outputs and "
            f"state removed). Failed expectations: {'; '.join(map(str, failed))}. Data Docs: "
            f"{docs}. Fix the data or the pipeline and run again, or {override} to publish "
            "anyway (recorded in the commit).")


GC_GRACE_HOURS = 6.0


def gc_job(job: Any, root: str, *, grace_hours: float = GC_GRACE_HOURS,
           retain_versions: int | None = None) -> dict[str, Any]:
    """Checkpoint housekeeping of a registered job (``state.gc.collect`` on its main line):
    removes staging prefixes no commit names once their version is taken or they have been
    idle for ``grace_hours`` (a crashed run), the state snapshots of versions older than the
    newest ``retain_versions`` (default: the job's), and superseded or abandoned rebuild
    generations. Never touches a commit record, published outputs, or a run younger than the
    grace period. Its cost grows with the checkpoint's history (it lists it): run it on a
    schedule (the ``windowlib_maintenance`` DAG, ``windowlib gc``), not in every run."""
    if isinstance(grace_hours, bool) or not isinstance(grace_hours, int | float) \
            or not math.isfinite(grace_hours) or grace_hours < 0:
        raise DefinitionError(f"grace_hours must be a finite number >= 0, got {grace_hours!r}",
                              code="ARGUMENT_INVALID")
    keep = getattr(job, "retain_versions", 3) if retain_versions is None else retain_versions
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise DefinitionError(f"retain_versions must be an int >= 1, got {keep!r}",
                              code="ARGUMENT_INVALID")
    checkpoint, _ = job.locations(root)
    cs = open_checkpoint(job.pipeline, checkpoint, retain_versions=keep)
    report = cs.gc(grace_seconds=float(grace_hours) * 3600.0)
    return {"pipeline": job.name, "checkpoint": checkpoint, "retain_versions": keep,
            "grace_hours": float(grace_hours),
            "removed_stagings": list(report.removed_stagings),
            "pruned_snapshots": list(report.pruned),
            "removed_generations": list(report.removed_generations),
            "removed_objects": report.removed_objects}


def verify_job(job: Any, root: str, *, spark: Any = None) -> Any:
    """``runs.verify.verify_checkpoint`` for a registered job (a ``VerifyReport``)."""
    from windowlib.runs.verify import verify_checkpoint

    checkpoint, _ = job.locations(root)
    cs = open_checkpoint(job.pipeline, checkpoint)
    return verify_checkpoint(cs, job_session(spark))


def _local_path(uri: str) -> str | None:
    """The local path of a ``file://`` URI or plain path; ``None`` for S3."""
    from windowlib.state.uri import Uri

    loc = Uri.parse(uri, paths=True)
    return loc.arrow_path if loc.scheme == "file" else None


# --- the write-audit-publish steps as separate calls (Airflow tasks pass their JSON) ----------

def plan_job(job: Any, root: str, partitions: Sequence[Any] | None = None,
             run_id: str | None = None) -> dict[str, Any]:
    """Step 1: the new files to consume (``{"empty": True, ...}`` when nothing is new). The
    output tables are brought in step first (a crash after an earlier commit record)."""
    from windowlib.runs.incremental import plan_run
    from windowlib.runs.tables import sync_tables

    checkpoint, _ = job.locations(root)
    sync_tables(open_checkpoint(job.pipeline, checkpoint), catalog=False)
    plan = plan_run(job.pipeline, job.source_for(root), checkpoint, partitions=partitions,
                    run_id=run_id)
    return {**plan.to_dict(), "empty": plan.empty, "files": len(plan.files)}


def stage_job(job: Any, root: str, plan: dict[str, Any], *, spark: Any = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """Step 2: run the engine and stage outputs + state; returns the staged run's reference."""
    from windowlib.runs.incremental import stage_run

    checkpoint, output = job.locations(root)
    spark = job_session(spark)
    staged = stage_run(job.pipeline, job.source_for(root), checkpoint, output,
                       RunPlan.from_dict(plan), watermark=job.watermark, spark=spark,
                       result_schema=job.result_schema, progress=progress)
    return staged.ref()


def audit_job(job: Any, root: str, ref: dict[str, Any], *, spark: Any = None,
              context_dir: str | None = None) -> dict[str, Any]:
    """Step 3: validate the staged firings with GX; returns the outcome's JSON. Fails closed:
    ``QUALITY_UNAVAILABLE`` when the staged run cannot be validated (nothing is published)."""
    from pyspark.sql.types import StructType

    from windowlib.runs.frames import FrameInfo, read_frame
    from windowlib.runs.summary import RunSummary

    docs = context_dir or _local_path(f"{root.rstrip('/')}/_windowlib/quality/{job.name}")
    gate = validator(job, docs)          # fails closed before any data is read
    info = ref["firings"]       # the staged firings' files travel in the ref (no re-read)
    spark = job_session(spark)
    # exactly the staged files (no listing)
    firings = read_frame(spark, FrameInfo.from_dict(info), StructType.fromJson(info["schema"]))
    return gate(firings, RunSummary.from_dict(ref["summary"]))


def publish_job(job: Any, root: str, ref: dict[str, Any],
                validation: dict[str, Any] | None = None,
                publish_on_failure: bool = False) -> dict[str, Any]:
    """Step 4: the atomic commit (or ``blocked`` when validation failed)."""
    from windowlib.runs.incremental import publish_run

    checkpoint, _ = job.locations(root)
    summary = publish_run(job.pipeline, checkpoint, ref, validation=validation,
                          publish_on_failure=publish_on_failure)
    return summary.to_dict()
