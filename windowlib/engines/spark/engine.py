"""The Spark engine's entry points: ``run_dataframe`` (what ``Pipeline.run`` calls) and
``explain``.

Three paths, chosen by the planner (``planner.choose_path``; ``explain`` prints its choice and
the reason for every fallback): the **native** path (``native.py``: Spark SQL only, for the
subset proven equal to the reference engine), the **pane** path (``panes.py``: the native
path's firings with a Python ``process``/``apply`` function called once per firing) and the
**general** path (``general.py``: the semantic core per key inside ``mapInArrow``).
``run_dataframe(path="native"|"panes"|"general")`` forces one.

Outputs (SPEC §7), the same schema on every path. General and pane paths: the Python pass is
computed once, inside ``run_dataframe``, and ``firings``, ``late`` and ``rejects`` read its
output without recomputing the input: on a local master its Python tasks write it as Parquet
files (``walker_files.py``), elsewhere (a cluster, Spark Connect) it is persisted. Call
``result.unpersist()`` when done: it deletes the files (the DataFrames cannot be read after
it) or releases the cache. Native path: three lazy DataFrames (nothing persisted;
``unpersist()`` is a no-op):

- ``firings``: key columns, ``window_start``/``window_end`` (TimestampType, null for global
  windows), ``pane_index``, ``timing`` (EARLY/ON_TIME/LATE), ``is_final``, ``retract`` (in
  ``accumulating_and_retracting`` mode), ``watermark`` and ``processing_time`` at the firing
  (TimestampType; null while unknown, i.e. -inf, and at the end of a finalized input, +inf),
  ``run_id``, then the result columns: typed for declarative aggregates and for Python window
  functions that declare their rows (a ``result_schema`` attribute, yield hints, or
  ``result_schema=`` here), ``result_json`` for Python functions that declare nothing (see
  ``general.py``).
- ``late``: the element's columns, ``reason`` (``too_late``) and the ``watermark`` it met.
- ``rejects``: the element's columns and ``reason``.
- ``side_output(tag)``: the values ``context.output`` sent to ``tag`` (typed when the tag
  declares a schema, else ``value_json``).

``late``, ``rejects`` and the side outputs are planned when first read: every new DataFrame
costs Spark an analysis of its plan, which a caller reading only the firings does not need.

Errors raised inside Spark tasks (a user function failing: ``FUNCTION_FAILED`` naming the
function, key and window; ``KEY_STATE_LIMIT``) reach the caller as the windowlib error itself:
the general and pane paths compute their one pass inside ``run_dataframe`` and turn a task
failure back into the windowlib class (``errors.reraise``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from windowlib.core.functions import OutputTag
from windowlib.core.pipeline import Pipeline
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.engines.base import EngineRun, TimePolicy
from windowlib.engines.spark.bundles import BundlePlan
from windowlib.engines.spark.columns import DEFAULT_MAX_KEY_STATE
from windowlib.engines.spark.errors import reraise
from windowlib.engines.spark.executors import FrameBundles, SparkExecutor
from windowlib.engines.spark.planner import choose_path, explain_choice
from windowlib.engines.spark.shipping import ship_code


@dataclass
class SparkRunResult:
    """``firings``, ``late`` and ``rejects`` DataFrames of one run and its side outputs
    (``side_output(tag)``; see the module docstring); ``run`` is the executor's account
    (``engines.base.EngineRun``). ``late`` and ``rejects`` are planned when first read (each
    new DataFrame costs Spark an analysis; a caller may read only the firings)."""

    firings: Any
    run: EngineRun = field(repr=False)

    @cached_property
    def late(self) -> Any:
        return self.run.outputs.frame("late")

    @cached_property
    def rejects(self) -> Any:
        return self.run.outputs.frame("rejects")

    @property
    def plan(self) -> BundlePlan:
        return self.run.detail.plan

    @property
    def path(self) -> str:
        """``native`` | ``panes`` | ``general``: the path that ran."""
        return self.run.path

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the native path was not taken (planner)."""
        return self.run.reasons

    @property
    def general(self) -> Any:
        return self.run.detail if self.run.path == "general" else None

    @property
    def native(self) -> Any:
        return self.run.detail if self.run.path == "native" else None

    def side_output(self, tag: OutputTag | str) -> Any:
        """The values ``context.output`` sent to ``tag`` (a name or an ``OutputTag``), as a
        DataFrame: the columns of the tag's declared schema, or ``value_json`` (``codec``
        JSON text) for a tag declared without one. A tag that got no values gives no rows."""
        return self.run.outputs.side_output(tag.name if isinstance(tag, OutputTag) else tag)

    def unpersist(self) -> None:
        """Release the walker output the DataFrames are read from (general and pane paths:
        its files are deleted, after which the DataFrames cannot be read, or its cache
        released; the native path keeps nothing)."""
        self.run.outputs.unpersist()


def run_dataframe(pipeline: Pipeline, df: Any, arrival: str,
                  watermark: WatermarkStrategy | None = None, finalize: bool = False,
                  order_by: Sequence[str] | str | None = None, result_schema: Any = None,
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
    - ``result_schema``: the result columns of a Python window function (DDL, a dataclass or
      ``TypedDict`` class), for functions that do not declare them themselves (a function's
      own ``result_schema`` attribute is the usual place).
    - ``processing_time``: the run's logical time for bundles whose arrival value is not a time,
      or a mapping arrival value -> processing time. Time-valued arrivals default to the end of
      their interval (``core.partitions``; ``arrival_interval`` gives the length when the value
      cannot, e.g. for timestamp columns).
    - ``bundles``: explicit per-bundle times, ``{arrival value: BundleTimes(processing_time,
      watermark)}`` (or a dict with those keys); such bundles exist even without rows.
    - ``max_key_state``: the live-state limit per key (see ``general.py``).
    - ``partitions``: how many partitions (Python tasks) walk the keys; default the session's
      ``spark.sql.shuffle.partitions``, kept as is (not coalesced by adaptive execution).
    - ``path``: ``auto`` (the planner decides), ``native`` (a ``DefinitionError`` with the
      planner's reasons when the pipeline is outside the native subset), ``panes`` (likewise)
      or ``general``. ``max_key_state`` and ``partitions`` apply to the general and pane
      paths.
    """
    ship_code(df.sparkSession)    # windowlib on a cluster's executors (no-op on local masters)
    executor = SparkExecutor(path=path, result_schema=result_schema,
                             max_key_state=max_key_state, partitions=partitions)
    time = TimePolicy(watermark=watermark, finalize=finalize, processing_time=processing_time,
                      arrival_interval=arrival_interval, bundles=bundles)
    run = executor.run(pipeline, FrameBundles(df, arrival, order_by), time=time, run_id=run_id)
    out = run.outputs
    for frame in out.to_compute():     # the run's one pass, computed now: a failing user
        try:                           # function is its windowlib error (FUNCTION_FAILED...)
            frame.count()
        except Exception as exc:
            reraise(exc)
    return SparkRunResult(firings=out.frame("firings"), run=run)


def explain(pipeline: Pipeline) -> str:
    """Which path runs ``pipeline`` on Spark (``path="auto"``), and why. Input-dependent
    checks (result types from the DataFrame's schema) happen again at run time."""
    return explain_choice(pipeline, choose_path(pipeline))
