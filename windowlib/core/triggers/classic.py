"""Flink's built-in triggers, with Flink's semantics.

Each is frozen configuration; per-window memory lives in partitioned state. Builders follow
Flink's names (``EventTimeTrigger.create()``, ``CountTrigger.of(n)``...). The FLIP-9 DSL entry
points (``CountTrigger.at_least``, ``EventTimeTrigger.after_end_of_window``...) are attached in
``windowlib.core.triggers.dsl``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.core.state import ReducingStateDescriptor, ValueStateDescriptor
from windowlib.core.time import MAX_TS, duration_ms
from windowlib.core.triggers.base import Trigger, TriggerResult, local_clear

CONTINUE, FIRE = TriggerResult.CONTINUE, TriggerResult.FIRE
_COUNT = ReducingStateDescriptor("count", operator.add)
_FIRE_AT = ReducingStateDescriptor("fire-time", min)
_LAST = ValueStateDescriptor("last-element")


def _positive(value: object, what: str) -> int:
    ms = duration_ms(value, what=what) if not isinstance(value, int) else value
    if ms <= 0:
        raise DefinitionError(f"{what} must be positive, got {value!r}", code="ARGUMENT_INVALID")
    return ms


@dataclass(frozen=True, repr=False)
class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end; a late, kept element fires at once."""

    @classmethod
    def create(cls) -> EventTimeTrigger:
        return cls()

    def on_element(self, element, timestamp, window, ctx):
        end = window.max_timestamp
        if end <= ctx.current_watermark:
            return FIRE
        ctx.register_event_time_timer(end)
        return CONTINUE

    def on_event_time(self, time, window, ctx):
        return FIRE if time == window.max_timestamp else CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        if window.max_timestamp > ctx.current_watermark:
            ctx.register_event_time_timer(window.max_timestamp)

    def clear(self, window, ctx) -> None:
        ctx.delete_event_time_timer(window.max_timestamp)


@dataclass(frozen=True, repr=False)
class ProcessingTimeTrigger(Trigger):
    """Fires when processing time passes the window's end."""

    @classmethod
    def create(cls) -> ProcessingTimeTrigger:
        return cls()

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_processing_time_timer(window.max_timestamp)
        return CONTINUE

    def on_processing_time(self, time, window, ctx):
        return FIRE if time == window.max_timestamp else CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        if window.max_timestamp > ctx.current_processing_time:
            ctx.register_processing_time_timer(window.max_timestamp)

    def clear(self, window, ctx) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp)


@dataclass(frozen=True, repr=False)
class CountTrigger(Trigger):
    """Fires when the pane's element count reaches ``count``, then counts from zero."""

    count: int

    @classmethod
    def of(cls, count: int) -> CountTrigger:
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            raise DefinitionError(f"CountTrigger needs a positive count, got {count!r}",
                                  code="ARGUMENT_INVALID")
        return cls(count)

    def on_element(self, element, timestamp, window, ctx):
        state = ctx.get_state(_COUNT)
        state.add(1)
        if state.get() >= self.count:
            state.clear()
            return FIRE
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(_COUNT)

    def clear(self, window, ctx) -> None:
        ctx.get_state(_COUNT).clear()

    def __repr__(self) -> str:
        return f"CountTrigger.of({self.count})"


