"""The windowlib DAG factory: one write-audit-publish DAG per registered pipeline.

``build_pipeline_dags()`` returns ``{dag_id: DAG}`` with ``dag_id = windowlib_{name}`` for every
job of the registry (``jobs.registry``, or the module named by ``WINDOWLIB_REGISTRY`` — the same
lookup as ``windowlib.runs.operations.registry_module()``). Tasks, each a thin call into
``windowlib.runs.operations`` passing only small JSON through XCom::

    plan (short-circuit) -> run (stage on Spark) -> audit (GX) -> publish (commit, Asset) -> report

Invariants:

* Parsing imports only ``airflow.sdk``, the standard library and the registry (pipeline
  definitions; no Spark, no Great Expectations, no ``windowlib.runs``): heavy modules load inside
  tasks.
* A run scans the partitions of its data interval plus the job's lookback
  (``PipelineJob.partition_range``); manual runs without a data interval use the partition step
  that ends at ``run_after``. Nothing new -> every downstream task is skipped.
* **Idempotency key** = DAG id + DAG run id + the checkpoint version the plan started from:
  ``{dag_id}:{run_id}@v{parent_version}``. Never the logical date. Why the parent version and not
  the try number: a retried ``publish`` after a successful commit finds its own commit by this
  key and is a no-op; clearing a past run in the UI re-plans on top of the *current* version,
  so the key is new, the files that landed late in its partitions since are consumed (LATE
  firings) and an earlier commit of the same DAG run never masks them. Two plans from the same
  version by the same DAG run consume the same files, so sharing a key is correct there; a try
  number would be neither necessary nor sufficient (it also changes on plain task retries).
* The checkpoint's single conditional commit is the only mutual exclusion (Airflow does not
  serialize backfill runs against scheduled ones). A run that loses the race re-plans inside
  ``run``/``publish`` on top of the winner, or fails with a ``CHECKPOINT_CONFLICT`` message and
  is retried by Airflow (exponential backoff).
* A failed audit blocks the publish (staged files removed, nothing visible) and then fails the
  task with ``AirflowFailException`` (no retry) naming the failed expectations and the Data
  Docs path; the ``publish_on_failure`` Param overrides and is recorded in the commit.
* Errors follow the one exit-code rule (``windowlib.core.errors.exit_code``, as the CLI and
  ``jobs/run_pipeline.py``): a user error (exit 2: a bad Param, a changed definition...) fails
  the task with ``AirflowFailException`` (no retry, ``user_errors_fail_fast``); any other error
  (exit 1: a conflict, storage, GX unavailable...) propagates and Airflow retries it. The
  ``SparkSubmitOperator`` variant maps ``run_pipeline.py``'s exit code 2 the same way.
* Spark in ``run``/``audit``/``publish``: a thin Spark Connect client when ``SPARK_REMOTE``
  (``sc://host:port``) is set in the task's environment, or when
  ``WINDOWLIB_SPARK_CONNECT_CONN_ID`` names an Airflow ``spark_connect`` connection (its URL is
  then exported as ``SPARK_REMOTE`` for the rest of the task process); otherwise an
  in-process local SparkSession. Resolved at run time, never at parse time.
* Every task body runs in ``task_scope()`` (``_windowlib_ops``): library noise below INFO and
  one ``windowlib <stage> <pipeline>:`` line per stage, S3 through ``$WINDOWLIB_AWS_CONN_ID``'s
  connection when set, user errors failing fast. Each task returns ONE small XCom object
  (``multiple_outputs=False``; ``small_summary``). Every task's failure goes to the notifier;
  every pipeline DAG has a deadline alert (``job.run_deadline``).
* Output Asset events: ``publish`` (outlet ``output_asset(job)``) and ``windowlib_backfill``'s
  ``backfill`` (outlet alias ``windowlib_backfill_outputs``, resolved to the same Asset) emit
  the same ``extra`` (``asset_extra``) for a published version; both are followed by a
  ``report`` task regenerating the pipeline's HTML report.
* With ``WINDOWLIB_SPARK_CONN_ID`` set at parse time, ``run`` is a ``SparkSubmitOperator`` that
  submits ``jobs/run_pipeline.py`` (which stages, audits with the job's GX suite and publishes
  in one Spark application, under the plan's idempotency key) and the DAG is
  ``plan -> run -> report``; a failed audit exits 1, so the task fails with the message.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Asset, AssetAlias, CronDataIntervalTimetable, Param
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the registry (``jobs``) lives at the repository root
    sys.path.append(str(REPO))
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _windowlib_lineage import lineage_task  # noqa: E402 - OpenLineage of every task
from _windowlib_ops import (  # noqa: E402 - needs the sys.path entry above
    aws_connection_env,
    deadline_alert,
    jvm_stderr_to_log,
    notify_failure,
    quiet_task_logs,
    spark_session_settings,
    stage_line,
)

DEFAULT_REGISTRY = "jobs.registry"
SPARK_CONN_ENV = "WINDOWLIB_SPARK_CONN_ID"
SPARK_CONNECT_CONN_ENV = "WINDOWLIB_SPARK_CONNECT_CONN_ID"
RETRY_DELAY_ENV = "WINDOWLIB_RETRY_DELAY_SECONDS"
START_ENV, END_ENV = "WINDOWLIB_DAG_START_DATE", "WINDOWLIB_DAG_END_DATE"
DEFAULT_START = datetime(2024, 3, 1, tzinfo=UTC)  # the synthetic clickstream's first hour
_ROOT_PATTERN = r"^(file|s3a?)://\S+$"   # a quick form check; resolve_root validates
log = logging.getLogger(__name__)


# --- registry and locations (cheap: no Spark, no GX) ------------------------------------------

def registry_module() -> Any:
    """``jobs.registry`` or ``$WINDOWLIB_REGISTRY`` (as ``windowlib.runs.operations``)."""
    return importlib.import_module(os.environ.get("WINDOWLIB_REGISTRY", DEFAULT_REGISTRY))


def get_job(name: str) -> Any:
    return registry_module().get(name)


def resolve_root(params: dict[str, Any] | None) -> str:
    """The ``root`` Param when given, else the registry's default root, validated by the
    registry's ``validate_root`` (the one URI type: ``InputError(URI_INVALID)``, messages never
    echo credentials)."""
    module = registry_module()
    given = (params or {}).get("root")
    if given:
        validate = getattr(module, "validate_root", None)
        if validate is None:
            from jobs.registry import validate_root as validate
        return validate(given)
    return module.default_root()


def run_key(dag_id: str, run_id: str) -> str:
    """The idempotency key's base of a DAG run (``runs.protocol.RunKey.base_of``)."""
    from windowlib.runs.protocol import RunKey

    return RunKey.base_of(dag_id, run_id)


