"""The bodies of the windowlib DAG tasks — plan, run, audit, publish, report, backfill, gc — as
module functions that tests and other DAGs call directly. Each takes and returns small JSON
(XCom); Spark, Great Expectations and ``windowlib.runs`` load inside. The rules they follow
(idempotency key, re-planning on a lost race, a failed audit blocking the publish, the error
rule) are stated in ``_windowlib_factory``'s docstring.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any

from _windowlib_common import (
    _ALREADY,
    BACKFILL_ALIAS,
    SPARK_CONNECT_CONN_ENV,
    _status,
    asset_extra,
    committed_new_version,
    get_job,
    key_on,
    last_complete_partition,
    output_asset,
    partitions_of,
    report_path,
    resolve_root,
    run_key,
    small_summary,
    task_scope,
)
from _windowlib_ops import jvm_stderr_to_log, spark_session_settings, stage_line
from airflow.sdk import AssetAlias
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

log = logging.getLogger(__name__)


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


def _spark(session_id: str | None = None) -> Any:
    """The task's SparkSession: Spark Connect (``spark_remote``), else the active one, else a
    new local one — its master and settings from the Spark connection named by
    ``$WINDOWLIB_SPARK_SESSION_CONN_ID`` when set, its JVM's stderr into the task log at
    DEBUG/WARNING (``jvm_stderr_to_log``).

    Over Spark Connect, ``session_id`` (the ``spark_session`` the ``run`` task passes on)
    names the server-side session: the tasks of one DAG run share it — its Python workers
    are started once, not once per task — unless the URL names a session itself. A session
    the server has closed meanwhile (idle timeout before a late retry) is replaced by a new
    one."""
    from windowlib.engines.spark.session import connect_url, get_or_create_session

    url = spark_remote()
    if url:  # every session lookup of this task process goes to the same server session
        shared = connect_url(url, session_id)
        try:
            spark = get_or_create_session(app_name="windowlib-airflow", remote=shared)
        except Exception as exc:
            if shared == url or "SESSION_CLOSED" not in str(exc):
                raise
            log.warning("the DAG run's Spark Connect session is closed (%s); using a new one",
                        type(exc).__name__)
            shared = url
            spark = get_or_create_session(app_name="windowlib-airflow", remote=url)
        os.environ["SPARK_REMOTE"] = shared
        return spark
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


# XCom keys under which a DAG's Spark task (a pipeline DAG's ``run``, ``windowlib_backfill``'s
# ``backfill``) hands its Spark Connect session on to the DAG's next run (``_chained_session``):
# one chain for Airflow's backfill runs, one for all others
SESSION_XCOM = "spark_connect_session"
BACKFILL_SESSION_XCOM = "spark_connect_session_backfill"


def _chain(context: Any) -> tuple[Any, str] | None:
    """The task instance of the DAG run and the XCom key of its session chain; ``None``
    outside a DAG run."""
    ti = (context or {}).get("ti")
    if ti is None:
        return None
    run_type = str(getattr(context.get("dag_run"), "run_type", "")).lower()
    return ti, BACKFILL_SESSION_XCOM if run_type.endswith("backfill") else SESSION_XCOM


def _chained_session(context: Any) -> str | None:
    """The Spark Connect session this DAG run's Spark task takes over from the DAG's previous
    run (the same task's), ``None`` for a new one.

    Why: a Connect server starts a Python worker daemon per session and keeps it (about 50 MB)
    until the server stops, and a session's first Python work costs ~2 s of worker start-up
    (``benchmarks/connect_sessions.py``). A session per DAG run would leak a daemon per run and
    pay that start every run; a chain pays it once per pipeline.

    How: a run takes the session the latest earlier run of its chain handed on (the same
    task's XCom under the chain's key: one value, the latest run's; ``map_indexes=-1`` asks
    for exactly that, because without it Airflow returns every earlier run's value, a list
    from the third run on). Scheduled, manual and asset-triggered runs form one
    chain: ``max_active_runs=1`` keeps them from overlapping. Backfill runs may overlap those,
    so they form a chain of their own. A session is handed on with the digest of the code
    the task ran (``job_code_digest``: windowlib and the registry's package) and taken over
    only by the same code: after a deployment the next run starts a new session, because a
    session that holds the older code shipped to a cluster, or Python workers that imported
    it, may keep running it. The task marks the session taken (``None`` under the
    key) before it uses it, and ``_hand_on`` records the id once it succeeded, so a task
    that failed or was killed half-way (its run-scoped SQL settings or cached frames possibly
    left in the session) hands nothing on, and neither does a run still in flight: the next
    run then starts a new session. A retried (or cleared) task starts a new session too:
    its earlier try may have died in the session it took over, and Airflow clears a task's
    XComs, the mark included, when a new try starts."""
    chain = _chain(context)
    if chain is None:
        return None
    ti, key = chain
    retried = (getattr(ti, "try_number", None) or 1) > 1
    previous = None if retried else ti.xcom_pull(task_ids=ti.task_id, key=key, map_indexes=-1,
                                                 include_prior_dates=True)
    ti.xcom_push(key, None)
    code = _code_digest()
    if code is None or not isinstance(previous, dict) or previous.get("code") != code:
        return None      # nothing handed on, or by other code (or an older format), or unknown
    session = previous.get("session")
    return session if isinstance(session, str) and session else None


def _hand_on(context: Any, session_id: str | None) -> None:
    chain = _chain(context)
    if chain is not None and session_id:
        chain[0].xcom_push(chain[1], {"session": session_id, "code": _code_digest()})


_CODE: list[str | None] = []     # this task process's code digest, once


def _code_digest() -> str | None:
    """The digest of the code this process runs, taken once: the session is handed on with
    the code it ran, even if the files change on disk while the task runs."""
    if not _CODE:
        from windowlib.runs.operations import job_code_digest

        _CODE.append(job_code_digest())
    return _CODE[0]


def _chained_spark(context: Any) -> tuple[Any, str | None]:
    """The task's SparkSession and, over Spark Connect, its server session's id: the one the
    DAG's previous run handed on (``_chained_session``), else a new one. Hand it on with
    ``_hand_on`` once the task's Spark work succeeded."""
    if spark_remote() is None:
        return _spark(), None
    spark = _spark(_chained_session(context) or str(uuid.uuid4()))
    return spark, spark.session_id    # a closed session was replaced: pass the new one on


def do_run(name: str, planned: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Stage the plan on Spark; re-plans once when another run moved the checkpoint. Over
    Spark Connect the DAG run's tasks share one server session (``spark_session`` in the
    XCom), taken over from the DAG's previous run when it handed one on (``_chained_session``).
    """
    from windowlib.core.errors import StateError
    from windowlib.runs.operations import stage_job

    job = get_job(name)
    spark, session_id = _chained_spark(context)
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
    _hand_on(context, session_id)
    counts = ref.get("summary") or {}
    stage_line("run", name, staged=ref.get("run_id"),
               **{k: counts[k] for k in ("inputs", "firings", "late", "rejects") if k in counts})
    return {**{k: planned[k] for k in ("pipeline", "root", "partitions", "base")}, "ref": ref,
            "spark_session": session_id}


def do_audit(name: str, staged: dict[str, Any]) -> dict[str, Any]:
    """GX on the staged firings; returns the outcome (never raises for a failed suite)."""
    from windowlib.runs.operations import audit_job

    job = get_job(name)
    validation = audit_job(job, staged["root"], staged["ref"],
                           spark=_spark(staged.get("spark_session")))
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
                              spark=_spark(audited.get("spark_session")),
                              publish_on_failure=publish_on_failure,
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
    from windowlib.runs.status import run_history
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
    spark, session_id = (None, None) if p["dry_run"] else _chained_spark(context)
    summary = backfill_job(job, root, first, last, rebuild=rebuild, dry_run=bool(p["dry_run"]),
                           spark=spark, run_id=key, progress=log.debug).to_dict()
    _hand_on(context, session_id)
    stage_line("backfill", job.name, partitions=[first, last], mode=mode,
               status=summary.get("status"), version=summary.get("version"),
               firings=summary.get("firings"))
    if _status(summary).blocked:
        raise AirflowFailException(_failure_message(job.name, summary.get("validation") or {}))
    return {**small_summary(summary), "mode": mode, "first": first, "last": last, "root": root}
