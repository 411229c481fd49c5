"""Test registry (``WINDOWLIB_REGISTRY=wl_single_registry``) of the real-services test: two
pipeline DAGs (plus ``windowlib_backfill``) over the same synthetic clickstream.

* ``clickstream_demo``: the real job; the services fixture's start/end dates give it one
  scheduled catch-up interval.
* ``clickstream_history``: the same definition under its own name (own checkpoint namespace and
  output folder) whose schedule starts in 2100, so the scheduler creates **no** run of it: every
  run of ``windowlib_clickstream_history`` is an Airflow-native backfill run, and what its
  checkpoint holds was done by those runs alone. Its deadline alert is 5 s after a run is
  queued, so every run misses it and the real scheduler's alert reaches the notifier.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from datetime import timedelta
from functools import cache
from typing import Any

from jobs import registry as _real
from jobs.registry import PipelineJob, default_root, validate_root
from windowlib.core.errors import DefinitionError

__all__ = ["HISTORY", "default_root", "get", "registry", "validate_root"]

HISTORY = "clickstream_history"
HISTORY_START = "2100-01-01T00:00:00+00:00"  # no scheduled interval: backfills only
HISTORY_DEADLINE = timedelta(seconds=5)       # every run misses it: the alert fires for real


@dataclass(frozen=True)
class DatedJob(PipelineJob):
    """A job with its own schedule bounds (``schedule_bounds`` in ``dags/_windowlib_factory``
    prefers them over ``$WINDOWLIB_DAG_START_DATE``/``$WINDOWLIB_DAG_END_DATE``)."""

    start_date: str | None = None
    end_date: str | None = None


@cache
def _history() -> PipelineJob:
    base = _real.get("clickstream_demo")
    values = {f.name: getattr(base, f.name) for f in fields(base)}
    values.update(name=HISTORY, pipeline=replace(base.pipeline, name=HISTORY, _compiled=[]),
                  description="clickstream_demo's definition, run by Airflow-native backfills "
                              "only (its schedule starts in 2100).",
                  start_date=HISTORY_START, end_date=HISTORY_START,
                  run_deadline=HISTORY_DEADLINE)
    return DatedJob(**values)


def registry() -> dict[str, Any]:
    return {"clickstream_demo": _real.get("clickstream_demo"), HISTORY: _history()}


def get(name: str) -> Any:
    jobs = registry()
    if name not in jobs:
        raise DefinitionError(f"unknown pipeline {name!r}; known pipelines: "
                              f"{', '.join(jobs)}", code="PIPELINE_UNKNOWN")
    return jobs[name]
