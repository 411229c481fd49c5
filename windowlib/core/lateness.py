"""The lateness rules (Flink's ``WindowOperator``), each stated exactly once.

- ``cleanup_time(window)``: when the window's state is deleted: ``max_timestamp +
  allowed_lateness`` for event-time windows (saturating at ``MAX_TS``), ``max_timestamp`` for
  processing-time windows.
- ``is_window_late``: an event-time window is late once the watermark reached its cleanup time;
  an element is dropped for such a window.
- ``is_element_late``: an element is late once ``ts + allowed_lateness <= watermark``.
"""

from __future__ import annotations

from windowlib.core.time import MAX_TS


def cleanup_time(max_timestamp: int, allowed_lateness_ms: int, event_time: bool) -> int:
    if not event_time:
        return max_timestamp
    t = max_timestamp + allowed_lateness_ms
    return MAX_TS if t >= MAX_TS or max_timestamp >= MAX_TS else t


def is_window_late(max_timestamp: int, allowed_lateness_ms: int, watermark: int,
                   event_time: bool) -> bool:
    return event_time and cleanup_time(max_timestamp, allowed_lateness_ms, True) <= watermark


def is_element_late(ts_ms: int, allowed_lateness_ms: int, watermark: int,
                    event_time: bool) -> bool:
    return event_time and ts_ms + allowed_lateness_ms <= watermark
