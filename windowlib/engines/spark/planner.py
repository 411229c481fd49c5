"""The planner: which Spark path runs a pipeline, and why.

``plan_path`` accepts a pipeline for the native path (``native.py``) only when every part of it
is inside what the native compiler implements and has been shown equal to the reference engine;
for everything else it names each reason, and the general path (the semantic core per key,
``general.py``) runs it — or, for one-shot runs of ``process``/``apply`` functions (or any
function behind an evictor) whose windows and trigger the native path compiles, the pane path
(``panes.py``: the native firings, the function and the evictor in Python once per firing;
``pane_reasons``) — event-time sessions (a static or a dynamic gap) with the default trigger
take its session walker (``session_walker.py``; ``session_reasons``), with declarative
aggregates and a static gap only for the sessions that ``session_sql.py`` cannot aggregate in
Spark SQL
(``session_sql_reasons``). The native subset:

- assigner: ``TumblingEventTimeWindows`` or ``SlidingEventTimeWindows`` (any size, slide,
  offset), keyed or ``window_all``;
- trigger: the default ``EventTimeTrigger`` or ``EventTimeTrigger.after_end_of_window()``
  with optional count early/late triggers (``CountTrigger.at_least(n)`` / ``CountTrigger.of(n)``;
  ``native_counts.py``); any allowed lateness; accumulating, discarding or
  accumulating_and_retracting;
- function: declarative aggregates only (``windowlib.aggregates``), no process function, no
  evictor, results typable from the input schema, no result named like an output column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowlib.core.errors import DefinitionError
from windowlib.core.functions import ProcessWindowFunction
from windowlib.core.outputs import RESERVED_COLUMNS
from windowlib.core.pipeline import Pipeline
from windowlib.core.triggers import (
    AfterEndOfWindow,
    AfterFirstElement,
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountAtLeast,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
)
from windowlib.engines.spark.native_aggs import NATIVE_KINDS

PATHS = ("auto", "native", "panes", "general")


@dataclass(frozen=True)
class PathChoice:
    """``path`` is ``"native"`` or ``"general"``; ``reasons`` lists every reason the pipeline
    cannot take the native path (empty when it can)."""

    path: str
    reasons: list[str] = field(default_factory=list)


def plan_path(pipeline: Pipeline, input_types: Mapping[str, Any] | None = None, *,
              result_schema: Any = None, json_columns: Sequence[str] = ()) -> PathChoice:
    """Choose the path for ``pipeline``.

    ``input_types``: the DataFrame's column types (``{name: DataType}``), when known; the result
    types are then checked too. ``result_schema`` (a user DDL for Python functions) and
    ``json_columns`` (test-harness columns holding encoded values of mixed types) keep a
    pipeline on the general path.
    """
    reasons = _pipeline_reasons(pipeline)
    if result_schema is not None:
        reasons.append("a result_schema is given (the general path converts results to it)")
    if _declarative(pipeline):
        reasons += _column_reasons(pipeline, input_types, json_columns, typed=not reasons)
    return PathChoice("general" if reasons else "native", reasons)


def choose_path(pipeline: Pipeline, path: str = "auto", schema: Any = None,
                result_schema: Any = None, json_columns: Sequence[str] = (), *,
                incremental: bool = False) -> PathChoice:
    """The path to run: the planner's choice for ``auto`` (``incremental_path`` when the run
    carries pane state), else the forced one (forcing ``native`` outside the native subset is
    a ``DefinitionError`` naming the reasons). ``schema``: the input's ``StructType``."""
    if path not in PATHS:
        raise DefinitionError(f"path must be one of {', '.join(PATHS)}, got {path!r}",
                              code="ARGUMENT_INVALID")
    types = None if schema is None else {f.name: f.dataType for f in schema.fields}
    if incremental:
        choice = incremental_path(pipeline, types)
    else:
        choice = plan_path(pipeline, types, result_schema=result_schema,
                           json_columns=json_columns)
    if path == "native" and choice.path != "native":
        raise DefinitionError(f"pipeline {pipeline.name!r} cannot run on the native path: "
                              + "; ".join(choice.reasons), code="NATIVE_UNSUPPORTED")
    if path == "general":
        return PathChoice("general", choice.reasons or ["the general path was requested"])
    if choice.path == "native" or incremental:
        return choice
    panes = pane_reasons(pipeline)
    if path == "panes" and panes:
        raise DefinitionError(f"pipeline {pipeline.name!r} cannot run on the pane path: "
                              + "; ".join(panes), code="PANES_UNSUPPORTED")
    return PathChoice("panes", choice.reasons) if not panes else choice


