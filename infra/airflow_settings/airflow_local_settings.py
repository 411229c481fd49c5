"""Airflow's local-settings hook for the local services (``infra/airflow_services.py`` puts
this directory on ``PYTHONPATH``): in the **scheduler** it imports, once, the heavy modules
windowlib's tasks import — PySpark's SQL API and its Spark Connect client, pandas and pyarrow,
Great Expectations and windowlib's run, audit and report modules — so that every task process
inherits them.

Why it works: Airflow imports ``airflow_local_settings`` at start in every process. The
LocalExecutor runs in the scheduler and, on Linux (``fork`` start method), forks its worker
processes from it; each task is then a bare ``os.fork`` of a worker (Airflow's supervisor
execs a new interpreter only on macOS). A module imported here before the workers are forked
is already in every task's ``sys.modules``: the audit task no longer imports Great
Expectations itself (most of its cost: ``docs/performance.md``, "Airflow tasks").

Contract: nothing here starts a thread, a JVM or a connection (a fork must not copy one
half-alive); the other services and the ``airflow`` CLI import nothing (``sys.argv``); an
import that fails is logged and skipped, never stops the scheduler;
``WINDOWLIB_PRELOAD=0`` switches it off. Exports no settings (``__all__`` is empty).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time

__all__: list[str] = []

# What the task bodies of dags/_windowlib_tasks.py import (directly or through windowlib):
# the modules worth inheriting are the slow ones.
TASK_MODULES = (
    "pyarrow", "pandas", "pyspark.sql", "great_expectations", "jinja2", "altair",
    # the Spark Connect client (gRPC, protobuf; ~0.6 s per task): imported, no channel opened
    "pyspark.sql.connect.session",
    "windowlib.runs.operations", "windowlib.runs.status", "windowlib.quality.validate",
    "windowlib.quality.datadocs", "windowlib.quality.report",
)

log = logging.getLogger(__name__)


def is_scheduler(argv: list[str]) -> bool:
    """Whether this process is ``airflow scheduler`` (whose LocalExecutor forks the tasks)."""
    return len(argv) >= 2 and os.path.basename(argv[0]) == "airflow" and argv[1] == "scheduler"


def preload(modules: tuple[str, ...] = TASK_MODULES) -> dict[str, float]:
    """Import ``modules``; returns the seconds each took (a failed one is logged and left
    for the task to import and report)."""
    took: dict[str, float] = {}
    for name in modules:
        start = time.perf_counter()
        try:
            importlib.import_module(name)
        except Exception as exc:     # the task imports it again and reports the error
            log.warning("windowlib preload: %s not imported (%s)", name, exc)
            continue
        took[name] = round(time.perf_counter() - start, 3)
    return took


if os.environ.get("WINDOWLIB_PRELOAD", "1") != "0" and is_scheduler(sys.argv):
    _took = preload()
    # Airflow configures logging only after this module: the line goes to the service's log
    print(f"windowlib preload: {len(_took)} of {len(TASK_MODULES)} modules in "
          f"{sum(_took.values()):.1f} s for the task processes", file=sys.stderr, flush=True)