def key_on(base: str, version: int | None) -> str:
    """The idempotency key of a run planned on checkpoint ``version`` (``RunKey``)."""
    from windowlib.runs.protocol import RunKey

    return str(RunKey(base, version))


_ALREADY = "already_published"      # RunStatus.ALREADY_PUBLISHED (no import at parse time)


def _status(summary: dict[str, Any]) -> Any:
    from windowlib.runs.protocol import RunStatus

    return RunStatus(summary.get("status"))


def interval_of(context: Any, job: Any) -> tuple[datetime, datetime]:
    """The run's data interval; manual runs without one: the partition step ending at
    ``run_after`` (floored to the step)."""
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    if start is not None and end is not None and end > start:
        return start, end
    run = context.get("dag_run")
    after = getattr(run, "run_after", None) or datetime.now(UTC)
    after = after.astimezone(UTC)
    if job.partition_step == "day":
        end = after.replace(hour=0, minute=0, second=0, microsecond=0)
        return end - timedelta(days=1), end
    end = after.replace(minute=0, second=0, microsecond=0)
    return end - timedelta(hours=1), end


def report_path(root: str, name: str) -> str:
    return f"{root.rstrip('/')}/_windowlib/reports/{name}.html"


BACKFILL_ALIAS = "windowlib_backfill_outputs"


def output_asset(job_or_name: Any) -> Asset:
    """The output Asset of a pipeline (``windowlib_{name}_output``, URI = its output folder under
    the default root): the outlet of its DAG's ``publish`` task, and what a downstream DAG
    schedules on (``schedule=[output_asset("clickstream_demo")]`` or
    ``schedule=[Asset.ref(name="windowlib_clickstream_demo_output")]``). ``windowlib_backfill``
    emits events of the same Asset through the alias ``windowlib_backfill_outputs``."""
    job = get_job(job_or_name) if isinstance(job_or_name, str) else job_or_name
    _, output = job.locations(registry_module().default_root())
    return Asset(name=f"windowlib_{job.name}_output", uri=output, group="windowlib")


