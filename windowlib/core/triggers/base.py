"""Trigger contract (Flink's ``Trigger``) and the result a trigger returns.

Triggers are frozen configuration: they hold no runtime state in fields. Everything a trigger
remembers lives in partitioned state obtained from ``ctx.get_state(descriptor)`` (scoped to the
key and window the callback is for) and in timers registered through ``ctx``.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol

from windowlib.core.state import StateDescriptor


class TriggerResult(enum.Enum):
    """What the window operator does after a trigger callback."""

    CONTINUE = (False, False)
    FIRE = (True, False)
    PURGE = (False, True)
    FIRE_AND_PURGE = (True, True)

    @property
    def is_fire(self) -> bool:
        return self.value[0]

    @property
    def is_purge(self) -> bool:
        return self.value[1]


class TriggerContext(Protocol):
    """What a trigger may use during a callback (one key and one window at a time).

    ``current_watermark`` and ``current_processing_time`` are ms ints (``MIN_TS`` before any
    watermark). Timers are deduplicated per (time, window); deleting a timer removes only this
    trigger's registration. During ``on_merge``, ``merge_partitioned_state(descriptor)`` merges
    the state of the windows being merged into the new window.
    """

    @property
    def current_watermark(self) -> int: ...

    @property
    def current_processing_time(self) -> int: ...

    def register_event_time_timer(self, time: int) -> None: ...

    def register_processing_time_timer(self, time: int) -> None: ...

    def delete_event_time_timer(self, time: int) -> None: ...

    def delete_processing_time_timer(self, time: int) -> None: ...

    def get_state(self, descriptor: StateDescriptor) -> Any: ...

    def merge_partitioned_state(self, descriptor: StateDescriptor) -> None: ...


class Trigger:
    """Decides when a window's pane is evaluated (fired) and when it is purged.

    Callbacks (all receive the window they are about and a ``TriggerContext``):

    - ``on_element(element, timestamp, window, ctx)`` after ``element`` (a row dict, event time
      ``timestamp`` in ms) was added to ``window``'s pane.
    - ``on_event_time(time, window, ctx)`` when an event-time timer of ``window`` fires
      (the watermark reached ``time``); called for *every* timer of the window, including
      ones other parts registered, so check ``time`` against your own state.
    - ``on_processing_time(time, window, ctx)`` likewise for processing-time timers.
    - ``on_merge(window, ctx)`` when windows merged into ``window`` (merging assigners only;
      requires ``can_merge()``): re-register timers, merge state. Returns nothing.
    - ``clear(window, ctx)`` when the window is cleaned up: delete your timers and state.

    Callbacks return a ``TriggerResult`` and must not keep state in ``self``.
    """

    def on_element(self, element: dict, timestamp: int, window: Any, ctx: TriggerContext
                   ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: Any, ctx: TriggerContext) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not support merging windows")

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        return None

    def describe(self) -> dict:
        """Canonical, JSON-able configuration (used for fingerprints and docs)."""
        from windowlib.core.describe import describe_object

        return describe_object(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PrefixedContext:
    """A child's view of a ``TriggerContext``: state names and timer ownership get a prefix.

    Composite triggers hand one to each child so that children never collide (Beam prefixes
    child state the same way).
    """

    __slots__ = ("_owner", "_parent")

    def __init__(self, parent: Any, prefix: str) -> None:
        self._parent = parent._parent if isinstance(parent, PrefixedContext) else parent
        self._owner = f"{getattr(parent, 'owner', 'trigger')}.{prefix}"

    @property
    def owner(self) -> str:
        return self._owner

    @property
    def current_watermark(self) -> int:
        return self._parent.current_watermark

    @property
    def current_processing_time(self) -> int:
        return self._parent.current_processing_time

    def register_event_time_timer(self, time: int) -> None:
        self._parent.timer_op("event", time, self._owner, True)

    def register_processing_time_timer(self, time: int) -> None:
        self._parent.timer_op("processing", time, self._owner, True)

    def delete_event_time_timer(self, time: int) -> None:
        self._parent.timer_op("event", time, self._owner, False)

    def delete_processing_time_timer(self, time: int) -> None:
        self._parent.timer_op("processing", time, self._owner, False)

    def timer_op(self, domain: str, time: int, owner: str, register: bool) -> None:
        self._parent.timer_op(domain, time, owner, register)

    def get_state(self, descriptor: StateDescriptor) -> Any:
        return self._parent.get_state(descriptor.prefixed(self._owner))

    def merge_partitioned_state(self, descriptor: StateDescriptor) -> None:
        self._parent.merge_partitioned_state(descriptor.prefixed(self._owner))

    @property
    def window(self) -> Any:
        return self._parent.window
