"""What every windowlib DAG task shares: the registry, run locations and keys, the output Asset,
the error rule and the small XCom summary. Used by ``_windowlib_tasks`` and
``_windowlib_factory`` (which re-exports these names; see its docstring for the invariants).

Parsing-light: the standard library, ``airflow.sdk`` and the registry; ``windowlib.runs`` loads
inside functions.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import Asset
from airflow.sdk.exceptions import AirflowException, AirflowFailException

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the registry (``jobs``) lives at the repository root
    sys.path.append(str(REPO))
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _windowlib_ops import aws_connection_env, quiet_task_logs  # noqa: E402 - sys.path above

DEFAULT_REGISTRY = "jobs.registry"
SPARK_CONN_ENV = "WINDOWLIB_SPARK_CONN_ID"
SPARK_CONNECT_CONN_ENV = "WINDOWLIB_SPARK_CONNECT_CONN_ID"


# --- registry, locations, keys (cheap: no Spark, no GX) -----------------------------------

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


def partitions_of(context: Any, job: Any) -> tuple[str, str]:
    """The partitions a pipeline DAG run scans: the ``first``/``last`` Params of a manual run
    when given (checked by the one partition-range rule: ``PARTITION_RANGE_REVERSED``,
    ``PARTITION_PRECISION_MISMATCH``), else its data interval plus the job's lookback
    (``interval_of``)."""
    params = context.get("params") or {}
    run = context.get("dag_run")
    manual = str(getattr(run, "run_type", "")).lower().endswith("manual")
    first, last = params.get("first"), params.get("last")
    if manual and (first or last):
        from windowlib.runs.operations import check_job_range

        first, last = first or last, last or first
        check_job_range(job, first, last)
        return first, last
    start, end = interval_of(context, job)
    return job.partition_range(start, end)


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


# --- errors: the one exit-code rule decides retry or not -------------------------------------

_SUBMIT_EXIT = re.compile(r"Error code is: (\d+)")


@contextmanager
def task_scope() -> Iterator[None]:
    """Every task body runs inside: library noise below INFO (``quiet_task_logs``), S3 through
    the Airflow AWS connection when ``$WINDOWLIB_AWS_CONN_ID`` names one, and user errors
    failing without retry (``user_errors_fail_fast``)."""
    quiet_task_logs()
    with aws_connection_env(), user_errors_fail_fast():
        yield


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
