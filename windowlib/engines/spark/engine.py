"""The Spark engine's entry points: ``run_dataframe`` (what ``Pipeline.run`` calls) and
``explain``.

Two paths, chosen by the planner (``planner.plan_path``; ``explain`` prints its choice and the
reason for every fallback): the **native** path (``native.py``: Spark SQL only, for the subset
proven equal to the reference engine) and the **general** path (``general.py``: the semantic
core per key inside ``mapInArrow``). ``run_dataframe(path="native"|"general")`` forces one.

Outputs (SPEC §7), the same schema on both paths. General path: computed from ONE pass over the
input (its tagged output is persisted, so reading ``firings``, ``late`` and ``rejects`` does not
recompute the input; call ``result.unpersist()`` when done). Native path: three lazy
DataFrames (nothing persisted; ``unpersist()`` is a no-op):

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

from windowlib.core.errors import DefinitionError
from windowlib.core.pipeline import Pipeline
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
from windowlib.engines.spark.native import NativeRun, run_native
from windowlib.engines.spark.planner import PATHS, PathChoice, explain_choice, plan_path


@dataclass
class SparkRunResult:
    """``firings``, ``late`` and ``rejects`` DataFrames of one run (see the module docstring)."""

    firings: Any
    late: Any
    rejects: Any
    plan: BundlePlan
    path: str                      # "native" | "general": the path that ran
    general: GeneralRun | None = None
    native: NativeRun | None = None
    reasons: tuple[str, ...] = ()  # why the native path was not taken (planner)

    def unpersist(self) -> None:
        """Release the cached tagged output the three DataFrames are read from (general path;
        the native path caches nothing)."""
        if self.general is not None:
            self.general.tagged.unpersist()


def run_dataframe(pipeline: Pipeline, df: Any, arrival: str,
                  watermark: WatermarkStrategy | None = None, finalize: bool = False,
                  order_by: Sequence[str] | str | None = None, result_schema: str | None = None,
                  *, processing_time: Any = None, arrival_interval: Any = None,
                  bundles: Mapping[Any, Any] | None = None,
                  max_key_state: int = DEFAULT_MAX_KEY_STATE,
                  run_id: str | None = None, partitions: int | None = None,
                  path: str = "auto") -> SparkRunResult:
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
    - ``path``: ``auto`` (the planner decides), ``native`` (a ``DefinitionError`` with the
      planner's reasons when the pipeline is outside the native subset) or ``general``.
      ``max_key_state`` and ``partitions`` apply to the general path only.
    """
    choice = choose_path(pipeline, path, df.schema, result_schema)
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
    if choice.path == "native":
        native = run_native(pipeline, df, arrival, watermark=watermark, finalize=finalize,
                            order_by=order_by, processing_time=processing_time,
                            arrival_interval=arrival_interval, overrides=overrides)
        firings, late, rejects = native.public(run_id)
        return SparkRunResult(firings=firings, late=late, rejects=rejects, plan=native.plan,
                              path="native", native=native)
    run = run_general(pipeline, df, arrival, watermark=watermark, finalize=finalize,
                      order_by=order_by, result_schema=result_schema,
                      processing_time=processing_time, arrival_interval=arrival_interval,
                      overrides=overrides, max_key_state=max_key_state,
                      partitions=partitions)
    result = _public_frames(run, run_id)
    result.reasons = tuple(choice.reasons)
    return result


def choose_path(pipeline: Pipeline, path: str, schema: Any = None,
                result_schema: Any = None, json_columns: Sequence[str] = ()) -> PathChoice:
    """The path to run: the planner's choice for ``auto``, else the forced one (forcing
    ``native`` outside the native subset is a ``DefinitionError`` naming the reasons)."""
    if path not in PATHS:
        raise DefinitionError(f"path must be one of {', '.join(PATHS)}, got {path!r}",
                              code="ARGUMENT_INVALID")
    types = None if schema is None else {f.name: f.dataType for f in schema.fields}
    choice = plan_path(pipeline, types, result_schema=result_schema, json_columns=json_columns)
    if path == "native" and choice.path != "native":
        raise DefinitionError(f"pipeline {pipeline.name!r} cannot run on the native path: "
                              + "; ".join(choice.reasons), code="NATIVE_UNSUPPORTED")
    if path == "general":
        return PathChoice("general", choice.reasons or ["the general path was requested"])
    return choice


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


def explain(pipeline: Pipeline) -> str:
    """Which path runs ``pipeline`` on Spark (``path="auto"``), and why. Input-dependent
    checks (result types from the DataFrame's schema) happen again at run time."""
    return explain_choice(pipeline, plan_path(pipeline))