def committed_new_version(summary: dict[str, Any]) -> bool:
    """Whether a run summary committed a new version now (an output Asset event is due):
    ``RunStatus.PUBLISHED`` or ``REBUILD_PUBLISHED`` — not ``ALREADY_PUBLISHED``, a dry run,
    nothing new or blocked."""
    from windowlib.runs.protocol import RunStatus

    status = summary.get("status")
    return status in (RunStatus.PUBLISHED, RunStatus.REBUILD_PUBLISHED)


def asset_extra(job: Any, root: str, summary: dict[str, Any]) -> dict[str, Any]:
    """The ``extra`` of an output Asset event: the same four keys for scheduled, Airflow-native
    and ``windowlib_backfill`` runs."""
    _, out = job.locations(root)
    return {"output": out, "version": summary.get("version"), "run_id": summary.get("run_id"),
            "firings": summary.get("firings")}


@contextmanager
def task_scope() -> Iterator[None]:
    """Every task body runs inside: library noise below INFO (``quiet_task_logs``), S3 through
    the Airflow AWS connection when ``$WINDOWLIB_AWS_CONN_ID`` names one, and user errors
    failing without retry (``user_errors_fail_fast``)."""
    quiet_task_logs()
    with aws_connection_env(), user_errors_fail_fast():
        yield


# --- errors: the one exit-code rule decides retry or not -------------------------------------

_SUBMIT_EXIT = re.compile(r"Error code is: (\d+)")


@contextmanager
def user_errors_fail_fast() -> Iterator[None]:
    """Wrap a task body: a windowlib error that ``windowlib.core.errors.exit_code`` calls a user
    error (2) is re-raised as ``AirflowFailException`` (the task fails, no retry) with the same
    ``[CODE] message``; every other exception propagates unchanged (Airflow retries it)."""
    from windowlib.core.errors import WindowlibError, is_user_error

    try:
        yield
    except WindowlibError as exc:
        if is_user_error(exc):
            raise AirflowFailException(str(exc)) from exc
        raise


def submit_failure(exc: AirflowException) -> AirflowException:
    """What the ``spark-submit`` task raises when ``jobs/run_pipeline.py`` failed: exit code 2 (a
    user error, already printed as ``[CODE] message`` in the task log) becomes
    ``AirflowFailException`` (no retry); any other exit code keeps ``exc`` (retried)."""
    from windowlib.core.errors import EXIT_USER

    found = _SUBMIT_EXIT.search(str(exc))
    if found and int(found.group(1)) == EXIT_USER:
        return AirflowFailException("run_pipeline.py exited 2: a user error (its [CODE] "
                                    f"message is in the log above); not retried. {exc}")
    return exc


# --- task bodies (module functions so tests and other DAGs can reuse them) -------------------

def spark_remote() -> str | None:
    """The Spark Connect URL tasks use: ``$SPARK_REMOTE``, else the URL of the Airflow
    ``spark_connect`` connection named by ``$WINDOWLIB_SPARK_CONNECT_CONN_ID``, else ``None``
    (an in-process local SparkSession)."""
    url = os.environ.get("SPARK_REMOTE")
    if url:
        return url
    conn_id = os.environ.get(SPARK_CONNECT_CONN_ENV)
    if not conn_id:
        return None
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    return SparkConnectHook(conn_id).get_connection_url()


def _spark() -> Any:
    """The task's SparkSession: Spark Connect (``spark_remote``), else the active one, else a
    new local one — its master and settings from the Spark connection named by
    ``$WINDOWLIB_SPARK_SESSION_CONN_ID`` when set, its JVM's stderr into the task log at
    DEBUG/WARNING (``jvm_stderr_to_log``)."""
    from windowlib.engines.spark.session import get_or_create_session

    url = spark_remote()
    if url:  # every session lookup of this task process goes to the same server
        os.environ["SPARK_REMOTE"] = url
        return get_or_create_session(app_name="windowlib-airflow", remote=url)
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        return get_or_create_session(app_name="windowlib-airflow")
    master, conf = spark_session_settings()
    conf = {"spark.ui.showConsoleProgress": "false", **conf}
    with jvm_stderr_to_log():
        return get_or_create_session(master or "local[2]", app_name="windowlib-airflow",
                                     conf=conf)


