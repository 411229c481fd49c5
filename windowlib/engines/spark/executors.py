"""The Spark engine behind the executor contract (``engines/base.py``).

- ``GeneralExecutor``: the semantic core per key inside ``mapInArrow`` (``general.py``); any
  pipeline; state ``general-keys`` (one row per live key).
- ``NativeExecutor``: Spark SQL only (``native.py``; with state, ``native_incremental.py``:
  ``native-windows``, one row per live window); the planner's subset.
- ``PaneExecutor``: the native path's firings with a Python ``process``/``apply`` function
  called once per firing (``panes.py``); one-shot runs.
- ``SparkExecutor``: picks one of them — the planner's choice, or the path a prior state was
  written by (a checkpoint keeps its path until a rebuild), or the one the caller insists on.

Input is a ``FrameBundles``: a DataFrame whose ``arrival`` column orders the bundles. Outputs
are ``SparkOutputs`` (``outputs.py``) in the public schema; ``EngineRun.clock`` is where the
bundle plan left the clocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import DefinitionError, StateError, rebuild_hint
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import timestamp_ms
from windowlib.engines.base import BundleTimes, EngineRun, Executor, PriorState, TimePolicy
from windowlib.engines.spark.columns import DEFAULT_MAX_KEY_STATE
from windowlib.engines.spark.jvm_lookups import remember_jvm_lookups
from windowlib.engines.spark.outputs import SparkOutputs
from windowlib.engines.spark.planner import PATHS

__all__ = ["PATHS", "STATE_KINDS", "FrameBundles", "GeneralExecutor", "NativeExecutor",
           "PaneExecutor", "SparkExecutor"]

# the format of a path's pane state, as commit records name it
STATE_KINDS = {"general": "general-keys", "native": "native-windows"}


@dataclass(frozen=True)
class FrameBundles:
    """A DataFrame as bundles: the distinct values of ``arrival`` (a partition value: string,
    timestamp, date or integer) are the bundles, ascending; ``order_by`` gives the arrival order
    inside a bundle (default: event time, ties broken by a hash of the whole row).
    ``stats``: exact per-bundle figures the caller already knows (``bundle_stats``: e.g. from
    the footers of the files read), so the bundle plan needs no aggregate job."""

    df: Any
    arrival: str
    order_by: Sequence[str] | str | None = None
    stats: Mapping[Any, Any] | None = None


def _overrides(bundles: FrameBundles, given: Mapping[Any, Any] | None
               ) -> dict[Any, BundleTimes] | None:
    """``TimePolicy.bundles`` keyed by the arrival column's canonical form; values may be
    ``BundleTimes`` or dicts with ``processing_time``/``watermark``."""
    if not given:
        return None
    from windowlib.engines.spark.bundles import arrival_kind, canonical_arrival

    df = bundles.df
    kind = arrival_kind(df.schema[bundles.arrival].dataType) \
        if bundles.arrival in df.columns else "integral"
    out = {}
    for value, spec in given.items():
        if not isinstance(spec, BundleTimes):
            pt, wm = spec.get("processing_time"), spec.get("watermark")
            spec = BundleTimes(None if pt is None else timestamp_ms(pt),
                               None if wm is None else timestamp_ms(wm))
        out[canonical_arrival(value, kind)] = spec
    return out


class GeneralExecutor(Executor):
    """The general path. ``result_schema``: DDL of a Python function's result columns;
    ``max_key_state``: the live-state limit per key; ``partitions``: Python tasks walking the
    keys; ``persist``: cache the tagged output (one-shot runs read several outputs from it);
    ``emit_state``: compute the new state (incremental runs)."""

    name = "general"

    def __init__(self, *, result_schema: Any = None,
                 max_key_state: int = DEFAULT_MAX_KEY_STATE, partitions: int | None = None,
                 persist: bool = True, emit_state: bool = False) -> None:
        self.result_schema, self.max_key_state = result_schema, max_key_state
        self.partitions, self.persist, self.emit_state = partitions, persist, emit_state

    def run(self, pipeline: Pipeline, bundles: FrameBundles, *,
            prior: PriorState | None = None, time: TimePolicy | None = None,
            run_id: str | None = None) -> EngineRun[SparkOutputs]:
        from windowlib.engines.spark.general import run_general

        time, prior = time or TimePolicy(), prior or PriorState()
        run = run_general(pipeline, bundles.df, bundles.arrival, watermark=time.watermark,
                          finalize=time.finalize, order_by=bundles.order_by,
                          result_schema=self.result_schema,
                          processing_time=time.processing_time,
                          arrival_interval=time.arrival_interval,
                          overrides=_overrides(bundles, time.bundles),
                          max_key_state=self.max_key_state, partitions=self.partitions,
                          state=prior.state, clock=prior.clock, emit_state=self.emit_state,
                          persist=self.persist, bundle_stats=bundles.stats)
        return EngineRun(run.outputs(run_id), run.plan.clock_after(), path=self.name,
                         state_kind=STATE_KINDS[self.name], inputs=sum(run.plan.counts),
                         detail=run)


class NativeExecutor(Executor):
    """The native path (the caller or ``SparkExecutor`` has checked the planner).
    ``incremental``: carry window state between runs (``native_incremental.py``: the default
    trigger only)."""

    name = "native"

    def __init__(self, *, incremental: bool = False) -> None:
        self.incremental = incremental

    def run(self, pipeline: Pipeline, bundles: FrameBundles, *,
            prior: PriorState | None = None, time: TimePolicy | None = None,
            run_id: str | None = None) -> EngineRun[SparkOutputs]:
        time, prior = time or TimePolicy(), prior or PriorState()
        if self.incremental:
            from windowlib.engines.spark.native_incremental import run_native_incremental

            if time.finalize or time.bundles or time.arrival_interval is not None:
                raise DefinitionError("incremental native runs take their times from the "
                                      "partitions (no finalize or explicit bundle times)",
                                      code="ARGUMENT_INVALID")
            run = run_native_incremental(pipeline, bundles.df, bundles.arrival,
                                         watermark=time.watermark, order_by=bundles.order_by,
                                         processing_time=time.processing_time,
                                         state=prior.state, clock=prior.clock,
                                         bundle_stats=bundles.stats)
        else:
            from windowlib.engines.spark.native import run_native

            if prior.state is not None:
                raise StateError("one-shot native runs start from empty state",
                                 code="STATE_INVALID")
            run = run_native(pipeline, bundles.df, bundles.arrival, watermark=time.watermark,
                             finalize=time.finalize, order_by=bundles.order_by,
                             processing_time=time.processing_time,
                             arrival_interval=time.arrival_interval,
                             overrides=_overrides(bundles, time.bundles))
        return EngineRun(run.outputs(run_id), run.plan.clock_after(), path=self.name,
                         state_kind=STATE_KINDS[self.name], inputs=sum(run.plan.counts),
                         detail=run)


class PaneExecutor(Executor):
    """The pane path (``panes.py``; the caller has checked ``planner.pane_reasons``): one-shot
    runs only. Options as ``GeneralExecutor``'s."""

    name = "panes"

    def __init__(self, *, result_schema: Any = None,
                 max_key_state: int = DEFAULT_MAX_KEY_STATE, partitions: int | None = None,
                 persist: bool = True, emit_state: bool = False) -> None:
        if emit_state:
            raise DefinitionError("the pane path runs one-shot runs only",
                                  code="PANES_UNSUPPORTED")
        self.result_schema, self.max_key_state = result_schema, max_key_state
        self.partitions, self.persist = partitions, persist

    def run(self, pipeline: Pipeline, bundles: FrameBundles, *,
            prior: PriorState | None = None, time: TimePolicy | None = None,
            run_id: str | None = None) -> EngineRun[SparkOutputs]:
        from windowlib.engines.spark.panes import run_panes

        time, prior = time or TimePolicy(), prior or PriorState()
        if prior.state is not None:
            raise StateError("one-shot pane runs start from empty state", code="STATE_INVALID")
        run = run_panes(pipeline, bundles.df, bundles.arrival, watermark=time.watermark,
                        finalize=time.finalize, order_by=bundles.order_by,
                        result_schema=self.result_schema, processing_time=time.processing_time,
                        arrival_interval=time.arrival_interval,
                        overrides=_overrides(bundles, time.bundles),
                        max_key_state=self.max_key_state, partitions=self.partitions,
                        persist=self.persist, bundle_stats=bundles.stats)
        return EngineRun(run.outputs(run_id), run.plan.clock_after(), path=self.name,
                         state_kind=None, inputs=sum(run.plan.counts), detail=run)


