"""The FLIP-9 trigger DSL: composable, non-purging triggers with an accumulation mode.

A DSL trigger answers "did I fire?" through ``_fired_on_*`` methods; only the *outermost*
trigger turns that into a ``TriggerResult`` and then restarts the leaf triggers of its current
phase ("since the last firing"). Children get a ``PrefixedContext`` so their state and timers
never collide. The accumulation mode of the outermost trigger wins over its children's; the
window operator applies it (discarding purges the pane after every firing).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.core.state import ReducingStateDescriptor, ValueStateDescriptor
from windowlib.core.time import duration_ms
from windowlib.core.triggers.base import PrefixedContext, Trigger, TriggerResult, local_clear
from windowlib.core.triggers.classic import (
    CountTrigger,
    EventTimeTrigger,
    ProcessingTimeTrigger,
)

ACCUMULATION_MODES = ("accumulating", "discarding", "accumulating_and_retracting")
_COUNT = ReducingStateDescriptor("count", operator.add)
_TARGET = ReducingStateDescriptor("target", min)
_DONE = ValueStateDescriptor("done")
_PASSED = ValueStateDescriptor("end-passed")


_DSL_METHOD = {k: f"_fired_on_{k}" for k in ("element", "event_time", "processing_time")}
_CLASSIC_METHOD = {k: f"on_{k}" for k in ("element", "event_time", "processing_time")}


def _child_fired(child: Trigger, kind: str, ctx: Any, *args: Any) -> bool:
    """Call a child (DSL or classic) and tell whether it fired."""
    if isinstance(child, DslTrigger):
        return getattr(child, _DSL_METHOD[kind])(*args, ctx)
    return getattr(child, _CLASSIC_METHOD[kind])(*args, ctx).is_fire


def _restart(child: Trigger, window: Any, ctx: Any) -> None:
    if isinstance(child, DslTrigger):
        child._restart(window, ctx)
    else:
        child.clear(window, ctx)


def _as_trigger(value: object, what: str) -> Trigger:
    if not isinstance(value, Trigger):
        raise DefinitionError(f"{what} must be a Trigger, got {type(value).__name__}",
                              code="ARGUMENT_INVALID")
    return value


@dataclass(frozen=True, repr=False)
class DslTrigger(Trigger):
    """Base of the DSL triggers. Subclasses implement the ``_fired_on_*`` methods."""

    _mode: str | None = field(default=None, kw_only=True)

    # --- mode --------------------------------------------------------------------------
    @property
    def accumulation(self) -> str:
        """The accumulation mode (``accumulating`` unless set)."""
        return self._mode or "accumulating"

    @property
    def accumulation_is_explicit(self) -> bool:
        return self._mode is not None

    def accumulating(self) -> DslTrigger:
        return replace(self, _mode="accumulating")

    def discarding(self) -> DslTrigger:
        return replace(self, _mode="discarding")

    def accumulating_and_retracting(self) -> DslTrigger:
        return replace(self, _mode="accumulating_and_retracting")

    # --- what subclasses implement --------------------------------------------------------
    def _fired_on_element(self, element, timestamp, window, ctx) -> bool:
        return False

    def _fired_on_event_time(self, time, window, ctx) -> bool:
        return False

    def _fired_on_processing_time(self, time, window, ctx) -> bool:
        return False

    def _restart(self, window, ctx) -> None:
        """Forget everything since the last firing (default: all state of this trigger)."""
        self.clear(window, ctx)

    # --- the Trigger contract, used when this trigger is the outermost one -----------------
    def _result(self, fired: bool, window, ctx) -> TriggerResult:
        if not fired:
            return TriggerResult.CONTINUE
        self._restart(window, ctx)
        return TriggerResult.FIRE

    def on_element(self, element, timestamp, window, ctx):
        return self._result(self._fired_on_element(element, timestamp, window, ctx), window, ctx)

    def on_event_time(self, time, window, ctx):
        return self._result(self._fired_on_event_time(time, window, ctx), window, ctx)

    def on_processing_time(self, time, window, ctx):
        return self._result(self._fired_on_processing_time(time, window, ctx), window, ctx)


@dataclass(frozen=True, repr=False)
class CountAtLeast(DslTrigger):
    """``CountTrigger.at_least(n)``: at least n elements arrived since the last firing."""

    count: int

    def _fired_on_element(self, element, timestamp, window, ctx) -> bool:
        state = ctx.get_state(_COUNT)
        state.add(1)
        return state.get() >= self.count

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(_COUNT)

    def clear(self, window, ctx) -> None:
        ctx.get_state(_COUNT).clear()

    def __repr__(self) -> str:
        return f"CountTrigger.at_least({self.count})"


@dataclass(frozen=True, repr=False)
class AfterFirstElement(DslTrigger):
    """Fires when event (or processing) time passes the first element's time + delay."""

    delay_ms: int
    event_time: bool = True

    def _fired_on_element(self, element, timestamp, window, ctx) -> bool:
        state = ctx.get_state(_TARGET)
        if state.get() is None:
            base = timestamp if self.event_time else ctx.current_processing_time
            target = base + self.delay_ms
            state.add(target)
            self._timer(ctx, target, True)
        return False

    def _timer(self, ctx, time: int, register: bool) -> None:
        if self.event_time:
            (ctx.register_event_time_timer if register else ctx.delete_event_time_timer)(time)
        else:
            (ctx.register_processing_time_timer if register
             else ctx.delete_processing_time_timer)(time)

    def _due(self, time: int, ctx) -> bool:
        target = ctx.get_state(_TARGET).get()
        return target is not None and time >= target

    def _fired_on_event_time(self, time, window, ctx) -> bool:
        return self.event_time and self._due(time, ctx)

    def _fired_on_processing_time(self, time, window, ctx) -> bool:
        return not self.event_time and self._due(time, ctx)

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(_TARGET)
        target = ctx.get_state(_TARGET).get()
        if target is not None:
            self._timer(ctx, target, True)

    def clear(self, window, ctx) -> None:
        state = ctx.get_state(_TARGET)
        target = state.get()
        if target is not None:
            self._timer(ctx, target, False)
            state.clear()

    def __repr__(self) -> str:
        domain = "EventTimeTrigger" if self.event_time else "ProcessingTimeTrigger"
        return f"{domain}.after_first_element({self.delay_ms})"