def _checkpoint(job: Any, root: str) -> Any:
    from windowlib.runs.incremental import open_checkpoint

    return open_checkpoint(job.pipeline, job.locations(root)[0])


def do_plan(name: str, context: Any) -> dict[str, Any] | None:
    """The new files of the run's partitions; ``None`` (skip downstream) when nothing is new."""
    from windowlib.runs.operations import plan_job

    job = get_job(name)
    root = resolve_root(context.get("params"))
    first, last = partitions_of(context, job)
    base = run_key(context["dag"].dag_id, context["dag_run"].run_id)
    plan = plan_job(job, root, partitions=(first, last), run_id=base)
    plan["run_id"] = key_on(base, plan["parent_version"])
    stage_line("plan", name, partitions=[first, last], new_files=plan["files"],
               version=plan["parent_version"], skip_rest=bool(plan["empty"]))
    if plan["empty"]:
        return None
    return {"pipeline": name, "root": root, "partitions": [first, last], "base": base,
            "plan": plan}


def _replan(job: Any, planned: dict[str, Any]) -> dict[str, Any] | None:
    from windowlib.runs.operations import plan_job

    plan = plan_job(job, planned["root"], partitions=tuple(planned["partitions"]),
                    run_id=planned["base"])
    plan["run_id"] = key_on(planned["base"], plan["parent_version"])
    return None if plan["empty"] else {**planned, "plan": plan}


def do_run(name: str, planned: dict[str, Any]) -> dict[str, Any]:
    """Stage the plan on Spark; re-plans once when another run moved the checkpoint."""
    from windowlib.core.errors import StateError
    from windowlib.runs.operations import stage_job

    job = get_job(name)
    spark = _spark()
    try:
        ref = stage_job(job, planned["root"], planned["plan"], spark=spark, progress=log.debug)
    except StateError as exc:
        if exc.code != "CHECKPOINT_CONFLICT":
            raise
        log.warning("%s — re-planning on top of the new version", exc)
        planned = _replan(job, planned)
        if planned is None:
            raise AirflowSkipException("another run consumed every new file of these "
                                       "partitions; nothing left to do") from exc
        ref = stage_job(job, planned["root"], planned["plan"], spark=spark, progress=log.debug)
    counts = ref.get("summary") or {}
    stage_line("run", name, staged=ref.get("run_id"),
               **{k: counts[k] for k in ("inputs", "firings", "late", "rejects") if k in counts})
    return {**{k: planned[k] for k in ("pipeline", "root", "partitions", "base")}, "ref": ref}


def do_audit(name: str, staged: dict[str, Any]) -> dict[str, Any]:
    """GX on the staged firings; returns the outcome (never raises for a failed suite)."""
    from windowlib.runs.operations import audit_job

    job = get_job(name)
    validation = audit_job(job, staged["root"], staged["ref"], spark=_spark())
    stage_line("audit", name, success=validation.get("success"),
               failed=validation.get("failed"), data_docs=validation.get("data_docs"))
    return {**staged, "validation": validation}


def _failure_message(name: str, validation: dict[str, Any]) -> str:
    from windowlib.runs.operations import blocked_message

    return blocked_message(name, validation, "clear this run after the fix, or re-trigger "
                           "with publish_on_failure=true")


