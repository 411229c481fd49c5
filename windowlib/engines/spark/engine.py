"""The Spark engine's entry points: ``run_dataframe`` (what ``Pipeline.run`` calls) and
``explain``.

Only the general path exists so far (``general.py``: the semantic core per key inside
``mapInArrow``); the native Spark SQL path and the planner that chooses between them come next
(issue 3). ``explain`` says so, and lists what in the pipeline would keep it on the general path
anyway.

Outputs (SPEC §7), as Spark DataFrames computed from ONE pass over the input (the tagged
output of the general path is persisted, so reading ``firings``, ``late`` and ``rejects`` does
not recompute the input; call ``result.unpersist()`` when done):

- ``firings``: key columns, ``window_start``/``window_end`` (TimestampType, null for global
  windows), ``pane_index``, ``timing`` (EARLY/ON_TIME/LATE), ``is_final``, ``retract`` (in
  ``accumulating_and_retracting`` mode), ``watermark`` and ``processing_time`` at the firing
  (TimestampType; null while unknown, i.e. -inf, and at the end of a finalized input, +inf),
  ``run_id``, then the result columns: typed for declarative aggregates, ``result_json`` for
  Python window functions unless ``result_schema`` is given (see ``general.py``).
- ``late``: the element's columns, ``reason`` (``too_late``) and the ``watermark`` it met.
- ``rejects``: the element's columns and ``reason``.

Errors raised inside Spark tasks (a user function failing, ``KEY_STATE_LIMIT``) surface when an
output is first computed, as Spark's ``PythonException`` whose message carries the windowlib
error (``[CODE] message``); ``windowlib.engines.spark.errors.reraise`` turns it back into the
windowlib error class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.assigners import GlobalWindows
from windowlib.core.pipeline import Pipeline
from windowlib.core.triggers import (
    AfterEndOfWindow,
    CountAtLeast,
    CountTrigger,
    EventTimeTrigger,
)
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.engines.spark.bundles import BundleOverride, BundlePlan, canonical_arrival
from windowlib.engines.spark.general import (
    DEFAULT_MAX_KEY_STATE,
    ELEMENT,
    KIND,
    REASON,
    GeneralRun,
    run_general,
)


@dataclass
class SparkRunResult:
    """``firings``, ``late`` and ``rejects`` DataFrames of one run (see the module docstring)."""

    firings: Any
    late: Any
    rejects: Any
    plan: BundlePlan
    path: str
    general: GeneralRun

    def unpersist(self) -> None:
        """Release the cached tagged output the three DataFrames are read from."""
        self.general.tagged.unpersist()


def run_dataframe(pipeline: Pipeline, df: Any, arrival: str,
                  watermark: WatermarkStrategy | None = None, finalize: bool = False,
                  order_by: Sequence[str] | str | None = None, result_schema: str | None = None,
                  *, processing_time: Any = None, arrival_interval: Any = None,
                  bundles: Mapping[Any, Any] | None = None,
                  max_key_state: int = DEFAULT_MAX_KEY_STATE,
                  run_id: str | None = None, partitions: int | None = None) -> SparkRunResult:
    """Run ``pipeline`` over ``df`` as one ad-hoc job (in-memory state, no checkpoint).

    - ``arrival``: the column whose distinct values are the bundles, ascending (a partition
      value: string, timestamp, date or integer).
    - ``watermark``: the strategy (default ``BoundedOutOfOrderness(0)``).
    - ``finalize``: end of input after the last bundle (every window fires and is cleaned up).
    - ``order_by``: arrival order inside a bundle (e.g. an ingestion sequence number);
      default ascending event time, ties broken by a hash of the whole row (SPEC §1).
    - ``result_schema``: DDL of the result columns of a Python window function.
    - ``processing_time``: the run's logical time for bundles whose arrival value is not a time,
      or a mapping arrival value -> processing time. Time-valued arrivals default to the end of
      their interval (``arrival_interval``; inferred for ISO strings such as ``2024-03-01T05``).
    - ``bundles``: explicit per-bundle times, ``{arrival value: BundleOverride(processing_time,
      watermark)}`` (or a dict with those keys); such bundles exist even without rows.
    - ``max_key_state``: the live-state limit per key (see ``general.py``).
    - ``partitions``: how many partitions (Python tasks) walk the keys; default the session's
      ``spark.sql.shuffle.partitions``, kept as is (not coalesced by adaptive execution).
    """
    overrides = None
    if bundles:
        from windowlib.core.time import timestamp_ms
        from windowlib.engines.spark.bundles import arrival_kind

        kind = arrival_kind(df.schema[arrival].dataType)
        overrides = {}
        for value, spec in bundles.items():
            if not isinstance(spec, BundleOverride):
                pt, wm = spec.get("processing_time"), spec.get("watermark")
                spec = BundleOverride(None if pt is None else timestamp_ms(pt),
                                      None if wm is None else timestamp_ms(wm))
            overrides[canonical_arrival(value, kind)] = spec
    run = run_general(pipeline, df, arrival, watermark=watermark, finalize=finalize,
                      order_by=order_by, result_schema=result_schema,
                      processing_time=processing_time, arrival_interval=arrival_interval,
                      overrides=overrides, max_key_state=max_key_state,
                      partitions=partitions)
    return _public_frames(run, run_id)


def _public_frames(run: GeneralRun, run_id: str | None) -> SparkRunResult:
    from pyspark.sql import functions as F

    def ts(name: str) -> Any:
        return F.timestamp_millis(F.col(name)).alias(name)

    tagged = run.tagged
    keys = [F.col(f"`{c}`") for c in run.key_columns]
    meta = [ts("window_start"), ts("window_end"), F.col("pane_index"), F.col("timing"),
            F.col("is_final")]
    if run.retracting:
        meta.append(F.col("retract"))
    meta += [ts("watermark"), ts("processing_time"),
             F.lit(run_id).cast("string").alias("run_id")]
    results = [F.col(f"`{c}`") for c in run.result_columns]
    firings = tagged.filter(F.col(KIND) == "firing").select(*keys, *meta, *results)
    element = [F.col(f"{ELEMENT}.`{c}`").alias(c) for c in run.element_columns]
    late = tagged.filter(F.col(KIND) == "late").select(
        *element, F.col(REASON).alias("reason"), ts("watermark"))
    rejects = tagged.filter(F.col(KIND) == "reject").select(
        *element, F.col(REASON).alias("reason"))
    return SparkRunResult(firings=firings, late=late, rejects=rejects, plan=run.plan,
                          path="general", general=run)


def general_path_reasons(pipeline: Pipeline) -> list[str]:
    """What in ``pipeline`` is outside the native path's planned scope (issue 3)."""
    reasons = []
    spec = pipeline.function
    if spec is not None and (spec.kind != "declarative" or spec.process_fn is not None):
        reasons.append(f"the window function is Python code ({spec.kind}"
                       f"{' + process function' if spec.process_fn is not None else ''})")
    if pipeline.window_evictor is not None:
        reasons.append("an evictor buffers elements (FLIP-4)")
    assigner = pipeline.window_assigner
    if assigner is not None:
        if not assigner.is_event_time:
            reasons.append("processing-time windows")
        if isinstance(assigner, GlobalWindows):
            reasons.append("global windows")
        if type(assigner).__name__ == "CalendarWindows":
            reasons.append("calendar windows")
        trigger = pipeline.effective_trigger
        if not _native_trigger(trigger):
            reasons.append(f"the trigger {trigger!r} is not a default or count-based "
                           "after_end_of_window trigger")
    return reasons


def _native_trigger(trigger: Any) -> bool:
    if isinstance(trigger, EventTimeTrigger):
        return True
    if isinstance(trigger, AfterEndOfWindow) and trigger.event_time:
        phases = [getattr(trigger, "early", None), getattr(trigger, "late", None)]
        return all(p is None or isinstance(p, CountAtLeast | CountTrigger) for p in phases)
    return False


def explain(pipeline: Pipeline) -> str:
    """Which path runs ``pipeline`` on Spark, and why."""
    lines = [f"pipeline {pipeline.name!r}: general path (the semantic core's KeyDriver per key "
             "inside mapInArrow over key-sorted partitions)",
             "  why: the native Spark SQL path is not built yet; every pipeline runs on the "
             "general path for now"]
    reasons = general_path_reasons(pipeline)
    if reasons:
        lines.append("  would stay on the general path because: " + "; ".join(reasons))
    return "\n".join(lines)
