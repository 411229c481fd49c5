"""The pane path: Python once per firing, not per element (one-shot runs).

For a ``process``/``apply`` window function (or any function behind an evictor) over the
windows and triggers the native path compiles (``planner.pane_reasons``: tumbling or sliding
event-time windows, the default trigger or ``after_end_of_window()`` with count early/late
triggers, accumulating or discarding; also the other built-in triggers ``pane_reasons``
lists: continuous, count, delta, never and ``after_first_element`` triggers, ``GlobalWindows``
and processing-time windows), Spark SQL does everything but the firings, the evictor and the
function::

    input ─► prepare_native (the bundle plan, the reject reasons), then the kept (element,
             window) rows, windows assigned and lateness applied in SQL, in one frame with
             every rejected or late row once, its reason set (``native_windows.
             kept_and_passed``)
          ─► repartition(key), then per key in the order the reference engine steps:
             bundle, arrival order, window — sorted by Arrow in the Python worker
             (``walker_sort.py``; Spark's sort where a key or ``order_by`` column has a type
             Arrow does not sort as Spark does, or ``spark.windowlib.walker.sort=spark``)
          ─► mapInArrow(pane walker)       counters per window decide the firings (the native
             count rules); the function runs once per firing over the pane (``pane_walker.py``);
             rows with a reason are written as they are, in Arrow (``pass_through``)
          ─► the general path's tagged rows: firings, side outputs, late and rejects — the
             input is read once for all outputs

Why it equals the reference engine: admission, rejects, late elements and window assignment are
the native path's (proven equal by the transcripts and differential tests); the walker applies
the native count firing rules per window in the reference engine's order; function results,
side outputs, ``window_state``/``global_state`` and errors go through the same core code as on
the other engines (``FunctionRunner``, ``Context``). The transcripts run on this path and a
differential property compares it with the reference engine (``tests/spark/test_pane_path.py``).

Event-time sessions (``planner.session_reasons``) take the same plan without windows: SQL
does the rejects (a frame of its own) and the per-key sort (bundle, arrival order), and
``session_walker.py``
merges, judges lateness on the merged window (its late elements are tagged rows, so
``PaneRun.in_tagged``) and fires. With a declarative aggregate the rows are split first
(``session_sql.py``): the sessions every element of which was at least 2 ms ahead of the
watermark it met are aggregated in Spark SQL (one ON_TIME firing each, as tagged rows), only
the others are walked; the marked rows are persisted then (the walker's output is kept as
below), and the SQL firings read the marked rows lazily.

Cost: the native path's row-level SQL (one scan of the input) and one shuffle of the
(element, window) rows (and the rejected and late rows) by key, sorted per partition in the
worker — the general path's plan, whose sort is Spark's — then a few integer operations per
element and Python per firing (the general path runs the
core's trigger and timer machinery per element). Like the general path's, a one-shot run's
tagged output is kept (``walker_files.py``: files its Python tasks write, or persisted), so
reading several outputs does not recompute the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from windowlib.core.assigners import GlobalWindows
from windowlib.core.errors import DefinitionError
from windowlib.core.outputs import OutputColumns
from windowlib.core.pipeline import Pipeline
from windowlib.core.triggers import (
    AfterFirstElement,
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
)
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.engines.base import BundleTimes
from windowlib.engines.spark.bundles import TS, BundlePlan
from windowlib.engines.spark.columns import (
    ABSENT,
    DEFAULT_MAX_KEY_STATE,
    SUB,
    B,
    user_col,
)
from windowlib.engines.spark.general import (
    tagged_part,
    walker_schema,
)
from windowlib.engines.spark.native import (
    InputFrames,
    NativeInputs,
    count_phases,
    prepare_native,
)
from windowlib.engines.spark.native_parts import REASON, WS
from windowlib.engines.spark.native_windows import kept_and_passed
from windowlib.engines.spark.outputs import DeferredPart, OutputPart, SparkOutputs, render
from windowlib.engines.spark.pane_walker import PaneWalkConfig, PaneWalker
from windowlib.engines.spark.planner import pane_trigger, session_sql_reasons
from windowlib.engines.spark.result_types import with_result_schema
from windowlib.engines.spark.session import conf_value, large_var_types, shuffle_partitions
from windowlib.engines.spark.session_sql import split_sessions
from windowlib.engines.spark.session_walker import SessionWalkConfig, SessionWalker
from windowlib.engines.spark.walk_values import WalkConfig
from windowlib.engines.spark.walker import make_walker
from windowlib.engines.spark.walker_files import WalkerFiles, walker_output
from windowlib.engines.spark.walker_sort import (
    SORT_CONF,
    SORT_MEMORY_CONF,
    ArrowSort,
    arrow_sortable,
    sort_budget,
)

__all__ = ["PaneRun", "run_panes"]


@dataclass
class PaneRun(InputFrames):
    """What ``run_panes`` returns: the walker's tagged rows (firings and side outputs), the
    native late and rejects frames (``inputs``', planned on first use), and what they were
    computed from."""

    tagged: Any
    inputs: NativeInputs = field(repr=False)
    plan: BundlePlan
    key_columns: tuple[str, ...]
    result_columns: tuple[str, ...]
    result_mode: str
    element_columns: tuple[str, ...]
    typed_tags: tuple[str, ...] = ()
    persisted: bool = False
    retracting: bool = False
    # the outputs whose rows are tagged rows too, besides firings and side outputs: late and
    # rejects (the walker passes them through), or late only (sessions: the walker judges
    # lateness; rejects come from SQL); the others come from ``late``/``rejects``
    in_tagged: tuple[str, ...] = ("late", "rejects")
    walked: Any = None     # the rows the walker takes (sessions in two parts: session_sql.py)
    cached: list = field(default_factory=list)     # the persisted frames (``persist``)
    files: WalkerFiles | None = None     # the walker's output as files (``walker_files.py``)

    def outputs(self, run_id: str | None) -> SparkOutputs:
        """Firings and side outputs from the tagged rows, late and rejects from the tagged
        rows or the native frames (``in_tagged``; ``outputs.py``)."""

        names = OutputColumns(self.key_columns, self.element_columns, self.result_columns,
                              False, self.typed_tags)

        def value(name: str) -> Any:
            return user_col(name)

        def part(output: str) -> DeferredPart:
            return DeferredPart((output,), lambda: OutputPart(
                getattr(self, output), output, {output: render(names, output, value, run_id)}))

        parts = [tagged_part(self.tagged, names, run_id,
                             ("firings", "side_outputs", *self.in_tagged))]
        parts += [part(output) for output in ("late", "rejects") if output not in self.in_tagged]
        # counting the walker's output (first) computes the marked rows it reads too; written
        # as files, it was computed with them
        return SparkOutputs(names, parts, cached=list(self.cached),
                            compute=[] if self.files is not None else list(self.cached[:1]),
                            files=[self.files] if self.files is not None else [])


def run_panes(pipeline: Pipeline, df: Any, arrival: str, *,
              watermark: WatermarkStrategy | None = None, finalize: bool = False,
              order_by: Sequence[str] | str | None = None, result_schema: Any = None,
              processing_time: Any = None, arrival_interval: Any = None,
              overrides: Mapping[Any, BundleTimes] | None = None,
              max_key_state: int = DEFAULT_MAX_KEY_STATE, json_columns: Sequence[str] = (),
              seq_column: str | None = None, persist: bool = True,
              partitions: int | None = None,
              bundle_stats: Mapping[Any, Any] | None = None) -> PaneRun:
    """Build the pane path's outputs for ``pipeline`` over ``df`` (the caller has checked
    ``planner.pane_reasons``); options as ``general.run_general`` (whose test-harness hooks
    ``json_columns``/``seq_column`` it shares)."""
    from pyspark.sql import functions as F

    pipeline = with_result_schema(pipeline, result_schema)
    inputs = prepare_native(pipeline, df, arrival, watermark=watermark, finalize=finalize,
                            order_by=order_by, processing_time=processing_time,
                            arrival_interval=arrival_interval, overrides=overrides,
                            seq_column=seq_column, bundle_stats=bundle_stats,
                            aggregates=False)
    parts, logic, plan = inputs.parts, inputs.logic, inputs.plan
    user_columns = inputs.user_columns
    keys = [user_col(c) for c in logic.key_columns]
    absent = [F.col(ABSENT)] if ABSENT in parts.kept.columns else []
    sessions = logic.merging
    # one scan: the rejected and late rows travel with the kept ones (sessions: rejects in
    # SQL; the session walker judges lateness)
    rows = parts.kept if sessions else \
        kept_and_passed(logic.assigner, inputs.screened, parts.lateness)
    passed = [] if sessions else [F.col(REASON)]
    if keys:
        n = partitions if partitions is not None else shuffle_partitions(df.sparkSession)
        rows = rows.repartition(n, *keys) if n else rows.repartition(*keys)
    else:
        rows = rows.repartition(1)
    json_set = set(json_columns)
    mode, result, out_schema = walker_schema(pipeline, df.schema, user_columns, json_set)
    types = {f.name: f.dataType for f in df.schema.fields}
    sql_firings, cached = None, []
    if sessions and not session_sql_reasons(pipeline, types, json_columns):
        rows, sql_firings, marked = split_sessions(rows, parts, pipeline, result, types,
                                                   out_schema, persist=persist)
        cached.append(marked)
    # the reference engine's steps per key: bundles in order, elements in arrival order, an
    # element's windows by start (sessions: the walker assigns them); the ordering columns
    # stay in Spark
    window_col = [] if sessions else [F.col(WS)]
    arrange = _arrow_sort(df.sparkSession, logic, types, order_by, len(parts.order),
                          bool(window_col))
    if arrange is None:
        rows = rows.sortWithinPartitions(*keys, F.col(B), *parts.order, F.col(SUB),
                                         *window_col)
    order = [] if arrange is None else \
        [o.alias(name) for o, name in zip(parts.order, arrange.drop, strict=True)]
    rows = rows.select(*keys, *[user_col(c) for c in user_columns
                                if c not in logic.key_column_set],
                       *absent, F.col(B), F.col(SUB), F.col(TS), *window_col, *passed, *order)

    side_types = logic.runner.side_types
    config = WalkConfig(
        pipeline=pipeline, arrivals=plan.index, processing_times=plan.processing_times,
        watermarks=plan.watermarks, initial_watermark=plan.initial_watermark,
        finalize=finalize, user_columns=tuple(user_columns), json_columns=tuple(json_set),
        seq_column=seq_column, has_absent=bool(absent), result_mode=mode,
        result_names=tuple(f.name for f in result), typed_tags=tuple(side_types),
        max_key_state=max_key_state, out_schema_json=out_schema.json(),
        large_types=large_var_types(df.sparkSession))
    if sessions:
        walker = make_walker(SessionWalkConfig(
            walk=config, watermark_before=list(parts.W_before),
            discarding=not parts.accumulating), SessionWalker, arrange)
    else:
        walker = make_walker(_pane_config(config, parts, logic), PaneWalker, arrange)
    tagged, files = walker_output(rows, walker, out_schema, config.large_types, persist)
    if files is None:     # first: counting it runs the walker (errors surface there)
        cached.insert(0, tagged)
    if sql_firings is not None:     # the SQL part reads the persisted marked rows
        tagged = sql_firings.unionByName(tagged)
    return PaneRun(tagged=tagged, inputs=inputs, plan=plan,
                   key_columns=logic.key_columns,
                   result_columns=tuple(f.name for f in result), result_mode=mode,
                   element_columns=tuple(user_columns), typed_tags=tuple(side_types),
                   persisted=persist and files is None, walked=rows,
                   in_tagged=("late",) if sessions else ("late", "rejects"),
                   cached=cached if persist else [], files=files)


def _arrow_sort(spark: Any, logic: Any, types: Mapping[str, Any],
                order_by: Sequence[str] | str | None, n_order: int,
                windows: bool) -> ArrowSort | None:
    """How the walkers get their rows in order: sorted by Arrow in the worker
    (``walker_sort.py``) when every sort column is of a type Arrow sorts as Spark does and
    ``spark.windowlib.walker.sort`` is not ``spark``; ``None``: Spark sorts them. The
    arrival order's expressions travel as columns named ``__wl_o<i>``."""
    choice = (conf_value(spark, SORT_CONF) or "arrow").strip().lower()
    if choice not in ("arrow", "spark"):
        raise DefinitionError(f"{SORT_CONF}={choice!r}: use arrow or spark",
                              code="ARGUMENT_INVALID")
    named = [] if order_by is None else [order_by] if isinstance(order_by, str) else order_by
    if choice == "spark" or not all(c in types and arrow_sortable(types[c])
                                    for c in [*logic.key_columns, *named]):
        return None
    order = tuple(f"__wl_o{i}" for i in range(n_order))
    return ArrowSort(columns=(*logic.key_columns, B, *order, SUB, *([WS] if windows else [])),
                     drop=order,
                     budget_bytes=sort_budget(conf_value(spark, SORT_MEMORY_CONF)))