def do_publish(name: str, audited: dict[str, Any], publish_on_failure: bool = False
               ) -> dict[str, Any]:
    """The atomic commit; a no-op when this key already committed. On a lost race the run
    re-plans, re-stages and re-validates inline (``run_job``) once; if it loses again it raises
    (Airflow retries with backoff)."""
    from windowlib.core.errors import StateError
    from windowlib.runs.operations import publish_job, run_job

    job = get_job(name)
    root, ref, validation = audited["root"], audited["ref"], audited.get("validation")
    cs = _checkpoint(job, root)
    done = cs.find_run(ref["run_id"])
    if done is not None:
        stage_line("publish", name, status=_ALREADY, version=done.version)
        return {"pipeline": name, "run_id": ref["run_id"], "version": done.version,
                "status": _ALREADY, "published": True}
    try:
        summary = publish_job(job, root, ref, validation, publish_on_failure=publish_on_failure)
    except StateError as exc:
        if exc.code not in ("CHECKPOINT_CONFLICT", "STAGING_MISSING"):
            raise
        # the conflict is known without running anything: re-plan first (a listing), and run
        # again only when files are still new on top of the winner
        replanned = _replan(job, {"root": root, "partitions": audited["partitions"],
                                  "base": audited["base"]})
        if replanned is None:          # the winner consumed everything: no event
            raise AirflowSkipException("another run consumed every new file of these "
                                       "partitions; nothing left to publish") from exc
        log.warning("%s — re-running on top of the new version", exc)
        key = replanned["plan"]["run_id"]
        try:
            summary = run_job(job, root, partitions=tuple(audited["partitions"]), run_id=key,
                              spark=_spark(), publish_on_failure=publish_on_failure,
                              progress=log.debug).to_dict()
        except StateError as again:
            if again.code != "CHECKPOINT_CONFLICT":
                raise
            raise AirflowException(
                f"[CHECKPOINT_CONFLICT] pipeline {name!r}: another run holds the pipeline (it "
                "committed first, twice). Nothing of this run was published; Airflow retries "
                "it with backoff, re-planning what is still new.") from again
        validation = summary.get("validation") or validation
        if _status(summary) == "nothing_new":    # consumed by yet another run meanwhile
            raise AirflowSkipException("another run consumed every new file of these "
                                       "partitions; nothing left to publish") from exc
    if _status(summary).blocked:
        raise AirflowFailException(_failure_message(name, validation or {}))
    stage_line("publish", name, status=summary.get("status"), version=summary.get("version"),
               firings=summary.get("firings"), late=summary.get("late"))
    return small_summary(summary)


def do_report(name: str, root: str) -> str:
    """Write the HTML run report to ``{root}/_windowlib/reports/{name}.html``; returns its URI."""
    import tempfile

    from windowlib.quality import write_run_report
    from windowlib.runs.operations import run_history
    from windowlib.state.stores import open_store
    from windowlib.state.uri import Uri

    job = get_job(name)
    history = run_history(job, root)
    target = Uri.parse(report_path(root, name))
    if target.scheme == "file":
        write_run_report(name, history, target.arrow_path, description=job.description)
        stage_line("report", name, report=str(target), runs=len(history))
        return str(target)
    with tempfile.TemporaryDirectory() as tmp:
        page = write_run_report(name, history, Path(tmp) / f"{name}.html",
                                description=job.description)
        open_store(target.parent).write_bytes(target.name, page.read_bytes())
    stage_line("report", name, report=str(target), runs=len(history))
    return str(target)


def gc_task(pipeline: str, context: Any) -> dict[str, Any]:
    """The ``windowlib_maintenance`` task of one pipeline: ``gc_job`` under the Params' root
    and grace period; returns what was removed (small JSON)."""
    from windowlib.runs.operations import GC_GRACE_HOURS, gc_job

    params = context["params"]
    with task_scope():
        job = get_job(pipeline)
        root = resolve_root(params)
        done = gc_job(job, root, grace_hours=params.get("grace_hours", GC_GRACE_HOURS))
    stage_line("gc", job.name, stagings=len(done["removed_stagings"]),
               snapshots=len(done["pruned_snapshots"]),
               generations=len(done["removed_generations"]), objects=done["removed_objects"])
    return done


def report_task(summary: dict[str, Any]) -> str:
    """The ``windowlib_backfill`` report task: the pipeline's HTML report regenerated from its
    history (as the pipeline DAG's ``report`` task does after a scheduled run)."""
    with task_scope():
        return do_report(summary["pipeline"], summary["root"])


def backfill_task(context: Any) -> dict[str, Any]:
    """The ``windowlib_backfill`` task: validate the Params, call ``backfill_job``.

    User mistakes (unknown pipeline, a partition not in the pipeline's format, first > last, a
    changed definition...) fail the task without retry (``AirflowFailException``) with a clear
    message; failures propagate (retried)."""
    with task_scope():
        summary = _backfill(context)
    if committed_new_version(summary):
        job = get_job(summary["pipeline"])
        context["outlet_events"][AssetAlias(BACKFILL_ALIAS)].add(
            output_asset(job), extra=asset_extra(job, summary["root"], summary))
    return summary