def incremental_path(pipeline: Pipeline, input_types: Mapping[str, Any] | None = None
                     ) -> PathChoice:
    """The path of an incremental run (``runs.incremental``): native when ``plan_path``
    accepts the pipeline AND its trigger is the default one (``EventTimeTrigger`` or
    ``after_end_of_window()``), optionally with an early count trigger outside
    accumulating_and_retracting (``native_incremental_early.py``), without a late trigger or
    ``fire_empty_on_time`` AND it has no ``collect_list`` (``native_incremental.py`` carries
    window state between runs)."""
    choice = plan_path(pipeline, input_types)
    reasons = list(choice.reasons)
    trigger = pipeline.effective_trigger
    if not reasons and (getattr(trigger, "late", None) is not None
                        or getattr(trigger, "fire_empty_on_time", False)):
        reasons.append(f"incremental runs compile the default trigger and early count "
                       f"triggers natively, not late triggers or fire_empty_on_time (the "
                       f"trigger is {trigger!r})")
    if not reasons and getattr(trigger, "early", None) is not None \
            and pipeline.effective_accumulation == "accumulating_and_retracting":
        reasons.append("incremental runs retract early firings on the general path only")
    spec = pipeline.function
    if not reasons and any(a.kind == "collect_list" for a in spec.fn.aggregates):
        reasons.append("collect_list keeps arrival order across incremental runs on the "
                       "general path only")
    return PathChoice("general" if reasons else "native", reasons)


def _pipeline_reasons(pipeline: Pipeline) -> list[str]:
    reasons: list[str] = []
    spec = pipeline.function
    if spec is None:
        reasons.append("the pipeline has no window function")
    elif not _declarative(pipeline):
        reasons.append(f"the window function is Python code ({spec.kind}"
                       f"{' + process function' if spec.process_fn is not None else ''})")
    else:
        reasons += _aggregate_reasons(pipeline, NATIVE_KINDS, "have no native compilation")
    return reasons + _firing_reasons(pipeline)


def _declarative(pipeline: Pipeline) -> bool:
    """The function is declarative aggregates alone (no process function)."""
    spec = pipeline.function
    return spec is not None and spec.kind == "declarative" and spec.process_fn is None


def _aggregate_reasons(pipeline: Pipeline, supported: frozenset[str], why: str) -> list[str]:
    """Why Spark SQL cannot compute a declarative function's aggregates: kinds outside
    ``supported`` (``why`` says what that means), result columns named like output columns."""
    spec = pipeline.function
    reasons = []
    kinds = sorted({a.kind for a in spec.fn.aggregates} - supported)
    if kinds:
        reasons.append(f"aggregates {kinds} {why}")
    reserved = sorted(set(spec.fn.output_names) & RESERVED_COLUMNS)
    if reserved:
        reasons.append(f"result columns {reserved} collide with output columns")
    return reasons


def _column_reasons(pipeline: Pipeline, input_types: Mapping[str, Any] | None,
                    json_columns: Sequence[str], typed: bool) -> list[str]:
    """Why a declarative function's input columns do not fit Spark SQL: columns holding values
    of mixed types (``json_columns``), or, with ``typed`` and the ``input_types`` known,
    result types that cannot be derived from them."""
    spec = pipeline.function
    used = {a.column for a in spec.fn.aggregates if a.column is not None}
    mixed = sorted((used | set(pipeline.key_columns)) & set(json_columns))
    if mixed:
        return [f"the columns {mixed} hold values of mixed types"]
    if input_types is not None and typed:
        from windowlib.engines.spark.result_types import result_fields

        if result_fields(pipeline, dict(input_types))[0] != "typed":
            return ["a declarative aggregate's result type cannot be derived from the input "
                    "columns (missing column or unsupported type)"]
    return []


