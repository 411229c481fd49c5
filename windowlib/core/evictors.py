"""Evictors (FLIP-4): remove elements from a pane before and/or after the window function.

Invariants: an evictor is frozen configuration (no runtime state). It edits the pane's element
list in place — it may remove elements from anywhere — and never mutates the values themselves.
A pipeline with an evictor buffers every element of a pane (no pre-aggregation), so the
function sees exactly the elements that survive ``evict_before``.

Boundary rules (SPEC §4):

* ``CountEvictor`` keeps the last ``max_count`` elements (removes from the front).
* ``DeltaEvictor`` evicts every element whose ``delta_fn(element.value, last.value)`` is
  ``>= threshold``, checking all elements, not only a prefix (FLIP-4's motivating change).
* ``TimeEvictor`` evicts elements with ``timestamp <= max_ts - interval`` where ``max_ts`` is
  the largest timestamp in the pane: an element exactly on the cutoff is evicted, as in
  Flink's ``TimeEvictor`` (so an interval of 0 evicts every element).
"""

from __future__ import annotations

import abc
import dataclasses
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from windowlib.core.describe import (
    describe_callable,
    describe_instance,
    earlier_descriptions_active,
    uses_builtin_form,
)
from windowlib.core.errors import DefinitionError
from windowlib.core.time import duration_ms

if TYPE_CHECKING:
    from windowlib.core.windows import Window

__all__ = [
    "CountEvictor",
    "DeltaEvictor",
    "Evictor",
    "EvictorContext",
    "TimeEvictor",
    "TimestampedValue",
]


@dataclass(slots=True)
class TimestampedValue:
    """One buffered element: ``value`` (a row dict) and its event ``timestamp`` in ms."""

    value: Any
    timestamp: int


class EvictorContext(Protocol):
    """What the driver tells an evictor about time when it calls it: epoch ms, or ``None``
    while a clock has no finite value (as the window function's ``Context``)."""

    current_watermark: int | None
    current_processing_time: int | None


class Evictor(abc.ABC):
    """Removes elements from a pane around the window function (FLIP-4).

    Contract:

    * ``evict_before`` runs after a trigger has decided to fire and before the window
      function; ``evict_after`` runs after the function, on the elements that stay buffered
      (they matter in accumulating mode, where the next firing sees them again).
    * ``elements`` is a mutable ``list[TimestampedValue]`` in insertion order. An evictor
      removes elements from anywhere in it, in place (``del``, slice assignment); it never
      adds, reorders or replaces elements and never mutates ``element.value``.
    * ``size`` is ``len(elements)`` at call time (kept for Flink parity).
    * ``window`` is the pane's window; ``ctx`` is an ``EvictorContext``.
    * Both return ``None``. An evictor is frozen configuration: it holds no runtime state.
    * ``describe()`` returns canonical JSON-able configuration used in pipeline fingerprints.
      A custom evictor is described by its class and constructor state
      (``describe_instance``); override it to describe the evictor yourself.
    """

    __slots__ = ()

    @abc.abstractmethod
    def evict_before(self, elements: list[TimestampedValue], size: int, window: Window,
                     ctx: EvictorContext) -> None:
        """Evict in place before the window function runs."""

    @abc.abstractmethod
    def evict_after(self, elements: list[TimestampedValue], size: int, window: Window,
                    ctx: EvictorContext) -> None:
        """Evict in place after the window function has run."""

    def describe(self) -> dict:
        cls = type(self)
        if not uses_builtin_form(cls):
            return describe_instance(self)
        out: dict[str, Any] = {"evictor": f"{cls.__module__}.{cls.__qualname__}"}
        if dataclasses.is_dataclass(self):
            for f in dataclasses.fields(self):
                out[f.name] = _describe_param(getattr(self, f.name))
        return out


def _describe_param(value: Any) -> Any:
    if not callable(value):
        return value
    if earlier_descriptions_active():
        return {"module": getattr(value, "__module__", None),
                "qualname": getattr(value, "__qualname__", type(value).__qualname__)}
    return describe_callable(value)