def _backfill(context: Any) -> dict[str, Any]:
    from windowlib.runs.operations import backfill_job, check_job_range

    p = context["params"]
    job = get_job(p["pipeline"])
    root = resolve_root(p)
    first = p.get("first") or p.get("last") or last_complete_partition(job)
    last, mode = p.get("last") or first, p["mode"]
    check_job_range(job, first, last)   # the one range rule (codes as in the CLI)
    if mode not in ("incremental", "rebuild"):
        raise AirflowFailException(f"mode must be incremental or rebuild, got {mode!r}")
    base = run_key(context["dag"].dag_id, context["dag_run"].run_id)
    rebuild = mode == "rebuild"
    cs = _checkpoint(job, root)
    if rebuild:
        key = base
        done = cs.find_run(key)
        if done is not None and not p["dry_run"]:
            return {"pipeline": job.name, "run_id": key, "status": _ALREADY,
                    "version": done.version, "mode": mode, "root": root}
    else:
        head = cs.latest()
        key = key_on(base, head.version if head else None)
    summary = backfill_job(job, root, first, last, rebuild=rebuild, dry_run=bool(p["dry_run"]),
                           spark=None if p["dry_run"] else _spark(), run_id=key,
                           progress=log.debug).to_dict()
    stage_line("backfill", job.name, partitions=[first, last], mode=mode,
               status=summary.get("status"), version=summary.get("version"),
               firings=summary.get("firings"))
    if _status(summary).blocked:
        raise AirflowFailException(_failure_message(job.name, summary.get("validation") or {}))
    return {**small_summary(summary), "mode": mode, "first": first, "last": last, "root": root}


SUMMARY_KEYS = ("pipeline", "run_id", "status", "published", "version", "generation", "inputs",
                "processed", "late", "rejects", "firings", "firings_by_timing", "files_consumed",
                "partitions", "watermark", "publish_on_failure")


def small_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """What a task hands to XCom of a run summary: its counts and ids (one small object); the
    validation reduced to ``success``, the failed expectations and the Data Docs path."""
    out = {k: summary.get(k) for k in SUMMARY_KEYS if k in summary}
    validation = summary.get("validation")
    if isinstance(validation, dict):
        out["validation"] = {k: validation.get(k) for k in ("success", "failed", "data_docs")}
    return out


# --- DAG construction ------------------------------------------------------------------------

def _instant(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def schedule_bounds(job: Any) -> tuple[datetime, datetime | None]:
    """``(start_date, end_date)``: the job's own ``start_date``/``end_date`` when it has them,
    else ``$WINDOWLIB_DAG_START_DATE``/``$WINDOWLIB_DAG_END_DATE`` (ISO), else 2024-03-01 and
    open-ended. With ``catchup=True`` the scheduler creates one run per interval from the start,
    so keep it close to the data."""
    start = _instant(getattr(job, "start_date", None)) or _instant(os.environ.get(START_ENV))
    end = _instant(getattr(job, "end_date", None)) or _instant(os.environ.get(END_ENV))
    return start or DEFAULT_START, end


def default_args(job: Any) -> dict[str, Any]:
    """Retries with exponential backoff; every task's failure goes to ``notify_failure``."""
    delay = float(os.environ.get(RETRY_DELAY_ENV, "30"))
    return {"owner": job.owner, "retries": 3, "retry_delay": timedelta(seconds=delay),
            "retry_exponential_backoff": 2.0, "max_retry_delay": timedelta(minutes=10),
            "on_failure_callback": notify_failure}


def doc_md(job: Any) -> str:
    """Markdown docs from the pipeline definition (``PipelineJob.describe()``)."""
    d = job.describe()
    src = d["source"]
    return "\n".join([
        f"# windowlib pipeline `{job.name}`", "", job.description or "(no description)", "",
        f"* **schedule**: `{job.schedule}` (UTC, data intervals) · **owner**: {job.owner}",
        f"* **source**: `{{root}}/{src['path']}`, partitioned by `{src['partition']}` "
        f"(`{job.partition_format}`, {src['format']}), lookback {job.lookback} partition(s)",
        f"* **watermark**: `{json.dumps(d['watermark'], sort_keys=True, default=str)}`",
        f"* **fingerprint**: `{d['fingerprint']}`",
        "* **outputs**: `{root}/windows/" + job.name + "` · report: "
        "`{root}/_windowlib/reports/" + job.name + ".html`", "",
        "Tasks: `plan` (new files; skips when nothing is new) → `run` (stage on Spark) → "
        "`audit` (Great Expectations) → `publish` (atomic commit, Asset event) → `report`. "
        "A failed audit blocks the publish; set the `publish_on_failure` Param to override.",
        "", "## Pipeline definition", "", "```json",
        json.dumps(d["pipeline"], indent=2, sort_keys=True, default=str), "```"])


_PARTITION_PARAM = {"YYYY-MM-DDTHH": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}$",
                    "YYYY-MM-DD": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}


