"""What the windowlib DAGs give an operator: readable task logs, connections, alerts, links.

Used by ``_windowlib_factory`` (ignored by the DAG processor like it). Top-level imports: the
standard library and ``airflow.sdk`` only; providers load inside tasks.

Invariants:

* **Task logs**: every task body starts with :func:`quiet_task_logs` — Great Expectations'
  import-time "Skipping registering function" lines, GX/py4j/botocore chatter and Python
  warnings go to DEBUG; a local Spark JVM started by a task writes its stderr (log4j) into
  the ``windowlib.spark.jvm`` logger (:func:`jvm_stderr_to_log`): log4j ``ERROR``/``FATAL``
  at WARNING, everything else at DEBUG — never at ERROR through the task's stderr. Each stage
  logs exactly one ``windowlib <stage> <pipeline>: ...`` summary line at INFO
  (:func:`stage_line`).
* **Connections**: ``$WINDOWLIB_AWS_CONN_ID`` names an Airflow AWS connection (the amazon
  provider's ``AwsBaseHook``): its credentials, region and ``endpoint_url`` are exported into
  the task process' environment for the task's duration (boto3 and Arrow read the standard
  ``AWS_*`` variables), before any Spark JVM starts; without it the environment is used as
  before. ``$WINDOWLIB_SPARK_SESSION_CONN_ID`` names a ``spark`` connection whose host is the
  in-process session's master and whose extra ``conf`` object holds Spark settings. Secrets
  are never logged: only the connection id, the endpoint and the key id's last 4 characters.
* **Alerts**: ``on_failure_callback`` is :func:`notify_failure`, which calls the notifier named
  by ``$WINDOWLIB_NOTIFIER`` (``module:callable``, called with one small dict) and always logs
  one line; every pipeline DAG has a deadline alert (:func:`deadline_alert`) at
  ``DAGRUN_QUEUED_AT`` + the pipeline's ``run_deadline``, whose callback
  (:func:`deadline_missed`) goes to the same notifier (``$WINDOWLIB_DEADLINE_ALERTS=off``
  turns the alerts off, for ``dag.test()``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

log = logging.getLogger("windowlib.airflow")
AWS_CONN_ENV = "WINDOWLIB_AWS_CONN_ID"
SPARK_SESSION_CONN_ENV = "WINDOWLIB_SPARK_SESSION_CONN_ID"
NOTIFIER_ENV = "WINDOWLIB_NOTIFIER"
DEADLINES_ENV = "WINDOWLIB_DEADLINE_ALERTS"
DEFAULT_DEADLINE = timedelta(hours=2)
# loggers whose INFO lines drown a task log; their WARNING and above stay visible
NOISY_LOGGERS = ("great_expectations", "py4j", "botocore", "boto3", "s3transfer", "urllib3",
                 "altair", "vl_convert", "pyspark", "py.warnings")
_GX_DOCS = "great_expectations._docs_decorators"   # its "Skipping registering function"


# --- task logs -------------------------------------------------------------------------------

def quiet_task_logs() -> None:
    """Route library noise below INFO (idempotent; call first in every task body, before GX
    or Spark is imported: GX logs at import time)."""
    logging.captureWarnings(True)
    warnings.filterwarnings("ignore", category=DeprecationWarning)   # libraries' own business
    warnings.filterwarnings("ignore", category=FutureWarning)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger(_GX_DOCS).setLevel(logging.ERROR)


def stage_line(stage: str, pipeline: str, **facts: Any) -> str:
    """The one INFO summary line of a stage: ``windowlib <stage> <pipeline>: k=v ...``."""
    text = " ".join(f"{k}={json.dumps(v, default=str, separators=(',', ':'))}"
                    for k, v in facts.items())
    line = f"windowlib {stage} {pipeline}: {text}".rstrip(": ")
    log.info("%s", line)
    return line


def _jvm_level(line: str) -> int:
    words = line.split(None, 3)[:3]
    return logging.WARNING if ("ERROR" in words or "FATAL" in words) else logging.DEBUG


def _forward(fd: int, logger: logging.Logger) -> None:
    with os.fdopen(fd, "r", errors="replace") as stream:
        for line in stream:
            text = line.rstrip()
            if text:
                logger.log(_jvm_level(text), "%s", text)


@contextlib.contextmanager
def jvm_stderr_to_log(logger_name: str = "windowlib.spark.jvm") -> Iterator[None]:
    """Processes started inside the block (a local Spark JVM) write their stderr to a pipe read
    into ``logger_name`` (log4j ERROR/FATAL at WARNING, the rest at DEBUG) for their lifetime;
    this process' own stderr is restored on exit."""
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    os.close(write)
    threading.Thread(target=_forward, args=(read, logging.getLogger(logger_name)),
                     name="spark-jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# --- connections -----------------------------------------------------------------------------

_AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
             "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION")


