"""The windowlib DAG factory: one write-audit-publish DAG per registered pipeline.

Layout: this module builds the DAGs; the task bodies live in ``_windowlib_tasks`` and what they
share (registry, keys, Asset, error rule, XCom summary) in ``_windowlib_common``; their public
names are re-exported here (``from _windowlib_factory import output_asset`` keeps working).
The invariants below hold across the three.

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
  in-process local SparkSession. Resolved at run time, never at parse time. Over Connect the
  tasks of one DAG run share one server session (unless the URL names one): ``run`` passes
  its id on in its XCom (``spark_session``). ``run`` takes the session over from the DAG's
  previous run when that run's ``run`` task handed it on (``_windowlib_tasks._chained_session``:
  one chain for backfill runs, one for the others) and ran the same code (windowlib and the
  registry's package, by digest), else makes a new one, so the server starts a pipeline's
  Python workers once per deployment, not once per run or per task
  (``windowlib_backfill``'s ``backfill`` task chains its runs the same way).
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

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, CronDataIntervalTimetable, DeltaDataIntervalTimetable, Param
from airflow.sdk.exceptions import AirflowException

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

# the task bodies and what they share; re-exported: DAG authors import them from here
from _windowlib_common import (  # noqa: F401 - needs the sys.path entry above
    _ALREADY,
    BACKFILL_ALIAS,
    DEFAULT_REGISTRY,
    REPO,
    SPARK_CONN_ENV,
    SPARK_CONNECT_CONN_ENV,
    SUMMARY_KEYS,
    asset_extra,
    committed_new_version,
    get_job,
    interval_of,
    key_on,
    last_complete_partition,
    output_asset,
    partitions_of,
    registry_module,
    report_path,
    resolve_root,
    run_key,
    small_summary,
    submit_failure,
    task_scope,
    user_errors_fail_fast,
)
from _windowlib_lineage import lineage_task
from _windowlib_ops import deadline_alert, notify_failure
from _windowlib_tasks import (  # noqa: F401
    _spark,
    backfill_task,
    do_audit,
    do_plan,
    do_publish,
    do_report,
    do_run,
    gc_task,
    report_task,
    spark_remote,
)

RETRY_DELAY_ENV = "WINDOWLIB_RETRY_DELAY_SECONDS"
START_ENV, END_ENV = "WINDOWLIB_DAG_START_DATE", "WINDOWLIB_DAG_END_DATE"
DEFAULT_START = datetime(2024, 3, 1, tzinfo=UTC)  # the synthetic clickstream's first hour
_ROOT_PATTERN = r"^(file|s3a?)://\S+$"   # a quick form check; resolve_root validates


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


def timetable(job: Any) -> Any:
    """The job's schedule as a timetable with data intervals: a cron expression (presets
    included) in UTC, or a ``timedelta`` between runs."""
    if isinstance(job.schedule, timedelta):
        return DeltaDataIntervalTimetable(job.schedule)
    return CronDataIntervalTimetable(job.schedule, timezone="UTC")


def build_dag(job: Any) -> DAG:
    """The scheduled write-audit-publish DAG of ``job``."""
    dag_id = f"windowlib_{job.name}"
    asset = output_asset(job)
    name = job.name
    start, end = schedule_bounds(job)
    with DAG(dag_id=dag_id, schedule=timetable(job),
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
        def run(planned: dict[str, Any], **context: Any) -> dict[str, Any]:
            with task_scope():
                return do_run(name, planned, context)

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
        # (thousands of JVM round trips while planning a run); a generated-class cache that
        # holds a run's classes (docs/operations.md). Values as in session.LOCAL_CONF, which
        # a session spark-submit creates does not get (test_dag_integrity compares them).
        conf={"spark.sql.session.timeZone": "UTC",
              "spark.python.sql.dataFrameDebugging.enabled": "false",
              "spark.sql.codegen.cache.maxEntries": "400"},
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