def last_complete_partition(job: Any, now: datetime | None = None) -> str:
    """The pipeline's last complete partition before ``now``: the last full hour or day (its
    Params' effective default)."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    step = timedelta(days=1) if job.partition_step == "day" else timedelta(hours=1)
    if job.partition_step == "day":
        end = now.replace(hour=0, minute=0, second=0, microsecond=0)
    else:
        end = now.replace(minute=0, second=0, microsecond=0)
    return job.partition_value(end - step)


def _params(job: Any) -> dict[str, Param]:
    """The Params form of a pipeline DAG: titled, described, per pipeline (partition format and
    step). ``first``/``last`` default to empty = the pipeline's last complete hour/day at run
    time (a concrete date default would change the serialized DAG, hence its version, every
    hour); scheduled and backfill runs use their data interval and ignore them."""
    step, fmt = job.partition_step, job.partition_format
    pattern = _PARTITION_PARAM[fmt]
    return {
        "root": Param(None, type=["null", "string"], pattern=_ROOT_PATTERN, title="Lake root",
                      description="Lake root URI (file:///... or s3://bucket/prefix); empty: "
                                  "$WINDOWLIB_ROOT or the project's .local/lake"),
        "publish_on_failure": Param(False, type="boolean", title="Publish on failed audit",
                                    description="Publish even when the Great Expectations "
                                                "audit fails (recorded in the commit)"),
        "first": Param(None, type=["null", "string"], pattern=pattern,
                       title=f"First {step} (manual runs)",
                       description=f"First {job.source.partition} partition ({fmt}) a manual "
                                   f"run scans; empty: the last complete {step} before the run"),
        "last": Param(None, type=["null", "string"], pattern=pattern,
                      title=f"Last {step} (manual runs)",
                      description=f"Last {job.source.partition} partition ({fmt}), inclusive; "
                                  "empty: the same as first"),
    }


def partitions_of(context: Any, job: Any) -> tuple[str, str]:
    """The partitions a pipeline DAG run scans: the ``first``/``last`` Params of a manual run
    when given, else its data interval plus the job's lookback (``interval_of``)."""
    params = context.get("params") or {}
    run = context.get("dag_run")
    manual = str(getattr(run, "run_type", "")).lower().endswith("manual")
    first, last = params.get("first"), params.get("last")
    if manual and (first or last):
        first, last = first or last, last or first
        if first > last:
            raise AirflowFailException(f"first partition {first} is after last {last}")
        return first, last
    start, end = interval_of(context, job)
    return job.partition_range(start, end)