def pane_reasons(pipeline: Pipeline) -> list[str]:
    """Why ``pipeline`` cannot take the pane path (``panes.py``: the native path's firings,
    the window function in Python once per firing); empty when it can. The pane path runs
    ``process``/``apply``/``process_panes`` functions (which see every element of a pane
    anyway) — and, behind an evictor (FLIP-4: the pane is buffered whatever the function),
    ``aggregate``/``reduce`` and declarative aggregates too — without retractions or a
    ``clear`` hook, over the windows and triggers the native path compiles, a
    ``ContinuousEventTimeTrigger``, a ``CountTrigger`` (also over ``GlobalWindows``: count
    windows), a ``DeltaTrigger``, a ``ContinuousProcessingTimeTrigger`` or a ``NeverTrigger``
    (the default of ``GlobalWindows``: one final pane per key at the end of a finalized
    input), the last four also over ``GlobalWindows``, processing-time tumbling or sliding
    windows with their default ``ProcessingTimeTrigger`` (also over event-time windows),
    ``after_first_element(delay)`` (event or processing time) over time windows, any of them
    inside a ``PurgingTrigger``,
    and ``after_end_of_window()`` with an early ``after_first_element``
    (``pane_dsl_trigger``); one-shot runs only
    (incremental runs keep the general path's state)."""
    if pipeline.window_assigner is not None and pipeline.window_assigner.is_merging:
        return session_reasons(pipeline)
    reasons: list[str] = []
    spec = pipeline.function
    evictor = pipeline.window_evictor
    if spec is None or (spec.kind not in ("process", "apply", "batch") and evictor is None):
        kind = "no function" if spec is None else spec.kind
        reasons.append(f"the pane path runs process/apply/process_panes functions, or any "
                       f"function behind an evictor ({kind}: aggregated per element)")
    elif spec.kind == "process" and getattr(spec.fn, "clear", None) is not None \
            and getattr(type(spec.fn), "clear", None) is not ProcessWindowFunction.clear:
        reasons.append("the process function has a clear() hook (called at window cleanup)")
    if pipeline.effective_accumulation == "accumulating_and_retracting":
        reasons.append("accumulating_and_retracting repeats earlier firings")
    if evictor is not None and getattr(pipeline.effective_trigger, "fire_empty_on_time", False):
        reasons.append("fire_empty_on_time with an evictor (ON_TIME panes the evictor emptied)")
    return reasons + _firing_reasons(pipeline, panes=True)


def session_reasons(pipeline: Pipeline) -> list[str]:
    """Why a session pipeline cannot take the pane path's session walker
    (``session_walker.py``); empty when it can: ``EventTimeSessionWindows`` (a static or a
    dynamic gap), the default ``EventTimeTrigger``, accumulating or discarding, no evictor, and a
    declarative aggregate, ``aggregate``/``reduce`` or a ``process``/``apply`` function without
    a ``clear()`` hook; one-shot runs only."""
    reasons: list[str] = []
    assigner = pipeline.window_assigner
    if type(assigner) is not EventTimeSessionWindows:
        reasons.append(f"the session walker runs event-time sessions only "
                       f"({type(assigner).__name__})")
    if type(pipeline.effective_trigger) is not EventTimeTrigger:
        reasons.append(f"the session walker fires the default EventTimeTrigger only (the "
                       f"trigger is {pipeline.effective_trigger!r})")
    if pipeline.effective_accumulation == "accumulating_and_retracting":
        reasons.append("accumulating_and_retracting repeats earlier firings")
    if pipeline.window_evictor is not None:
        reasons.append("an evictor (the session walker keeps no evicting panes)")
    spec = pipeline.function
    if spec is None or spec.kind not in ("declarative", "aggregate", "reduce", "process",
                                         "apply"):
        kind = "no function" if spec is None else spec.kind
        reasons.append(f"the session walker runs declarative aggregates, aggregate/reduce "
                       f"and process/apply functions ({kind})")
    else:
        target = spec.fn if spec.kind == "process" else spec.process_fn
        clear = getattr(type(target), "clear", None) if target is not None else None
        if clear is not None and clear is not ProcessWindowFunction.clear:
            reasons.append("the process function has a clear() hook (called at window "
                           "cleanup)")
    return reasons