def aws_environment(conn_id: str) -> dict[str, str]:
    """The ``AWS_*`` variables of the Airflow AWS connection ``conn_id`` (login/password or
    the provider's credential chain, ``region_name`` and ``endpoint_url`` from its extra)."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    hook = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
    creds = hook.get_credentials()
    env = {"AWS_ACCESS_KEY_ID": creds.access_key, "AWS_SECRET_ACCESS_KEY": creds.secret_key}
    if creds.token:
        env["AWS_SESSION_TOKEN"] = creds.token
    info = hook.conn_config
    if info.endpoint_url:
        env["AWS_ENDPOINT_URL_S3"] = info.endpoint_url
    if info.region_name:
        env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = info.region_name
    return {k: v for k, v in env.items() if v}


@contextlib.contextmanager
def aws_connection_env() -> Iterator[str | None]:
    """Inside the block, the ``AWS_*`` variables come from the connection named by
    ``$WINDOWLIB_AWS_CONN_ID`` (restored afterwards); without it, nothing changes. Yields the
    connection id (or ``None``)."""
    conn_id = os.environ.get(AWS_CONN_ENV)
    if not conn_id:
        yield None
        return
    env = aws_environment(conn_id)
    saved = {k: os.environ.get(k) for k in _AWS_VARS}
    for name in _AWS_VARS:
        os.environ.pop(name, None)
    os.environ.update(env)
    key = env.get("AWS_ACCESS_KEY_ID", "")
    log.info("S3 through Airflow connection %r (endpoint %s, key id …%s)", conn_id,
             env.get("AWS_ENDPOINT_URL_S3", "AWS"), key[-4:])
    try:
        yield conn_id
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def spark_session_settings() -> tuple[str | None, dict[str, str]]:
    """``(master, conf)`` of the in-process SparkSession from the ``spark`` connection named by
    ``$WINDOWLIB_SPARK_SESSION_CONN_ID`` (host = master, e.g. ``local[2]`` or
    ``spark://h:7077``; extra ``{"conf": {...}}``); ``(None, {})`` without one."""
    conn_id = os.environ.get(SPARK_SESSION_CONN_ENV)
    if not conn_id:
        return None, {}
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    master = conn.host or None
    if master and conn.port and master.startswith(("spark://", "yarn", "k8s://")) \
            and ":" not in master.split("//")[-1]:
        master = f"{master}:{conn.port}"
    extra = conn.extra_dejson or {}
    conf = {str(k): str(v) for k, v in (extra.get("conf") or {}).items()}
    return master, conf


# --- failure notifier and deadline alerts ----------------------------------------------------

def _notifier() -> Any:
    spec = os.environ.get(NOTIFIER_ENV)
    if not spec:
        return None
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name or "notify")


def notify(event: dict[str, Any]) -> None:
    """Log ``event`` in one line and hand it to the notifier of ``$WINDOWLIB_NOTIFIER``
    (``module:callable``); a notifier that raises is logged, never fails the caller."""
    log.warning("windowlib alert: %s", json.dumps(event, default=str, sort_keys=True))
    try:
        notifier = _notifier()
        if notifier is not None:
            notifier(event)
    except Exception:   # an alert path must not mask the failure it reports
        log.exception("the windowlib notifier %s failed", os.environ.get(NOTIFIER_ENV))


def notify_failure(context: Any) -> None:
    """``on_failure_callback`` of every windowlib task: one small event to the notifier."""
    ti = context.get("ti") or context.get("task_instance")
    run = context.get("dag_run")
    exc = context.get("exception")
    notify({"kind": "task_failed", "dag_id": getattr(ti, "dag_id", None),
            "task_id": getattr(ti, "task_id", None), "run_id": getattr(run, "run_id", None),
            "try_number": getattr(ti, "try_number", None),
            "error": str(exc)[:500] if exc is not None else None})


def deadline_missed(pipeline: str | None = None, limit: str | None = None,
                    context: dict[str, Any] | None = None, **_: Any) -> None:
    """Callback of the pipeline DAGs' deadline alerts (runs on the executor): the alert's own
    kwargs plus the ``context`` Airflow's scheduler adds (``dag_run`` as the REST API shows
    it, ``deadline`` with its time) become one event naming the run that missed it."""
    run = (context or {}).get("dag_run") or {}
    deadline = (context or {}).get("deadline") or {}
    event = {"dag_id": run.get("dag_id"), "run_id": run.get("dag_run_id"),
             "deadline": deadline.get("deadline_time"), "pipeline": pipeline, "limit": limit}
    notify({"kind": "deadline_missed",
            **{k: str(v)[:200] for k, v in event.items() if v is not None}})


def deadline_alert(pipeline: str, limit: timedelta | None) -> Any:
    """The deadline alert of a pipeline DAG: a run still unfinished ``limit`` after it was
    queued calls :func:`deadline_missed` (``None``: the default of 2 h). ``None`` when
    ``$WINDOWLIB_DEADLINE_ALERTS`` is ``off``: Airflow 3.3's ``dag.test()`` cannot run a DAG
    that has deadline alerts (its in-process scheduler DAG keeps them serialized and the
    success path looks them up as ids), so the ``dag.test()`` harnesses (tests, ``make demo``)
    turn them off; the real scheduler is unaffected."""
    from airflow.sdk import DeadlineAlert, DeadlineReference, SyncCallback

    if os.environ.get(DEADLINES_ENV, "on").lower() in ("off", "0", "false", "no"):
        return None
    limit = limit or DEFAULT_DEADLINE
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT, interval=limit,
        callback=SyncCallback(f"{__name__}.deadline_missed",
                              kwargs={"pipeline": pipeline, "limit": str(limit)}),
        name=f"windowlib_{pipeline}_run_deadline")