@dataclass(frozen=True, repr=False)
class _Composite(DslTrigger):
    children: tuple[Trigger, ...] = ()

    def _ctxs(self, ctx) -> list[PrefixedContext]:
        of = PrefixedContext.of
        return [of(ctx, str(i)) for i in range(len(self.children))]

    def _fire(self, kind: str, args: tuple, ctx) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fired_on_element(self, element, timestamp, window, ctx) -> bool:
        return self._fire("element", (element, timestamp, window), ctx)

    def _fired_on_event_time(self, time, window, ctx) -> bool:
        return self._fire("event_time", (time, window), ctx)

    def _fired_on_processing_time(self, time, window, ctx) -> bool:
        return self._fire("processing_time", (time, window), ctx)


    def can_merge(self) -> bool:
        return all(c.can_merge() for c in self.children)

    def on_merge(self, window, ctx) -> None:
        for child, cctx in zip(self.children, self._ctxs(ctx)):
            child.on_merge(window, cctx)

    def clear(self, window, ctx) -> None:
        for child, cctx in zip(self.children, self._ctxs(ctx)):
            child.clear(window, cctx)

    def nested_triggers(self) -> tuple[Trigger, ...]:
        return self.children

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.children))})"


@dataclass(frozen=True, repr=False)
class Any_(_Composite):
    """Fires when any child fires (every child sees every callback)."""

    def _fire(self, kind: str, args: tuple, ctx) -> bool:
        fired = False
        for child, cctx in zip(self.children, self._ctxs(ctx)):
            fired = _child_fired(child, kind, cctx, *args) or fired
        return fired

    def _restart(self, window, ctx) -> None:
        for child, cctx in zip(self.children, self._ctxs(ctx)):
            _restart(child, window, cctx)

    def __repr__(self) -> str:
        return f"Any({', '.join(map(repr, self.children))})"


@dataclass(frozen=True, repr=False)
class All(_Composite):
    """Fires once every child has fired since the last firing."""

    def _fire(self, kind: str, args: tuple, ctx) -> bool:
        state = ctx.get_state(_DONE)
        done = list(state.value() or [False] * len(self.children))
        for i, (child, cctx) in enumerate(zip(self.children, self._ctxs(ctx))):
            if not done[i] and _child_fired(child, kind, cctx, *args):
                done[i] = True
        state.update(done)
        return all(done)

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(ReducingStateDescriptor(
            _DONE.name, lambda a, b: [x or y for x, y in zip(a, b)]))
        super().on_merge(window, ctx)

    def clear(self, window, ctx) -> None:
        ctx.get_state(_DONE).clear()
        super().clear(window, ctx)

    def _restart(self, window, ctx) -> None:
        ctx.get_state(_DONE).clear()
        for child, cctx in zip(self.children, self._ctxs(ctx)):
            _restart(child, window, cctx)


def _count_at_least(count: int) -> CountAtLeast:
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise DefinitionError(f"CountTrigger.at_least needs a positive count, got {count!r}",
                              code="ARGUMENT_INVALID")
    return CountAtLeast(count)


def _after_first_element(event_time: bool):
    def build(delay: object = 0) -> AfterFirstElement:
        ms = duration_ms(delay, what="after_first_element delay")
        if ms < 0:
            raise DefinitionError("after_first_element delay must not be negative",
                                  code="ARGUMENT_INVALID")
        return AfterFirstElement(ms, event_time)
    return build


def any_of(*children: Trigger) -> Any_:
    """``Any(t1, t2, ...)``: fires when any child fires."""
    if not children:
        raise DefinitionError("Any needs at least one trigger", code="ARGUMENT_INVALID")
    return Any_(children=tuple(_as_trigger(c, "Any's argument") for c in children))


def all_of(*children: Trigger) -> All:
    """``All(t1, t2, ...)``: fires once every child has fired since the last firing."""
    if not children:
        raise DefinitionError("All needs at least one trigger", code="ARGUMENT_INVALID")
    return All(children=tuple(_as_trigger(c, "All's argument") for c in children))


local_clear(CountAtLeast, AfterFirstElement, _Composite, All)

# FLIP-9 entry points on Flink's trigger classes.
CountTrigger.at_least = staticmethod(_count_at_least)  # type: ignore[attr-defined]
EventTimeTrigger.after_first_element = staticmethod(_after_first_element(True))  # type: ignore[attr-defined]
ProcessingTimeTrigger.after_first_element = staticmethod(_after_first_element(False))  # type: ignore[attr-defined]