class SparkExecutor(Executor):
    """Runs a pipeline on the path it should take. ``path``: ``auto`` (the planner; with a
    prior state, the path that wrote it), ``native`` or ``general`` (insist: a
    ``DefinitionError`` naming the planner's reasons when the pipeline is outside the native
    subset, a ``StateError`` when the prior state belongs to the other path). ``incremental``:
    the run continues from and hands on pane state (SPEC §8); the native path then needs the
    default trigger (``planner.incremental_path``). Other options go to ``GeneralExecutor``."""

    name = "spark"

    def __init__(self, *, path: str = "auto", incremental: bool = False,
                 result_schema: Any = None, **general: Any) -> None:
        if path not in PATHS:
            raise DefinitionError(f"path must be one of {', '.join(PATHS)}, got {path!r}",
                                  code="ARGUMENT_INVALID")
        self.path, self.incremental = path, incremental
        self.result_schema, self.general = result_schema, general

    def choose(self, pipeline: Pipeline, schema: Any, prior: PriorState | None = None
               ) -> tuple[str, tuple[str, ...]]:
        """``(path, reasons the native path is not taken)`` for input of ``schema``, after
        checking that the input can feed the pipeline at all (``input_checks``: before any
        data is read)."""
        from windowlib.engines.spark.bundles import TS
        from windowlib.engines.spark.input_checks import check_input
        from windowlib.engines.spark.planner import choose_path

        check_input(pipeline, schema, event_time_given=TS in schema.fieldNames())
        saved = None
        if prior is not None and prior.kind is not None:
            saved = next((p for p, k in STATE_KINDS.items() if k == prior.kind), None)
            if saved is None:
                raise StateError(f"the checkpoint's pane state has the unknown kind "
                                 f"{prior.kind!r} (a newer windowlib wrote it?); upgrade "
                                 f"windowlib, or {rebuild_hint(pipeline.name)}",
                                 code="CHECKPOINT_FORMAT_UNSUPPORTED")
        choice = choose_path(pipeline, "auto", schema, self.result_schema,
                             incremental=self.incremental)
        if saved is not None:
            if self.path != "auto" and self.path != saved:
                raise StateError(f"pipeline {pipeline.name!r}: the checkpoint's pane state "
                                 f"belongs to the {saved} path, not {self.path}; to switch, "
                                 f"{rebuild_hint(pipeline.name)} with path={self.path!r}",
                                 code="STATE_SCHEMA_MISMATCH")
            if saved == "native" and choice.path != "native":
                raise StateError(f"pipeline {pipeline.name!r} cannot run natively ("
                                 f"{'; '.join(choice.reasons)}); its checkpoint holds native "
                                 f"window state: {rebuild_hint(pipeline.name)}",
                                 code="STATE_SCHEMA_MISMATCH")
            return saved, tuple(choice.reasons)
        choice = choose_path(pipeline, self.path, schema, self.result_schema,
                             incremental=self.incremental)
        return choice.path, tuple(choice.reasons)

    def run(self, pipeline: Pipeline, bundles: FrameBundles, *,
            prior: PriorState | None = None, time: TimePolicy | None = None,
            run_id: str | None = None) -> EngineRun[SparkOutputs]:
        remember_jvm_lookups(bundles.df.sparkSession)     # a caller's own session too
        path, reasons = self.choose(pipeline, bundles.df.schema, prior)
        executor: Executor
        if path == "native":
            executor = NativeExecutor(incremental=self.incremental)
        elif path == "panes":
            executor = PaneExecutor(result_schema=self.result_schema, **self.general)
        else:
            executor = GeneralExecutor(result_schema=self.result_schema,
                                       emit_state=self.incremental, **self.general)
        run = executor.run(pipeline, bundles, prior=prior, time=time, run_id=run_id)
        run.reasons = reasons
        return run