def build_dag(job: Any) -> DAG:
    """The scheduled write-audit-publish DAG of ``job``."""
    dag_id = f"windowlib_{job.name}"
    asset = output_asset(job)
    name = job.name
    start, end = schedule_bounds(job)
    with DAG(dag_id=dag_id, schedule=CronDataIntervalTimetable(job.schedule, timezone="UTC"),
             start_date=start, end_date=end, catchup=True, max_active_runs=1,
             default_args=default_args(job), tags=["windowlib", *job.tags],
             doc_md=doc_md(job), description=(job.description or name)[:200],
             params=_params(job), deadline=deadline_alert(name, getattr(job, "run_deadline", None))
             ) as dag:

        @lineage_task("plan", name, short_circuit=True, task_id="plan")
        def plan(**context: Any) -> dict[str, Any] | None:
            with task_scope():
                return do_plan(name, context)

        @lineage_task("report", name, task_id="report")
        def report(planned: dict[str, Any]) -> str:
            with task_scope():
                return do_report(name, planned["root"])

        planned = plan()
        conn_id = os.environ.get(SPARK_CONN_ENV)
        if conn_id:
            submit = _spark_submit_task(name, conn_id)
            planned >> submit >> report(planned)
            return dag

        # multiple_outputs=False: Airflow would otherwise infer it from the ``dict`` return
        # annotation and store one XCom row per key; each task keeps ONE summary object
        @lineage_task("run", name, task_id="run")
        def run(planned: dict[str, Any]) -> dict[str, Any]:
            with task_scope():
                return do_run(name, planned)

        @lineage_task("audit", name, task_id="audit")
        def audit(staged: dict[str, Any]) -> dict[str, Any]:
            with task_scope():
                return do_audit(name, staged)

        @lineage_task("publish", name, task_id="publish", outlets=[asset])
        def publish(audited: dict[str, Any], **context: Any) -> dict[str, Any]:
            flag = bool(context["params"].get("publish_on_failure"))
            with task_scope():
                summary = do_publish(name, audited, publish_on_failure=flag)
            if committed_new_version(summary):
                context["outlet_events"][asset].extra = asset_extra(
                    get_job(name), audited["root"], summary)
            return summary

        published = publish(audit(run(planned)))
        published >> report(planned)
    return dag


def _submit_operator_class() -> type:
    """``RunPipelineSubmit``: a ``SparkSubmitOperator`` whose ``run_pipeline.py`` exit code 2
    fails without retry (``submit_failure``). Defined on first use, so that parsing imports the
    Spark provider only when ``WINDOWLIB_SPARK_CONN_ID`` is set, and kept as a module attribute
    so ``_windowlib_factory.RunPipelineSubmit`` resolves like any operator class."""
    cls = globals().get("RunPipelineSubmit")
    if cls is not None:
        return cls
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    class RunPipelineSubmit(SparkSubmitOperator):
        """``spark-submit jobs/run_pipeline.py``; its exit code 2 fails without retry."""

        def execute(self, context: Any) -> Any:
            try:
                return super().execute(context)
            except AirflowException as exc:
                failure = submit_failure(exc)
                if failure is exc:
                    raise
                raise failure from exc

    RunPipelineSubmit.__qualname__ = "RunPipelineSubmit"
    globals()["RunPipelineSubmit"] = RunPipelineSubmit
    return RunPipelineSubmit


def _spark_submit_task(name: str, conn_id: str) -> Any:
    """``spark-submit jobs/run_pipeline.py`` over the planned partitions (a Spark cluster)."""
    pull = "ti.xcom_pull(task_ids='plan')"
    return _submit_operator_class()(
        task_id="run", conn_id=conn_id, application=str(REPO / "jobs" / "run_pipeline.py"),
        name=f"windowlib-{name}",
        # UTC as windowlib reads and writes timestamps; no per-call Python call-site capture
        # (thousands of JVM round trips while planning a run; docs/operations.md)
        conf={"spark.sql.session.timeZone": "UTC",
              "spark.python.sql.dataFrameDebugging.enabled": "false"},
        application_args=["--pipeline", name, "--root", "{{ " + pull + "['root'] }}",
                          "--first", "{{ " + pull + "['partitions'][0] }}",
                          "--last", "{{ " + pull + "['partitions'][1] }}",
                          # the idempotency key: a retry after a successful commit is a no-op
                          "--run-id", "{{ " + pull + "['plan']['run_id'] }}",
                          "--publish-on-failure={{ 'true' if params.publish_on_failure "
                          "else 'false' }}", "--json"],
        env_vars={"WINDOWLIB_REGISTRY": os.environ.get("WINDOWLIB_REGISTRY", DEFAULT_REGISTRY)})


def build_pipeline_dags() -> dict[str, DAG]:
    """``{dag_id: DAG}`` for every registered pipeline."""
    dags = {}
    for job in registry_module().registry().values():
        d = build_dag(job)
        dags[d.dag_id] = d
    return dags
