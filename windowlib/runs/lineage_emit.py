"""OpenLineage events without Airflow: ``run_incremental`` (so the CLI and ``jobs/run_pipeline.py``,
which call it through ``operations.run_job``) emits START and COMPLETE or FAIL through the
``openlineage-python`` client when the user configured a transport.

Invariants:

* Not configured (no ``OPENLINEAGE_URL``, no ``OPENLINEAGE__TRANSPORT*`` variable, no config
  file: the client's own lookup, :func:`configured`) or ``OPENLINEAGE_DISABLED=true``: nothing
  is imported, built or emitted.
* Lineage never fails or blocks a run: an error while building or emitting an event is one
  WARNING in the log; after a failed emit the run's remaining events are skipped (an unreachable
  endpoint costs one attempt with the client's retry settings, not one per event).
* Inside an Airflow task the provider emits the task's events (``dags/_windowlib_lineage``):
  :func:`suppressed` turns this path off there; a rebuild's inner run reports through its outer
  call.
* The content comes from ``windowlib.runs.lineage`` (the one owner); a blocked run (failed audit,
  nothing published) ends in FAIL with its assertions and ``windowlib_error.code = "BLOCKED"``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

log = logging.getLogger(__name__)
_SUPPRESSED: ContextVar[bool] = ContextVar("windowlib_lineage_suppressed", default=False)
DEFAULT_NAMESPACE = "windowlib"
JOB_TYPE = "RUN"


def configured() -> bool:
    """Whether the user configured an OpenLineage transport (checked without importing
    ``openlineage``; the client's lookup: ``OPENLINEAGE_URL``, ``OPENLINEAGE__TRANSPORT*``
    variables, ``$OPENLINEAGE_CONFIG``, ``./openlineage.yml``,
    ``~/.openlineage/openlineage.yml``)."""
    env = os.environ
    if env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OPENLINEAGE_URL"):
        return True
    if any(k.startswith("OPENLINEAGE__TRANSPORT") and v for k, v in env.items()):
        return True
    if env.get("OPENLINEAGE_CONFIG"):
        return os.path.isfile(env["OPENLINEAGE_CONFIG"])
    return any(os.path.isfile(p) for p in (
        "openlineage.yml", os.path.expanduser("~/.openlineage/openlineage.yml")))


@contextmanager
def suppressed() -> Iterator[None]:
    """No direct events inside (an Airflow task: the provider emits them)."""
    token = _SUPPRESSED.set(True)
    try:
        yield
    finally:
        _SUPPRESSED.reset(token)


def emits_lineage(open_checkpoint: Callable[..., Any]) -> Callable[[Callable[..., Any]], Any]:
    """Decorate ``run_incremental(pipeline, source, checkpoint, ...)``: START before, COMPLETE
    or FAIL after, when :func:`configured`; otherwise a plain call. ``open_checkpoint``:
    ``runs.incremental.open_checkpoint`` (passed in: no import cycle)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(pipeline: Any, source: Any, checkpoint: Any, *args: Any, **kwargs: Any) -> Any:
            if _SUPPRESSED.get() or not configured():
                return fn(pipeline, source, checkpoint, *args, **kwargs)
            try:
                cs = open_checkpoint(pipeline, checkpoint, kwargs.get("settings"))
                events = _RunEvents.start(pipeline, source, cs)
            except ImportError:
                log.warning("OpenLineage is configured but openlineage-python is not installed "
                            "(pip install 'windowlib[lineage]'); running without lineage")
                return fn(pipeline, source, checkpoint, *args, **kwargs)
            except Exception:   # a bad checkpoint location: the run itself reports it
                return fn(pipeline, source, checkpoint, *args, **kwargs)
            try:
                with suppressed():
                    summary = fn(pipeline, source, checkpoint, *args, **kwargs)
            except BaseException as exc:
                events.fail(exc)
                raise
            events.finish(summary)
            return summary

        return run

    return decorate


@functools.cache
def _client() -> Any:
    from openlineage.client import OpenLineageClient

    return OpenLineageClient()


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat()


class _RunEvents:
    """The events of one run; every method swallows its own errors (logged once)."""

    def __init__(self, pipeline: Any, source: Any, cs: Any) -> None:
        from openlineage.client.uuid import generate_new_uuid

        self.pipeline, self.source, self.cs = pipeline, source, cs
        self.run_id = str(generate_new_uuid())
        self.broken = False

    @classmethod
    def start(cls, pipeline: Any, source: Any, cs: Any) -> _RunEvents:
        events = cls(pipeline, source, cs)
        events._guarded("START", events._start)
        return events

    def _start(self) -> Any:
        from windowlib.runs import lineage as L

        head = self.cs.latest(check_fingerprint=False)
        return L.Lineage([L.source_dataset(self.source)], L.table_datasets(self.cs),
                         L.run_facet(self.pipeline.name, "run", fingerprint=self.cs.fingerprint,
                                     before=head))

    def finish(self, summary: Any) -> None:
        from windowlib.runs.protocol import RunStatus

        state = "FAIL" if RunStatus(summary.status).blocked else "COMPLETE"
        self._guarded(state, lambda: self._finished(summary))

    def _finished(self, summary: Any) -> Any:
        from windowlib.runs import lineage as L

        data = summary.to_dict()
        if summary.published and summary.version is not None \
                and str(summary.status) != "already_published":
            return L.for_commit(self.cs, self.source, summary.version, stage="run",
                                summary=data)
        base = L.Lineage([L.source_dataset(self.source, partitions=summary.partitions,
                                           rows=summary.inputs or None)], [],
                         L.run_facet(self.pipeline.name, "run", fingerprint=self.cs.fingerprint,
                                     summary=data))
        if summary.validation is not None and not summary.published:    # blocked
            audit = L.Lineage([L.assertions_dataset(self.cs, summary.validation)])
            return base.merge(audit).merge(L.Lineage(run_facets=L.blocked_facets(
                self.pipeline.name, summary.validation)))
        return base

    def fail(self, exc: BaseException) -> None:
        from windowlib.runs import lineage as L

        self._guarded("FAIL", lambda: L.Lineage(
            [L.source_dataset(self.source)], L.table_datasets(self.cs),
            {**L.run_facet(self.pipeline.name, "run", fingerprint=self.cs.fingerprint),
             **L.error_facets(exc)}))

    def _guarded(self, state: str, build: Callable[[], Any]) -> None:
        if self.broken:
            return
        try:
            self._emit(state, build())
        except Exception as exc:  # lineage never fails a run
            self.broken = True
            from windowlib.runs.lineage import scrub

            log.warning("OpenLineage: could not emit the %s event of pipeline %r (%s: %s); "
                        "the run goes on without lineage", state, self.pipeline.name,
                        type(exc).__name__, scrub(str(exc))[:500])

    def _emit(self, state: str, lineage: Any) -> None:
        from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
        from openlineage.client.facet_v2 import job_type_job

        job = Job(namespace=os.environ.get("OPENLINEAGE_NAMESPACE") or DEFAULT_NAMESPACE,
                  name=self.pipeline.name,
                  facets={"jobType": job_type_job.JobTypeJobFacet(
                      processingType="BATCH", integration="WINDOWLIB", jobType=JOB_TYPE)})
        event = RunEvent(eventType=RunState[state], eventTime=_now(),
                         run=Run(runId=self.run_id, facets=lineage.run_facets), job=job,
                         inputs=lineage.inputs, outputs=lineage.outputs)
        _client().emit(event)
