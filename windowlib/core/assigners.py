"""Window assigners (SPEC §2): which windows an element belongs to.

Invariants:

* An assigner is frozen configuration: constructing it validates and normalises every duration
  to integer milliseconds; afterwards it holds no runtime state.
* ``assign_windows`` returns windows ascending by start. Event-time assigners read the
  element's event time ``ts_ms``; processing-time assigners read ``processing_time_ms`` (the
  bundle's processing time ``P_b``).
* Aligned windows (tumbling, sliding) get their start from ``windows.window_start`` — the one
  alignment rule, correct for negative timestamps and offsets such as ``Time.hours(-8)``.
* Windows are half-open: a timestamp equal to a window's ``end`` belongs to the next window.
* Session windows merge when they overlap *or touch* (``TimeWindow.intersects``, Flink's rule),
  transitively; ``merge_windows`` reports only groups of two or more windows.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from windowlib.core.describe import describe_callable
from windowlib.core.errors import DefinitionError, ExecutionError
from windowlib.core.time import duration_ms, format_ts
from windowlib.core.windows import GLOBAL_WINDOW, TimeWindow, Window, window_start

if TYPE_CHECKING:
    from windowlib.core.triggers import Trigger

__all__ = [
    "EventTimeSessionWindows",
    "GlobalWindows",
    "ProcessingTimeSessionWindows",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "WindowAssigner",
    "is_processing_time",
]


class WindowAssigner(abc.ABC):
    """Assigns each element to zero or more windows; immutable configuration.

    Class-level facts the driver reads:

    - ``is_event_time``: ``True`` if windows follow event time (and are closed by the
      watermark); ``False`` for processing-time assigners.
    - ``is_merging``: ``True`` for session windows; the driver then calls ``merge_windows``
      after adding each element's window to the key's window set.
    - ``size_ms``: window length for tumbling/sliding assigners, ``None`` otherwise.
    """

    is_event_time: bool
    is_merging: bool = False
    size_ms: int | None

    @abc.abstractmethod
    def assign_windows(self, element: dict, ts_ms: int, processing_time_ms: int
                       ) -> list[Window]:
        """Windows for one element, ascending by start.

        Called once per element (never mutates it). Event-time assigners use ``ts_ms``,
        processing-time ones ``processing_time_ms`` (the bundle's processing time). Returns a
        new list the caller may keep.
        """

    @abc.abstractmethod
    def default_trigger(self) -> Trigger:
        """The trigger used when the pipeline does not call ``trigger(...)``."""

    @abc.abstractmethod
    def describe(self) -> dict:
        """Canonical, JSON-able configuration (``{"type": ..., ...}``) for fingerprints and docs."""

    def merge_windows(self, windows: list[TimeWindow]
                      ) -> list[tuple[TimeWindow, list[TimeWindow]]]:
        """Merging assigners only: ``(cover, members)`` for each group of >= 2 intersecting windows.

        Windows are sorted by start and grouped transitively by ``TimeWindow.intersects``
        (touching counts), as Flink's ``TimeWindow.mergeWindows``. ``windows`` is not mutated.
        Non-merging assigners raise ``NotImplementedError``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not merge windows")

    def one_window_per_interval(self) -> bool:
        """Whether every element gets exactly one window: the one whose ``[start, end)`` holds
        its event time (the driver then reuses a key's last window for the key's next elements
        inside it instead of calling ``assign_windows``)."""
        return False


def is_processing_time(assigner: WindowAssigner) -> bool:
    """``True`` if ``assigner`` assigns by processing time."""
    return not assigner.is_event_time


def _time_trigger(is_event_time: bool) -> Trigger:
    from windowlib.core.triggers import EventTimeTrigger, ProcessingTimeTrigger

    return EventTimeTrigger.create() if is_event_time else ProcessingTimeTrigger.create()


def _positive_ms(value: object, what: str, code: str) -> int:
    ms = duration_ms(value, what=what)
    if ms <= 0:
        raise DefinitionError(f"{what} must be positive, got {value!r}", code=code)
    return ms


def _offset_ms(value: object, period_ms: int, period: str) -> int:
    ms = duration_ms(value, what="window offset")
    if abs(ms) >= period_ms:
        raise DefinitionError(
            f"window offset must satisfy abs(offset) < {period} ({period_ms} ms), got {value!r}",
            code="OFFSET_INVALID")
    return ms


# --- tumbling -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _TumblingWindows(WindowAssigner):
    size_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        size = _positive_ms(self.size_ms, "window size", "SIZE_NOT_POSITIVE")
        object.__setattr__(self, "size_ms", size)
        object.__setattr__(self, "offset_ms", _offset_ms(self.offset_ms, size, "size"))

    @classmethod
    def of(cls, size: object, offset: object = 0):
        """Windows of ``size`` aligned to the epoch shifted by ``offset`` (may be negative)."""
        return cls(size, offset)

    def assign_windows(self, element: dict, ts_ms: int, processing_time_ms: int
                       ) -> list[Window]:
        t = ts_ms if self.is_event_time else processing_time_ms
        start = window_start(t, self.size_ms, self.offset_ms)
        return [TimeWindow(start, start + self.size_ms)]

    def one_window_per_interval(self) -> bool:
        # not for a subclass that assigns differently
        return self.is_event_time and \
            type(self).assign_windows is _TumblingWindows.assign_windows

    def default_trigger(self) -> Trigger:
        return _time_trigger(self.is_event_time)

    def describe(self) -> dict:
        return {"type": type(self).__name__, "size_ms": self.size_ms,
                "offset_ms": self.offset_ms}


@dataclass(frozen=True)
class TumblingEventTimeWindows(_TumblingWindows):
    """Fixed-size, non-overlapping event-time windows ``[start, start + size)``."""

    is_event_time: ClassVar[bool] = True


@dataclass(frozen=True)
class TumblingProcessingTimeWindows(_TumblingWindows):
    """Fixed-size, non-overlapping windows over the bundle's processing time."""

    is_event_time: ClassVar[bool] = False


# --- sliding --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _SlidingWindows(WindowAssigner):
    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        size = _positive_ms(self.size_ms, "window size", "SIZE_NOT_POSITIVE")
        slide = duration_ms(self.slide_ms, what="window slide")
        if slide <= 0 or slide > size:
            raise DefinitionError(
                f"window slide must satisfy 0 < slide <= size ({size} ms), got {self.slide_ms!r}",
                code="SLIDE_INVALID")
        object.__setattr__(self, "size_ms", size)
        object.__setattr__(self, "slide_ms", slide)
        object.__setattr__(self, "offset_ms", _offset_ms(self.offset_ms, slide, "slide"))

    @classmethod
    def of(cls, size: object, slide: object, offset: object = 0):
        """Windows of ``size`` starting every ``slide`` (shifted by ``offset``)."""
        return cls(size, slide, offset)

    def assign_windows(self, element: dict, ts_ms: int, processing_time_ms: int
                       ) -> list[Window]:
        t = ts_ms if self.is_event_time else processing_time_ms
        start = window_start(t, self.slide_ms, self.offset_ms)
        out = []
        while start > t - self.size_ms:
            out.append(TimeWindow(start, start + self.size_ms))
            start -= self.slide_ms
        out.reverse()
        return out

    def default_trigger(self) -> Trigger:
        return _time_trigger(self.is_event_time)

    def describe(self) -> dict:
        return {"type": type(self).__name__, "size_ms": self.size_ms,
                "slide_ms": self.slide_ms, "offset_ms": self.offset_ms}


@dataclass(frozen=True)
class SlidingEventTimeWindows(_SlidingWindows):
    """Overlapping event-time windows of ``size`` starting every ``slide``."""

    is_event_time: ClassVar[bool] = True


@dataclass(frozen=True)
class SlidingProcessingTimeWindows(_SlidingWindows):
    """Overlapping windows of ``size`` over the bundle's processing time."""

    is_event_time: ClassVar[bool] = False


# --- sessions -------------------------------------------------------------------------------

def _merge_intersecting(windows: list[TimeWindow]
                        ) -> list[tuple[TimeWindow, list[TimeWindow]]]:
    groups: list[tuple[TimeWindow, list[TimeWindow]]] = []
    for w in sorted(windows, key=TimeWindow.sort_key):
        if groups and groups[-1][0].intersects(w):
            cover, members = groups[-1]
            members.append(w)
            groups[-1] = (cover.cover(w), members)
        else:
            groups.append((w, [w]))
    return [(cover, members) for cover, members in groups if len(members) > 1]


@dataclass(frozen=True)
class _SessionWindows(WindowAssigner):
    gap_ms: int | None = None
    gap_fn: Callable[[dict], Any] | None = None

    is_merging: ClassVar[bool] = True
    size_ms: ClassVar[None] = None

    def __post_init__(self) -> None:
        if (self.gap_ms is None) == (self.gap_fn is None):
            raise DefinitionError("a session assigner needs exactly one of a gap or a gap "
                                  "function", code="ARGUMENT_INVALID")
        if self.gap_fn is not None and not callable(self.gap_fn):
            raise DefinitionError(f"dynamic gap must be callable, got {self.gap_fn!r}",
                                  code="ARGUMENT_INVALID")
        if self.gap_ms is not None:
            object.__setattr__(self, "gap_ms",
                               _positive_ms(self.gap_ms, "session gap", "GAP_NOT_POSITIVE"))

    @classmethod
    def with_gap(cls, gap: object):
        """Sessions that close after ``gap`` without elements."""
        return cls(gap_ms=gap)

    @classmethod
    def with_dynamic_gap(cls, fn: Callable[[dict], Any]):
        """Sessions whose gap is ``fn(element)`` (any duration), evaluated per element."""
        return cls(gap_fn=fn)

    def assign_windows(self, element: dict, ts_ms: int, processing_time_ms: int
                       ) -> list[Window]:
        t = ts_ms if self.is_event_time else processing_time_ms
        gap = self.gap_ms if self.gap_fn is None else self._dynamic_gap(element, t)
        return [TimeWindow(t, t + gap)]

    def _dynamic_gap(self, element: dict, t: int) -> int:
        raw = self.gap_fn(element)
        try:
            gap = duration_ms(raw, what="dynamic session gap")
        except DefinitionError as exc:
            raise ExecutionError(f"dynamic session gap for the element at {format_ts(t)} "
                                 f"({t} ms): {exc}", code="FUNCTION_FAILED") from exc
        if gap <= 0:
            raise ExecutionError(
                f"dynamic session gap must be positive, got {raw!r} for the element at "
                f"{format_ts(t)} ({t} ms)", code="FUNCTION_FAILED")
        return gap

    def merge_windows(self, windows: list[TimeWindow]
                      ) -> list[tuple[TimeWindow, list[TimeWindow]]]:
        return _merge_intersecting(windows)

    def default_trigger(self) -> Trigger:
        return _time_trigger(self.is_event_time)

    def describe(self) -> dict:
        fn = None if self.gap_fn is None else describe_callable(self.gap_fn)
        return {"type": type(self).__name__, "gap_ms": self.gap_ms, "gap_fn": fn}


@dataclass(frozen=True)
class EventTimeSessionWindows(_SessionWindows):
    """Event-time sessions: each element opens ``[ts, ts + gap)``; touching sessions merge."""

    is_event_time: ClassVar[bool] = True


@dataclass(frozen=True)
class ProcessingTimeSessionWindows(_SessionWindows):
    """Sessions over the bundle's processing time: ``[P_b, P_b + gap)`` per element."""

    is_event_time: ClassVar[bool] = False


# --- global ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GlobalWindows(WindowAssigner):
    """One window per key that never ends; fires only through an explicit trigger."""

    is_event_time: ClassVar[bool] = True
    size_ms: ClassVar[None] = None

    @classmethod
    def create(cls) -> GlobalWindows:
        return cls()

    def assign_windows(self, element: dict, ts_ms: int, processing_time_ms: int
                       ) -> list[Window]:
        return [GLOBAL_WINDOW]

    def default_trigger(self) -> Trigger:
        from windowlib.core.triggers import NeverTrigger

        return NeverTrigger.create()

    def describe(self) -> dict:
        return {"type": "GlobalWindows"}
