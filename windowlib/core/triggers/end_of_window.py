"""``after_end_of_window()`` (FLIP-9): one ON_TIME firing when the clock passes the window's
end, with optional early and late phases (``with_early_trigger``/``with_late_trigger``);
installed as ``EventTimeTrigger.after_end_of_window`` and
``ProcessingTimeTrigger.after_end_of_window``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from windowlib.core.errors import DefinitionError
from windowlib.core.triggers.base import PrefixedContext, Trigger, local_clear
from windowlib.core.triggers.classic import EventTimeTrigger, ProcessingTimeTrigger
from windowlib.core.triggers.dsl import _PASSED, DslTrigger, _as_trigger, _child_fired, _restart


@dataclass(frozen=True, repr=False)
class AfterEndOfWindow(DslTrigger):
    """One ON_TIME firing when the clock passes the window's end, with optional early and
    late phases. Event time by default; the processing-time variant has no late phase.

    Without a late trigger, every late (and not dropped) element fires, as Flink's
    ``EventTimeTrigger`` does. ``fire_empty_on_time`` makes the ON_TIME pane fire even when
    it is empty (Beam's FIRE_ALWAYS), so consumers can see completeness.
    """

    early: Trigger | None = None
    late: Trigger | None = None
    event_time: bool = True
    fire_empty_on_time: bool = False

    def with_early_trigger(self, trigger: Trigger) -> AfterEndOfWindow:
        return replace(self, early=_as_trigger(trigger, "the early trigger"))

    def with_late_trigger(self, trigger: Trigger) -> AfterEndOfWindow:
        if not self.event_time:
            raise DefinitionError("processing-time after_end_of_window has no late phase",
                                  code="ARGUMENT_INVALID")
        return replace(self, late=_as_trigger(trigger, "the late trigger"))

    # phase: the window's end has passed once this flag is set (or the clock is past it).
    def _passed(self, window, ctx) -> bool:
        state = ctx.get_state(_PASSED)
        if state.value():
            return True
        now = ctx.current_watermark if self.event_time else ctx.current_processing_time
        if window.max_timestamp <= now:
            state.update(True)
            return True
        return False

    def _end_timer(self, window, ctx, register: bool) -> None:
        t = window.max_timestamp
        if self.event_time:
            (ctx.register_event_time_timer if register else ctx.delete_event_time_timer)(t)
        else:
            (ctx.register_processing_time_timer if register
             else ctx.delete_processing_time_timer)(t)

    def _early_ctx(self, ctx) -> PrefixedContext:
        return PrefixedContext.of(ctx, "early")

    def _late_ctx(self, ctx) -> PrefixedContext:
        return PrefixedContext.of(ctx, "late")

    def _fired_on_element(self, element, timestamp, window, ctx) -> bool:
        if self._passed(window, ctx):
            if self.late is None:
                return True
            return _child_fired(self.late, "element", self._late_ctx(ctx),
                                element, timestamp, window)
        self._end_timer(window, ctx, True)
        if self.early is None:
            return False
        return _child_fired(self.early, "element", self._early_ctx(ctx),
                            element, timestamp, window)

    def _on_time(self, kind: str, time: int, window, ctx) -> bool:
        state = ctx.get_state(_PASSED)
        passed = state.value()
        domain_matches = (kind == "event_time") == self.event_time
        if not passed and domain_matches and time >= window.max_timestamp:
            state.update(True)
            if self.early is not None:
                self.early.clear(window, self._early_ctx(ctx))
            return True
        if not passed:
            return self.early is not None and _child_fired(
                self.early, kind, self._early_ctx(ctx), time, window)
        return self.late is not None and _child_fired(
            self.late, kind, self._late_ctx(ctx), time, window)

    def _fired_on_event_time(self, time, window, ctx) -> bool:
        return self._on_time("event_time", time, window, ctx)

    def _fired_on_processing_time(self, time, window, ctx) -> bool:
        return self._on_time("processing_time", time, window, ctx)

    def _restart(self, window, ctx) -> None:
        if ctx.get_state(_PASSED).value():
            if self.late is not None:
                _restart(self.late, window, self._late_ctx(ctx))
        elif self.early is not None:
            _restart(self.early, window, self._early_ctx(ctx))

    def can_merge(self) -> bool:
        return all(c.can_merge() for c in (self.early, self.late) if c is not None)

    def on_merge(self, window, ctx) -> None:
        # The merged window is a new window: its phase follows the clock.
        ctx.get_state(_PASSED).clear()
        if not self._passed(window, ctx):
            self._end_timer(window, ctx, True)
        if self.early is not None:
            self.early.on_merge(window, self._early_ctx(ctx))
        if self.late is not None:
            self.late.on_merge(window, self._late_ctx(ctx))

    def nested_triggers(self) -> tuple[Trigger, ...]:
        return tuple(c for c in (self.early, self.late) if c is not None)

    def clear(self, window, ctx) -> None:
        self._end_timer(window, ctx, False)
        ctx.get_state(_PASSED).clear()
        if self.early is not None:
            self.early.clear(window, self._early_ctx(ctx))
        if self.late is not None:
            self.late.clear(window, self._late_ctx(ctx))

    def __repr__(self) -> str:
        domain = "EventTimeTrigger" if self.event_time else "ProcessingTimeTrigger"
        out = f"{domain}.after_end_of_window()"
        if self.early is not None:
            out += f".with_early_trigger({self.early!r})"
        if self.late is not None:
            out += f".with_late_trigger({self.late!r})"
        return out


def _after_end_of_window(event_time: bool):
    def build(fire_empty_on_time: bool = False) -> AfterEndOfWindow:
        return AfterEndOfWindow(event_time=event_time, fire_empty_on_time=fire_empty_on_time)
    return build


local_clear(AfterEndOfWindow)
EventTimeTrigger.after_end_of_window = staticmethod(_after_end_of_window(True))  # type: ignore[attr-defined]
ProcessingTimeTrigger.after_end_of_window = staticmethod(_after_end_of_window(False))  # type: ignore[attr-defined]
