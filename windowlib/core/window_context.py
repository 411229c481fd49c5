"""The ``TriggerContext`` (``triggers.base``) a ``KeyDriver`` hands its trigger (SPEC §3):
clocks, timers and per-window trigger state; ``window`` and ``record`` are set before every
callback."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from windowlib.core.records import EVENT, PROCESSING, WindowRecord
from windowlib.core.state import merge_into

if TYPE_CHECKING:
    from windowlib.core.driver import KeyDriver


class WindowTriggerContext:
    """The ``TriggerContext`` of one driver; ``window``/``record`` are set per callback."""

    __slots__ = ("clock", "driver", "event_timers", "merge_sources", "owner",
                 "prefixed_children", "record", "window")

    def __init__(self, driver: KeyDriver) -> None:
        self.driver = driver
        self.clock = driver.clock
        self.event_timers = driver.timers[EVENT]
        self.prefixed_children: dict = {}  # PrefixedContext.of reuses children through it
        self.window: Any = None
        self.record: WindowRecord | None = None
        self.merge_sources: list[dict] = []
        self.owner = "trigger"

    @property
    def current_watermark(self) -> int:
        return self.clock.watermark

    @property
    def current_processing_time(self) -> int:
        return self.clock.processing_time

    def register_event_time_timer(self, time: int) -> None:
        owners = self.event_timers.get((time, self.window))
        if owners is not None and "trigger" in owners:
            return  # already registered (the common case for every element after the first)
        self.driver.timer_op(EVENT, time, "trigger", True, self.window, self.record)

    def register_processing_time_timer(self, time: int) -> None:
        self.driver.timer_op(PROCESSING, time, "trigger", True, self.window, self.record)

    def delete_event_time_timer(self, time: int) -> None:
        self.driver.timer_op(EVENT, time, "trigger", False, self.window, self.record)

    def delete_processing_time_timer(self, time: int) -> None:
        self.driver.timer_op(PROCESSING, time, "trigger", False, self.window, self.record)

    def timer_op(self, domain: str, time: int, owner: str, register: bool) -> None:
        self.driver.timer_op(domain, time, owner, register, self.window, self.record)

    def get_state(self, descriptor: Any) -> Any:
        return descriptor.handle(self.record.trigger_state)

    def merge_partitioned_state(self, descriptor: Any) -> None:
        merge_into(self.record.trigger_state, self.merge_sources, descriptor)