def _pane_config(config: WalkConfig, parts: Any, logic: Any) -> PaneWalkConfig:
    """The pane walker's configuration for the windows and trigger of ``logic``."""
    trigger, purging = pane_trigger(logic.trigger)
    first = getattr(trigger, "early", None)
    early_first = first if type(first) is AfterFirstElement else None
    early, late_every = count_phases(trigger if early_first is None
                                     else replace(trigger, early=None))
    pane_config = PaneWalkConfig(walk=config, size_ms=parts.size, lateness_ms=parts.lateness,
                                 early=early, late_every=late_every or 1,
                                 discarding=purging or not parts.accumulating,
                                 watermark_before=list(parts.W_before),
                                 continuous=trigger.interval_ms
                                 if type(trigger) is ContinuousEventTimeTrigger else None,
                                 count_every=trigger.count
                                 if type(trigger) is CountTrigger else None,
                                 delta=trigger if type(trigger) is DeltaTrigger else None,
                                 never=type(trigger) is NeverTrigger,
                                 processing=not logic.assigner.is_event_time,
                                 proc_end=type(trigger) is ProcessingTimeTrigger
                                 and logic.assigner.is_event_time,
                                 early_first=early_first,
                                 first=trigger if type(trigger) is AfterFirstElement else None,
                                 continuous_pt=trigger.interval_ms
                                 if type(trigger) is ContinuousProcessingTimeTrigger else None,
                                 global_window=isinstance(logic.assigner, GlobalWindows))
    return pane_config

