"""``PipelineLogic``: everything the drivers need, resolved once from a ``Pipeline``; and
``DriverPlan``, the part of it the per-element hot path reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from windowlib.core.assigners import WindowAssigner
from windowlib.core.elements import one_window_element, process_element
from windowlib.core.errors import DefinitionError
from windowlib.core.evictors import Evictor
from windowlib.core.functions import FunctionSpec
from windowlib.core.runner import FunctionRunner
from windowlib.core.triggers import EventTimeTrigger, Trigger
from windowlib.core.triggers.end_of_window import AfterEndOfWindow

if TYPE_CHECKING:
    from windowlib.core.pipeline import Pipeline


@dataclass
class PipelineLogic:
    """Everything a ``KeyDriver`` needs, resolved once from a ``Pipeline``."""

    pipeline: Pipeline
    key_columns: tuple[str, ...]
    key_column_set: frozenset[str]
    timestamp: str
    assigner: WindowAssigner
    trigger: Trigger
    evictor: Evictor | None
    runner: FunctionRunner
    allowed_lateness_ms: int
    accumulation: str
    event_time: bool
    window_domain: str
    merging: bool
    fire_empty_on_time: bool
    max_future_skew_ms: int
    finite_columns: tuple[str, ...] = ()   # read by sum/mean/min/max: NaN/±inf are rejects

    @property
    def retracting(self) -> bool:
        return self.accumulation == "accumulating_and_retracting"

    @classmethod
    def build(cls, p: Pipeline) -> PipelineLogic:
        if p.window_assigner is None:
            raise DefinitionError(f"pipeline {p.name!r} has no window; call window(...), "
                                  "window_all(...) or count_window(...)", code="NO_WINDOW")
        if p.function is None:
            raise DefinitionError(
                f"pipeline {p.name!r} has no window function; call aggregate, reduce, fold, "
                "apply or process", code="NO_WINDOW_FUNCTION")
        trigger = p.effective_trigger
        assigner = p.window_assigner
        return cls(
            pipeline=p,
            key_columns=p.key_columns,
            key_column_set=frozenset(p.key_columns),
            timestamp=p.timestamp,
            assigner=assigner,
            trigger=trigger,
            evictor=p.window_evictor,
            runner=FunctionRunner(p.function, buffered=p.window_evictor is not None),
            allowed_lateness_ms=p.allowed_lateness_ms if assigner.is_event_time else 0,
            accumulation=p.effective_accumulation,
            event_time=assigner.is_event_time,
            window_domain="event" if assigner.is_event_time else "processing",
            merging=assigner.is_merging,
            fire_empty_on_time=isinstance(trigger, AfterEndOfWindow) and
            trigger.fire_empty_on_time,
            max_future_skew_ms=p.max_future_skew_ms,
            finite_columns=_finite_columns(p.function),
        )

    def key_argument(self, key: tuple) -> Any:
        """The key as window functions see it: a value, a tuple, or None (non-keyed)."""
        if not self.key_columns:
            return None
        return key[0] if len(key) == 1 else key


def _finite_columns(spec: FunctionSpec | None) -> tuple[str, ...]:
    """The columns numeric declarative aggregates read (a NaN or ±inf there is a reject)."""
    if spec is None or spec.kind != "declarative":
        return ()
    return tuple(dict.fromkeys(a.column for a in spec.fn.aggregates
                               if a.kind in ("sum", "mean", "min", "max")))


class DriverPlan:
    """What ``KeyDriver``'s hot paths read from a ``PipelineLogic``, resolved once per logic
    object (bound methods and flags instead of attribute chains per element)."""

    __slots__ = ("assign", "discarding", "domain", "element_step", "end_of_window_only",
                 "event_time", "event_time_trigger", "lateness_ms", "logic", "needs_context",
                 "on_element", "on_event_time", "on_processing_time", "retracting",
                 "runner_add", "runner_clear", "skip_trigger_clear")

    def __init__(self, logic: PipelineLogic) -> None:
        self.logic = logic
        self.domain = logic.window_domain
        self.event_time = logic.event_time
        self.lateness_ms = logic.allowed_lateness_ms
        self.retracting = logic.retracting
        self.assign = logic.assigner.assign_windows
        self.discarding = logic.accumulation == "discarding"
        trigger = logic.trigger
        self.on_element = trigger.on_element
        self.on_event_time = trigger.on_event_time
        self.on_processing_time = trigger.on_processing_time
        # At cleanup the driver drops the window's trigger state and timers itself; a trigger
        # whose clear() touches nothing else (built-ins say so) need not be called then.
        self.skip_trigger_clear = bool(trigger.clear_is_local())
        runner = logic.runner
        self.runner_add = runner.add
        self.runner_clear = runner.clear if runner.needs_clear else None
        # a firing builds the function's ``Context`` only when something reads it
        self.needs_context = runner.uses_context or logic.evictor is not None
        # the element step (core.elements)
        self.element_step = one_window_element if not logic.merging and \
            logic.assigner.one_window_per_interval() else process_element
        self.event_time_trigger = type(trigger) is EventTimeTrigger and logic.event_time
        # The common case KeyDriver._end_of_window runs in one step: the classic trigger's
        # end-of-window timer is also the cleanup timer (no lateness), and the final pane's
        # firing reads no context, evicts nothing, retracts nothing and merges nothing.
        self.end_of_window_only = (self.event_time_trigger and self.lateness_ms == 0
                                   and logic.evictor is None and not self.needs_context
                                   and not self.retracting and not logic.merging
                                   and self.skip_trigger_clear and self.runner_clear is None)


_PLANS: dict[int, DriverPlan] = {}


def driver_plan(logic: PipelineLogic) -> DriverPlan:
    """The cached ``DriverPlan`` of ``logic``."""
    plan = _PLANS.get(id(logic))
    if plan is None or plan.logic is not logic:
        if len(_PLANS) >= 256:
            _PLANS.clear()
        plan = _PLANS[id(logic)] = DriverPlan(logic)  # the plan keeps logic alive: ids stay unique
    return plan