# the declarative aggregates whose session result Spark SQL computes as the walker does
# (collect_list: the walker concatenates merged sessions in window order, not arrival order)
SESSION_SQL_KINDS = NATIVE_KINDS - {"collect_list"}


def session_sql_reasons(pipeline: Pipeline, input_types: Mapping[str, Any] | None = None,
                        json_columns: Sequence[str] = ()) -> list[str]:
    """Why the session walker's pipeline cannot aggregate its simple sessions in Spark SQL
    (``session_sql.py``: every element of the session ahead of the watermark it met); empty
    when it can: a static gap (the SQL part chains elements by it), a declarative aggregate
    without a process function, of the kinds in ``SESSION_SQL_KINDS``, typed from the input
    columns (``input_types``, when known), over columns that hold values of one type."""
    spec = pipeline.function
    if getattr(pipeline.window_assigner, "gap_fn", None) is not None:
        return ["a dynamic session gap: the walker asks the gap function per element"]
    if not _declarative(pipeline):
        kind = "no function" if spec is None else spec.kind
        return [f"the window function is Python code ({kind}): the walker runs it"]
    reasons = _aggregate_reasons(pipeline, SESSION_SQL_KINDS, "keep the walker's merge order")
    return reasons + _column_reasons(pipeline, input_types, json_columns, typed=not reasons)


def _firing_reasons(pipeline: Pipeline, panes: bool = False) -> list[str]:
    """Why the native firing builders cannot compute the pipeline's firings (``panes``: for the
    pane path, which also buffers panes for evictors and fires the windows and triggers
    ``pane_reasons`` lists besides the native ones)."""
    reasons: list[str] = []
    if pipeline.window_evictor is not None and not panes:
        reasons.append("an evictor buffers elements (FLIP-4)")
    assigner = pipeline.window_assigner
    if assigner is None:
        reasons.append("the pipeline has no window")
        return reasons
    if panes and type(assigner) is GlobalWindows:
        if type(pane_trigger(pipeline.effective_trigger)[0]) not in (
                CountTrigger, DeltaTrigger, NeverTrigger, ContinuousProcessingTimeTrigger):
            reasons.append("GlobalWindows take the pane path with a CountTrigger (count "
                           "windows), a DeltaTrigger, a ContinuousProcessingTimeTrigger or "
                           "the default NeverTrigger only")
        return reasons
    if panes and type(assigner) in (TumblingProcessingTimeWindows, SlidingProcessingTimeWindows):
        if type(pane_trigger(pipeline.effective_trigger)[0]) is not ProcessingTimeTrigger:
            reasons.append("processing-time windows take the pane path with their default "
                           "ProcessingTimeTrigger only")
        return reasons
    if type(assigner) not in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        name = type(assigner).__name__
        if not assigner.is_event_time:
            reasons.append(f"processing-time windows ({name})")
        elif assigner.is_merging:
            reasons.append(f"session windows ({name}) are not compiled natively yet")
        else:
            reasons.append(f"{name} are not compiled natively")
    trigger = pipeline.effective_trigger
    discarding = pipeline.effective_accumulation == "discarding"
    if panes:
        trigger, purging = pane_trigger(trigger)
        discarding = discarding or purging
        if type(trigger) in (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger,
                             CountTrigger, DeltaTrigger, NeverTrigger, AfterFirstElement,
                             ProcessingTimeTrigger):
            return reasons
    if panes and not (native_trigger(trigger) or pane_dsl_trigger(trigger)):
        reasons.append(f"the pane path does not fire the trigger {trigger!r} (it fires the "
                       "built-in triggers pane_reasons lists; Any/All compositions, other "
                       "early or late triggers and a user's Trigger take the general path)")
    elif not panes and not native_trigger(trigger):
        reasons.append(f"the trigger {trigger!r} is not compiled natively (native: the default "
                       "EventTimeTrigger or after_end_of_window() with count early/late "
                       "triggers)")
    elif getattr(trigger, "fire_empty_on_time", False) and trigger.early is not None \
            and discarding:
        reasons.append("fire_empty_on_time with an early trigger in discarding mode (empty "
                       "ON_TIME panes)")
    return reasons


