"""Watermark strategies: where the global watermark may move after a bundle (SPEC §1).

``W_b = max(W_{b-1}, strategy.watermark(max_event_ts, processing_time))``; the engine applies
the ``max`` (the watermark never moves backwards). ``max_event_ts`` is the largest event time
of every accepted element so far (``MIN_TS`` before any); ``processing_time`` is ``P_b``.
"""

from __future__ import annotations

from dataclasses import dataclass

from windowlib.core.errors import DefinitionError
from windowlib.core.time import MIN_TS, duration_ms


def effective_strategy(strategy: WatermarkStrategy | None) -> WatermarkStrategy:
    """The strategy a run uses: ``strategy``, or ``BoundedOutOfOrderness(0)`` when none is
    given (SPEC §9's default)."""
    return strategy if strategy is not None else BoundedOutOfOrderness(0)


class WatermarkStrategy:
    """Base class; ``watermark`` returns a candidate watermark (``MIN_TS`` = none yet)."""

    def watermark(self, max_event_ts: int, processing_time: int) -> int:
        raise NotImplementedError

    def describe(self) -> dict:
        """Canonical, JSON-able configuration (recorded in every commit). A custom strategy
        is described by its class and constructor state unless it overrides this."""
        from windowlib.core.describe import describe_instance, describe_object, uses_builtin_form

        if uses_builtin_form(type(self)):
            return describe_object(self)
        return describe_instance(self)


def _non_negative(value: object, what: str) -> int:
    ms = duration_ms(value, what=what)
    if ms < 0:
        raise DefinitionError(f"{what} must not be negative, got {value!r}",
                              code="ARGUMENT_INVALID")
    return ms


@dataclass(frozen=True)
class BoundedOutOfOrderness(WatermarkStrategy):
    """Max event time seen so far minus ``delay`` minus 1 ms (Flink's rule)."""

    delay_ms: int

    def __init__(self, delay: object = 0) -> None:
        object.__setattr__(self, "delay_ms", _non_negative(delay, "out-of-orderness delay"))

    def watermark(self, max_event_ts: int, processing_time: int) -> int:
        if max_event_ts == MIN_TS:
            return MIN_TS
        return max_event_ts - self.delay_ms - 1


@dataclass(frozen=True)
class MonotonousTimestamps(BoundedOutOfOrderness):
    """Timestamps never go backwards: ``BoundedOutOfOrderness(0)``."""

    def __init__(self) -> None:
        super().__init__(0)


@dataclass(frozen=True)
class ProcessingTimeLag(WatermarkStrategy):
    """The bundle's processing time minus ``lag`` (for sources whose delay is bounded)."""

    lag_ms: int

    def __init__(self, lag: object) -> None:
        object.__setattr__(self, "lag_ms", _non_negative(lag, "processing-time lag"))

    def watermark(self, max_event_ts: int, processing_time: int) -> int:
        if processing_time == MIN_TS:
            return MIN_TS
        return processing_time - self.lag_ms
