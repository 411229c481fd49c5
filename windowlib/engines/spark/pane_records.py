"""The pane walker's records of one key (``pane_walker.py``): what a ``Context`` reads, each
live window's pane and counters, and where the walk is."""

from __future__ import annotations

from typing import Any

from windowlib.core.evictors import TimestampedValue

__all__ = ["KeyScope", "PaneWindow", "WalkPosition"]


class KeyScope:
    """What a ``Context`` reads from its driver: the clocks, the key's global state, the
    pipeline (side outputs are conformed by its runner) and where side outputs go."""

    __slots__ = ("clock", "global_state", "key_arg", "logic", "sink")

    def __init__(self, walker: Any, key_arg: Any) -> None:
        self.clock, self.logic, self.sink = walker.clock, walker.logic, walker.sink
        self.global_state: dict = {}
        self.key_arg = key_arg


class PaneWindow:
    """One live window of the key: its pane, counters and ``window_state`` (``fn_state``)."""

    __slots__ = ("buffer", "early", "fire_at", "fn_state", "index", "late", "on_time", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.buffer: list[TimestampedValue] = []
        self.fn_state: dict = {}
        self.on_time = self.early = self.late = self.index = 0
        self.fire_at: int | None = None     # a continuous trigger's next firing time


class WalkPosition:
    """Where the walk is (the tagged rows' ordering columns)."""

    __slots__ = ("b", "phase", "sub")

    def __init__(self) -> None:
        self.b = self.phase = self.sub = 0
