"""OpenLineage for every windowlib task: ``lineage_task(stage, pipeline)`` is ``@task`` (or
``@task.short_circuit``) whose operator reports real datasets to the OpenLineage provider.

How (docs/lineage.md): the provider's ``DefaultExtractor`` calls an operator's
``get_openlineage_facets_on_start`` / ``_on_complete`` / ``_on_failure`` and emits START and
COMPLETE or FAIL with what they return (``OperatorLineage``). TaskFlow's operators have no such
methods (the provider would report only the task's name and source code), so these tasks use a
subclass that has them — nothing for a user to configure (no ``[openlineage] extractors``).

Invariants:

* The content comes from ``windowlib.runs.lineage`` (the one owner): this module only picks the
  task's inputs (its upstream XCom, its Params) and result and hands them over.
* Parsing imports ``airflow.sdk`` and the standard provider's decorators (what ``@task``
  imports anyway); ``openlineage`` and ``windowlib.runs`` load only when the provider asks,
  i.e. only when lineage is configured.
* Lineage never fails a task: the provider logs a failed method as a warning; a task's own
  exception is recorded before it propagates and reported in ``windowlib_error``.
* Inside a task the direct client path is off (``lineage_emit.suppressed`` around ``execute``):
  the provider emits the task's events once.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.standard.decorators.python import _PythonDecoratedOperator
from airflow.providers.standard.decorators.short_circuit import _ShortCircuitDecoratedOperator
from airflow.sdk.bases.decorator import task_decorator_factory

STAGES = ("plan", "run", "audit", "publish", "report", "backfill", "gc")


class _Lineage:
    """The OpenLineage methods of a windowlib task (mixed into TaskFlow's operators; the
    metaclass of operators wraps only ``__init__``/``execute`` a class defines itself, hence
    the two small subclasses below)."""

    windowlib_stage: str
    windowlib_pipeline: str | None

    def _lineage_setup(self, stage: str, pipeline: str | None) -> None:
        if stage not in STAGES:
            raise ValueError(f"windowlib_stage must be one of {STAGES}, got {stage!r}")
        self.windowlib_stage, self.windowlib_pipeline = stage, pipeline
        self._wl_params: dict[str, Any] = {}
        self._wl_result: Any = None
        self._wl_error: BaseException | None = None

    def _lineage_execute(self, run: Any, context: Any) -> Any:
        """``run(context)`` (the operator's own execute), keeping its result or error; the
        client path is off inside (the provider emits this task's events)."""
        from windowlib.runs.lineage_emit import suppressed

        self._wl_params = dict(context.get("params") or {})
        try:
            with suppressed():
                result = run(context)
        except BaseException as exc:
            self._wl_error = exc
            raise
        self._wl_result = result
        return result

    def get_openlineage_facets_on_start(self) -> Any:
        return _operator_lineage(self, "start")

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        return _operator_lineage(self, "complete")

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        return _operator_lineage(self, "fail")


class WindowlibTaskOperator(_Lineage, _PythonDecoratedOperator):
    """``@task`` with windowlib's lineage."""

    def __init__(self, *, windowlib_stage: str, windowlib_pipeline: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lineage_setup(windowlib_stage, windowlib_pipeline)

    def execute(self, context: Any) -> Any:
        return self._lineage_execute(super().execute, context)


class WindowlibShortCircuitOperator(_Lineage, _ShortCircuitDecoratedOperator):
    """``@task.short_circuit`` with windowlib's lineage."""

    def __init__(self, *, windowlib_stage: str, windowlib_pipeline: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lineage_setup(windowlib_stage, windowlib_pipeline)

    def execute(self, context: Any) -> Any:
        return self._lineage_execute(super().execute, context)


def lineage_task(stage: str, pipeline: str | None = None, *, short_circuit: bool = False,
                 multiple_outputs: bool = False, **kwargs: Any) -> Any:
    """A TaskFlow decorator like ``@task(**kwargs)`` whose task reports ``stage``'s lineage
    of ``pipeline`` (``None``: taken from the task's Params or upstream result)."""
    cls = WindowlibShortCircuitOperator if short_circuit else WindowlibTaskOperator
    return task_decorator_factory(multiple_outputs=multiple_outputs,
                                  decorated_operator_class=cls, windowlib_stage=stage,
                                  windowlib_pipeline=pipeline, **kwargs)


# --- what each task reports (runs only when the provider asks) ----------------------------------

def _operator_lineage(op: _Lineage, when: str) -> Any:
    from airflow.providers.openlineage.extractors import OperatorLineage

    from windowlib.runs import lineage as L

    found = _BUILDERS[op.windowlib_stage](_Task(op), when)
    if when == "fail" and op._wl_error is not None and L.ERROR_KEY not in found.run_facets:
        found = found.merge(L.Lineage(run_facets=L.error_facets(op._wl_error)))
    return OperatorLineage(inputs=found.inputs, outputs=found.outputs,
                           run_facets=found.run_facets)


class _Task:
    """A task's windowlib side: its upstream value, Params, result, job, root and checkpoint."""

    def __init__(self, op: _Lineage) -> None:
        from _windowlib_common import get_job, resolve_root

        self.op = op
        args = list(getattr(op, "op_args", None) or [])
        self.upstream = args[0] if args and isinstance(args[0], dict) else {}
        self.result = op._wl_result
        params = op._wl_params or _current_params()
        name = (op.windowlib_pipeline or (getattr(op, "op_kwargs", None) or {}).get("pipeline")
                or self.upstream.get("pipeline") or params.get("pipeline"))
        self.job = get_job(name)
        self.root = self.upstream.get("root") or resolve_root(params)
        from windowlib.runs.incremental import open_checkpoint

        self.cs = open_checkpoint(self.job.pipeline, self.job.locations(self.root)[0])
        self.source = self.job.source_for(self.root)


def _current_params() -> dict[str, Any]:
    """The running task's Params (the START event comes before ``execute``)."""
    try:
        from airflow.sdk import get_current_context

        return dict(get_current_context().get("params") or {})
    except Exception:  # no context: the registry's default root
        return {}


def _plan(t: _Task, when: str) -> Any:
    from windowlib.runs import lineage as L

    planned = t.result if isinstance(t.result, dict) else None
    if planned is None:      # START, or nothing new: the source without files
        return L.Lineage([L.source_dataset(t.source)], [],
                         L.run_facet(t.job.name, "plan", fingerprint=t.cs.fingerprint))
    return L.for_plan(t.cs, t.source, planned["plan"])


def _run(t: _Task, when: str) -> Any:
    from windowlib.runs import lineage as L

    plan = t.upstream.get("plan") or {}
    if when == "complete" and isinstance(t.result, dict) and t.result.get("ref"):
        return L.for_staged(t.cs, t.source, plan, t.result["ref"])
    started = L.for_plan(t.cs, t.source, plan) if plan else L.Lineage()
    started.outputs = L.table_datasets(t.cs)
    started.run_facets[L.RUN_KEY].stage = "run"
    return started


def _audit(t: _Task, when: str) -> Any:
    from windowlib.runs import lineage as L

    validation = t.result.get("validation") if isinstance(t.result, dict) else None
    return L.for_audit(t.cs, t.upstream.get("ref") or {}, validation)


def _publish(t: _Task, when: str) -> Any:
    from windowlib.runs import lineage as L

    done = t.result if isinstance(t.result, dict) else {}
    if when == "complete" and done.get("version") is not None:
        return L.for_commit(t.cs, t.source, done["version"], stage=t.op.windowlib_stage,
                            summary=done)
    ref = t.upstream.get("ref") or {}
    summary = ref.get("summary") or {}
    validation = t.upstream.get("validation")
    found = L.Lineage([L.source_dataset(t.source, partitions=summary.get("partitions") or ())],
                      L.table_datasets(t.cs),
                      L.run_facet(t.job.name, t.op.windowlib_stage, fingerprint=t.cs.fingerprint,
                                  summary=summary or done,
                                  version_before=ref.get("parent_version")))
    if validation is not None:
        found = found.merge(L.Lineage([L.assertions_dataset(t.cs, validation,
                                                            {"firings": ref.get("firings")})]))
        if when == "fail" and not validation.get("success", False):
            found = found.merge(L.Lineage(run_facets=L.blocked_facets(t.job.name, validation)))
    return found


def _backfill(t: _Task, when: str) -> Any:
    from windowlib.runs import lineage as L

    done = t.result if isinstance(t.result, dict) else {}
    if when == "complete" and done.get("version") is not None and done.get("published", True):
        return L.for_commit(t.cs, t.source, done["version"], stage="backfill", summary=done)
    found = L.Lineage([L.source_dataset(t.source, partitions=done.get("partitions") or ())],
                      L.table_datasets(t.cs),
                      L.run_facet(t.job.name, "backfill", fingerprint=t.cs.fingerprint,
                                  summary=done))
    if when == "fail" and isinstance(done.get("validation"), dict):
        found = found.merge(L.Lineage(run_facets=L.blocked_facets(t.job.name,
                                                                  done["validation"])))
    return found


def _report(t: _Task, when: str) -> Any:
    from _windowlib_common import report_path

    from windowlib.runs import lineage as L

    target = t.result if isinstance(t.result, str) else report_path(t.root, t.job.name)
    return L.for_report(t.cs, target)


def _gc(t: _Task, when: str) -> Any:
    from windowlib.runs import lineage as L

    return L.for_gc(t.cs, t.result if isinstance(t.result, dict) else None)


_BUILDERS = {"plan": _plan, "run": _run, "audit": _audit, "publish": _publish,
             "report": _report, "backfill": _backfill, "gc": _gc}