def remove_where(elements: list[TimestampedValue],
                 predicate: Callable[[TimestampedValue], bool]) -> None:
    """Remove, in place and keeping order, every element for which ``predicate`` is true."""
    elements[:] = [e for e in elements if not predicate(e)]


class _BuiltinEvictor(Evictor):
    """Built-ins evict with one rule, either before or after the function."""

    __slots__ = ()
    do_evict_after: bool

    def evict_before(self, elements: list[TimestampedValue], size: int, window: Window,
                     ctx: EvictorContext) -> None:
        if not self.do_evict_after:
            self._evict(elements)

    def evict_after(self, elements: list[TimestampedValue], size: int, window: Window,
                    ctx: EvictorContext) -> None:
        if self.do_evict_after:
            self._evict(elements)

    @abc.abstractmethod
    def _evict(self, elements: list[TimestampedValue]) -> None: ...


def _check_flag(value: object) -> None:
    if not isinstance(value, bool):
        raise DefinitionError(f"do_evict_after must be a bool, got {value!r}",
                              code="ARGUMENT_INVALID")


@dataclass(frozen=True, slots=True)
class CountEvictor(_BuiltinEvictor):
    """Keeps the last ``max_count`` elements of the pane."""

    max_count: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_count, bool) or not isinstance(self.max_count, int) \
                or self.max_count <= 0:
            raise DefinitionError(f"CountEvictor: max_count must be an int > 0, "
                                  f"got {self.max_count!r}", code="ARGUMENT_INVALID")
        _check_flag(self.do_evict_after)

    @classmethod
    def of(cls, max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return cls(max_count, do_evict_after)

    def _evict(self, elements: list[TimestampedValue]) -> None:
        excess = len(elements) - self.max_count
        if excess > 0:
            del elements[:excess]


@dataclass(frozen=True, slots=True)
class DeltaEvictor(_BuiltinEvictor):
    """Evicts every element whose ``delta_fn(value, last_value) >= threshold``."""

    threshold: float
    delta_fn: Callable[[Any, Any], float]
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, numbers.Real):
            raise DefinitionError(f"DeltaEvictor: threshold must be a number, "
                                  f"got {self.threshold!r}", code="ARGUMENT_INVALID")
        if not callable(self.delta_fn):
            raise DefinitionError(f"DeltaEvictor: delta_fn must be callable, "
                                  f"got {self.delta_fn!r}", code="ARGUMENT_INVALID")
        _check_flag(self.do_evict_after)

    @classmethod
    def of(cls, threshold: float, delta_fn: Callable[[Any, Any], float],
           do_evict_after: bool = False) -> DeltaEvictor:
        return cls(threshold, delta_fn, do_evict_after)

    def _evict(self, elements: list[TimestampedValue]) -> None:
        if not elements:
            return
        last, fn, threshold = elements[-1].value, self.delta_fn, self.threshold
        remove_where(elements, lambda e: fn(e.value, last) >= threshold)


@dataclass(frozen=True, slots=True)
class TimeEvictor(_BuiltinEvictor):
    """Evicts elements with ``timestamp <= max_ts - interval_ms`` (``max_ts``: newest in pane)."""

    interval_ms: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        interval = duration_ms(self.interval_ms, what="TimeEvictor interval")
        if interval < 0:
            raise DefinitionError(f"TimeEvictor: interval must be >= 0, got {interval} ms",
                                  code="ARGUMENT_INVALID")
        object.__setattr__(self, "interval_ms", interval)
        _check_flag(self.do_evict_after)

    @classmethod
    def of(cls, interval: object, do_evict_after: bool = False) -> TimeEvictor:
        """``interval``: int ms, timedelta or a string such as ``"10 seconds"``."""
        return cls(interval, do_evict_after)  # type: ignore[arg-type]

    def _evict(self, elements: list[TimestampedValue]) -> None:
        if not elements:
            return
        cutoff = max(e.timestamp for e in elements) - self.interval_ms
        remove_where(elements, lambda e: e.timestamp <= cutoff)
