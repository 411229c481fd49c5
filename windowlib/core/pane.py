"""Pane metadata (FLIP-2 / Beam's PaneInfo) and the pane-timing rule.

Timing rule (the only place it is written): a firing is
- ``LATE`` once the window has emitted its ON_TIME pane;
- ``ON_TIME`` if it is caused by the window's clock (watermark for event-time windows,
  processing time for processing-time windows) reaching ``max_timestamp`` — i.e. a timer of
  that domain with ``time >= max_timestamp`` — and no ON_TIME pane was emitted yet;
- ``EARLY`` if the clock is still below ``max_timestamp`` (for a timer-caused firing the
  clock is the timer's time: the watermark passes each timer in order);
- ``LATE`` otherwise (e.g. an element arriving after the window's end, within the lateness).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Timing(enum.Enum):
    EARLY = "EARLY"
    ON_TIME = "ON_TIME"
    LATE = "LATE"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class PaneInfo:
    """What a window function learns about the firing it is called for."""

    index: int
    timing: Timing
    is_first: bool
    is_last: bool


_PANES: dict[tuple[int, str, bool], PaneInfo] = {}


def pane_info(index: int, timing: Timing, is_last: bool) -> PaneInfo:
    """``PaneInfo(index, timing, index == 0, is_last)``, shared for small indices (immutable)."""
    key = (index, timing._value_, is_last)  # enum hashing is slow; its value is a str
    pane = _PANES.get(key)
    if pane is None:
        pane = PaneInfo(index, timing, index == 0, is_last)
        if index < 64:
            _PANES[key] = pane
    return pane


def pane_timing(max_timestamp: int, clock: int, on_time_emitted: bool,
                caused_by_end_timer: bool) -> Timing:
    """Classify a firing; see the module docstring."""
    if on_time_emitted:
        return Timing.LATE
    if caused_by_end_timer:
        return Timing.ON_TIME
    if clock < max_timestamp:
        return Timing.EARLY
    return Timing.LATE