def pane_trigger(trigger: Any) -> tuple[Any, bool]:
    """``(trigger, purging)``: a ``PurgingTrigger``'s nested trigger and ``True`` — every FIRE
    purging the pane is discarding mode for the pane path, which keeps no retractions."""
    if type(trigger) is PurgingTrigger:
        return trigger.nested, True
    return trigger, False


def pane_dsl_trigger(trigger: Any) -> bool:
    """The ``after_end_of_window()`` triggers the pane path fires beyond the native ones: an
    early ``after_first_element(delay)``, by event or processing time (with a count late
    trigger or none)."""
    return (type(trigger) is AfterEndOfWindow and trigger.event_time
            and type(trigger.early) is AfterFirstElement
            and (trigger.late is None or type(trigger.late) in (CountAtLeast, CountTrigger)))


def native_trigger(trigger: Any) -> bool:
    """The triggers the native path compiles (see the module docstring)."""
    if type(trigger) is EventTimeTrigger:
        return True
    return (type(trigger) is AfterEndOfWindow and trigger.event_time
            and all(t is None or type(t) in (CountAtLeast, CountTrigger)
                    for t in (trigger.early, trigger.late)))


def explain_choice(pipeline: Pipeline, choice: PathChoice) -> str:
    """Human-readable explanation of ``choice`` (what ``Pipeline.explain`` prints), with the
    path incremental runs take."""
    incremental = incremental_path(pipeline)
    if incremental.path == "native":
        runs = ("  incremental runs (run_incremental, the DAGs): native too, with the pane "
                "state kept as one row per live window between runs")
    else:
        runs = ("  incremental runs (run_incremental, the DAGs): general path (the core's "
                "per-key state between runs); why not native: " + "; ".join(incremental.reasons))
    if choice.path == "native":
        return (f"pipeline {pipeline.name!r}: native path (Spark SQL only, no Python per row: "
                "a plain groupBy(key, window) aggregate for the on-time part, window functions "
                "over the late rows alone, one join by window)\n  why: every part of the "
                "pipeline is inside the native subset proven equal to the reference engine\n"
                "  bundle plan: from Parquet footer statistics (no Spark job) when the input "
                "is a plain Parquet scan with INT64 timestamp or integer event times, "
                "statistics and non-null keys, and its files are readable where the driver "
                "(or the Spark Connect client) runs; otherwise one small aggregate job "
                "(groupBy(arrival).agg(count, max event time)), e.g. for other formats, "
                "filters or computed columns, INT96 timestamps, or remote files over Spark "
                f"Connect\n{runs}")
    if choice.path == "panes" and pipeline.window_assigner.is_merging:
        sql = session_sql_reasons(pipeline)
        split = ("two parts: the sessions whose every element was at least 2 ms ahead of "
                 "the watermark it met (they can neither be late nor meet a fired session) are "
                 "aggregated in Spark SQL and fire once ON_TIME (session_sql.py); the others "
                 "take the session walker (" if not sql else "session walker (")
        why_walker = ("" if not sql else "\n  why every session takes the walker: "
                      + "; ".join(sql))
        return (f"pipeline {pipeline.name!r}: pane path, {split}rejects in Spark SQL, one "
                "shuffle and sort per key; sessions merged, judged late and fired in Python "
                "with the core's function runner, the window function once per firing: "
                "session_walker.py)\n  why not native: " + "; ".join(choice.reasons)
                + why_walker + f"\n{runs}")
    if choice.path == "panes":
        return (f"pipeline {pipeline.name!r}: pane path (the native path's firings in Spark "
                "SQL; the Python window function runs once per firing over the pane's "
                "elements)\n  why not native: " + "; ".join(choice.reasons) + f"\n{runs}")
    panes = pane_reasons(pipeline)
    why_not_panes = ("\n  why not the pane path (Python per firing): " + "; ".join(panes)
                     if panes else "")
    return (f"pipeline {pipeline.name!r}: general path (the semantic core's KeyDriver per key "
            "inside mapInArrow over key-sorted partitions)\n  why not native: "
            + "; ".join(choice.reasons) + why_not_panes + f"\n{runs}")