@dataclass(frozen=True, repr=False)
class PurgingTrigger(Trigger):
    """Turns every FIRE of the nested trigger into FIRE_AND_PURGE."""

    nested: Trigger

    @classmethod
    def of(cls, nested: Trigger) -> PurgingTrigger:
        if not isinstance(nested, Trigger):
            raise DefinitionError("PurgingTrigger.of needs a Trigger", code="ARGUMENT_INVALID")
        return cls(nested)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire else result

    def on_element(self, element, timestamp, window, ctx):
        return self._purging(self.nested.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time, window, ctx):
        return self._purging(self.nested.on_event_time(time, window, ctx))

    def on_processing_time(self, time, window, ctx):
        return self._purging(self.nested.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested.can_merge()

    def on_merge(self, window, ctx) -> None:
        self.nested.on_merge(window, ctx)

    def clear(self, window, ctx) -> None:
        self.nested.clear(window, ctx)

    def nested_triggers(self) -> tuple[Trigger, ...]:
        return (self.nested,)

    def __repr__(self) -> str:
        return f"PurgingTrigger.of({self.nested!r})"


def _aligned_next(time: int, interval: int) -> int:
    """The first multiple of ``interval`` strictly after the aligned start of ``time``."""
    return time - time % interval + interval


@dataclass(frozen=True, repr=False)
class ContinuousEventTimeTrigger(Trigger):
    """Fires every ``interval_ms`` of event time (aligned to multiples of the interval, at
    most at the window's end) and once the watermark passes the window's end."""

    interval_ms: int

    @classmethod
    def of(cls, interval: object) -> ContinuousEventTimeTrigger:
        return cls(_positive(interval, "ContinuousEventTimeTrigger interval"))

    def _register(self, time: int, window, ctx) -> None:
        at = min(time, window.max_timestamp)
        ctx.get_state(_FIRE_AT).add(at)
        ctx.register_event_time_timer(at)

    def on_element(self, element, timestamp, window, ctx):
        if window.max_timestamp <= ctx.current_watermark:
            return FIRE
        ctx.register_event_time_timer(window.max_timestamp)
        if ctx.get_state(_FIRE_AT).get() is None:
            self._register(_aligned_next(timestamp, self.interval_ms), window, ctx)
        return CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp:
            return FIRE
        state = ctx.get_state(_FIRE_AT)
        if state.get() == time:
            state.clear()
            # At the end of input (watermark +inf) fire once more and stop re-arming.
            if ctx.current_watermark < MAX_TS:
                self._register(time + self.interval_ms, window, ctx)
            return FIRE
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(_FIRE_AT)
        at = ctx.get_state(_FIRE_AT).get()
        if at is not None:
            ctx.register_event_time_timer(at)
        if window.max_timestamp > ctx.current_watermark:
            ctx.register_event_time_timer(window.max_timestamp)

    def clear(self, window, ctx) -> None:
        state = ctx.get_state(_FIRE_AT)
        at = state.get()
        if at is not None:
            ctx.delete_event_time_timer(at)
            state.clear()
        ctx.delete_event_time_timer(window.max_timestamp)

    def __repr__(self) -> str:
        return f"ContinuousEventTimeTrigger.of({self.interval_ms})"


@dataclass(frozen=True, repr=False)
class ContinuousProcessingTimeTrigger(Trigger):
    """Fires every ``interval_ms`` of processing time (aligned), at most at the window's end."""

    interval_ms: int

    @classmethod
    def of(cls, interval: object) -> ContinuousProcessingTimeTrigger:
        return cls(_positive(interval, "ContinuousProcessingTimeTrigger interval"))

    def _register(self, time: int, window, ctx) -> None:
        at = min(time, window.max_timestamp)
        ctx.get_state(_FIRE_AT).add(at)
        ctx.register_processing_time_timer(at)

    def on_element(self, element, timestamp, window, ctx):
        if ctx.get_state(_FIRE_AT).get() is None:
            now = ctx.current_processing_time
            self._register(_aligned_next(now, self.interval_ms), window, ctx)
        return CONTINUE

    def on_processing_time(self, time, window, ctx):
        state = ctx.get_state(_FIRE_AT)
        if state.get() == time:
            state.clear()
            if ctx.current_processing_time < MAX_TS and time < window.max_timestamp:
                self._register(time + self.interval_ms, window, ctx)
            return FIRE
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(_FIRE_AT)
        at = ctx.get_state(_FIRE_AT).get()
        if at is not None:
            ctx.register_processing_time_timer(at)

    def clear(self, window, ctx) -> None:
        state = ctx.get_state(_FIRE_AT)
        at = state.get()
        if at is not None:
            ctx.delete_processing_time_timer(at)
            state.clear()

    def __repr__(self) -> str:
        return f"ContinuousProcessingTimeTrigger.of({self.interval_ms})"


@dataclass(frozen=True, repr=False)
class DeltaTrigger(Trigger):
    """Fires when ``delta_fn(last_fired_element, element) > threshold`` (Flink's rule); the
    first element only becomes the reference point."""

    threshold: float
    delta_fn: Callable[[Any, Any], float]

    @classmethod
    def of(cls, threshold: float, delta_fn: Callable[[Any, Any], float]) -> DeltaTrigger:
        if not callable(delta_fn):
            raise DefinitionError("DeltaTrigger.of needs a delta function",
                                  code="ARGUMENT_INVALID")
        return cls(threshold, delta_fn)

    def on_element(self, element, timestamp, window, ctx):
        state = ctx.get_state(_LAST)
        last = state.value()
        if last is None:
            state.update(dict(element))
            return CONTINUE
        if self.delta_fn(last, element) > self.threshold:
            state.update(dict(element))
            return FIRE
        return CONTINUE

    def clear(self, window, ctx) -> None:
        ctx.get_state(_LAST).clear()

    def __repr__(self) -> str:
        return f"DeltaTrigger.of({self.threshold!r}, ...)"


@dataclass(frozen=True, repr=False)
class NeverTrigger(Trigger):
    """Never fires (the default of ``GlobalWindows``)."""

    @classmethod
    def create(cls) -> NeverTrigger:
        return cls()

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        return None


local_clear(EventTimeTrigger, ProcessingTimeTrigger, CountTrigger, PurgingTrigger,
            ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, DeltaTrigger)
