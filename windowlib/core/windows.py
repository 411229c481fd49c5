"""Windows: half-open ``TimeWindow(start, end)`` and the per-key ``GlobalWindow``.

Invariant: ``max_timestamp`` is the last millisecond that belongs to a window (``end - 1`` for
time windows, ``MAX_TS`` for the global window). Windows are immutable, hashable and ordered
(global after every time window) so timers and outputs have a deterministic order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from windowlib.core.time import MAX_TS


class TimeWindow(NamedTuple):
    """The half-open interval ``[start, end)`` of milliseconds.

    A named tuple so that hashing and comparison (on the hot path of every engine) run in C;
    windows order by ``(start, end)``.
    """

    start: int
    end: int

    @property
    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """Flink's merge rule: overlapping *or touching* windows intersect."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window that contains both."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    def sort_key(self) -> tuple[int, int]:
        return (self.start, self.end)

    def to_data(self) -> list[int]:
        return [self.start, self.end]

    def __repr__(self) -> str:
        return f"TimeWindow({self.start}, {self.end})"


#: ``time_window_of((start, end))`` is ``TimeWindow(start, end)`` built in C, for loops that
#: make one window per firing from integer columns (no Python frame per window).
time_window_of = partial(tuple.__new__, TimeWindow)


@dataclass(frozen=True, slots=True, order=True)
class GlobalWindow:
    """The single window of a key under ``GlobalWindows``; it never ends."""

    @property
    def max_timestamp(self) -> int:
        return MAX_TS

    @property
    def start(self) -> None:
        return None

    @property
    def end(self) -> None:
        return None

    def sort_key(self) -> tuple[int, int]:
        return (MAX_TS, MAX_TS)

    def to_data(self) -> None:
        return None

    def __repr__(self) -> str:
        return "GlobalWindow()"


GLOBAL_WINDOW = GlobalWindow()

Window = TimeWindow | GlobalWindow


def window_from_data(data: list[int] | None) -> Window:
    """Inverse of ``to_data`` (snapshots store windows as ``[start, end]`` or null)."""
    return GLOBAL_WINDOW if data is None else TimeWindow(int(data[0]), int(data[1]))


def window_start(ts_ms: int, size_ms: int, offset_ms: int = 0) -> int:
    """Start of the aligned window of ``size_ms`` containing ``ts_ms`` (the one alignment rule).

    Flink's ``TimeWindow.getWindowStartWithOffset``, written with floor modulo so that it is
    also right for negative timestamps and offsets: the result ``s`` satisfies
    ``s <= ts < s + size`` and ``s ≡ offset (mod size)``.
    """
    return ts_ms - (ts_ms - offset_ms) % size_ms
