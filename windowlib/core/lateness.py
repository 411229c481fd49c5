"""The lateness rules (Flink's ``WindowOperator``), each stated exactly once.

- ``cleanup_time``: when a window's state is deleted: ``max_timestamp + allowed_lateness`` for
  event-time windows (saturating at ``MAX_TS``), ``max_timestamp`` for processing-time windows.
- ``is_late``: an event-time window is late once the watermark reached its cleanup time; an
  element is dropped for such a window, and one dropped for every window goes to the late
  output (SPEC §1 step 2). The native path compiles the same two rules to SQL.
"""

from __future__ import annotations

from windowlib.core.time import MAX_TS


def cleanup_time(max_timestamp: int, allowed_lateness_ms: int, event_time: bool) -> int:
    if not event_time:
        return max_timestamp
    t = max_timestamp + allowed_lateness_ms
    return MAX_TS if t >= MAX_TS or max_timestamp >= MAX_TS else t


def is_late(cleanup_at: int, watermark: int, event_time: bool) -> bool:
    """Whether a window whose cleanup time is ``cleanup_at`` is past the watermark."""
    return event_time and cleanup_at <= watermark
