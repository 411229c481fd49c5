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

    # identity tests: reading an enum member's ``value`` is slow on the hot path
    @property
    def is_fire(self) -> bool:
        return self is _FIRE or self is _FIRE_AND_PURGE

    @property
    def is_purge(self) -> bool:
        return self is _PURGE or self is _FIRE_AND_PURGE


_FIRE, _PURGE, _FIRE_AND_PURGE = TriggerResult.FIRE, TriggerResult.PURGE, \
    TriggerResult.FIRE_AND_PURGE


class TriggerContext(Protocol):
    """What a trigger may use during a callback (one key and one window at a time).

    ``current_watermark`` and ``current_processing_time`` are ms ints in the timers' domain
    (``MIN_TS`` before any watermark, ``MAX_TS`` after the end of input: unlike the window
    function's ``Context``, never ``None``, so comparisons with timers hold at both ends).
    Timers are deduplicated per (time, window); deleting a timer removes only this trigger's
    registration. During ``on_merge``, ``merge_partitioned_state(descriptor)`` merges
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

    def clear_is_local(self) -> bool:
        """True when ``clear`` does nothing but delete this trigger's timers and state of the
        window: its class's ``clear`` is one registered with ``local_clear`` (the built-ins'
        and the base no-op) and so are its nested triggers'. The driver then skips ``clear``
        when a window is cleaned up (cleanup deletes the window's timers and trigger state
        anyway); it still calls it when windows merge. A user trigger overriding ``clear`` is
        therefore always called."""
        return type(self).clear in _LOCAL_CLEARS and all(
            child.clear_is_local() for child in self.nested_triggers())

    def nested_triggers(self) -> tuple[Trigger, ...]:
        """The triggers this one delegates to (composites override it)."""
        return ()

    def describe(self) -> dict:
        """Canonical, JSON-able configuration (used for fingerprints and docs). A custom
        trigger is described by its class and constructor state (``describe_instance``);
        override this to describe it yourself."""
        from windowlib.core.describe import describe_instance, describe_object, uses_builtin_form

        if uses_builtin_form(type(self)):
            return describe_object(self)
        return describe_instance(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


_LOCAL_CLEARS: set = {Trigger.clear}


def local_clear(*classes: type) -> None:
    """Declare that each class's own ``clear`` only deletes its timers and state (see
    ``Trigger.clear_is_local``). For windowlib's built-in triggers only."""
    for cls in classes:
        _LOCAL_CLEARS.add(cls.__dict__["clear"])


class PrefixedContext:
    """A child's view of a ``TriggerContext``: state names and timer ownership get a prefix.

    Composite triggers hand one to each child so that children never collide (Beam prefixes
    child state the same way).
    """

    __slots__ = ("_descriptors", "_owner", "_parent", "prefixed_children")

    def __init__(self, parent: Any, prefix: str) -> None:
        self._parent = parent._parent if isinstance(parent, PrefixedContext) else parent
        self._owner = f"{getattr(parent, 'owner', 'trigger')}.{prefix}"
        self.prefixed_children: dict[str, PrefixedContext] = {}
        # id(descriptor) -> (descriptor, its prefixed form): the descriptor is kept alive with
        # its entry, so an id is never reused while cached
        self._descriptors: dict[int, tuple[StateDescriptor, StateDescriptor]] = {}

    def _prefixed(self, descriptor: StateDescriptor) -> StateDescriptor:
        entry = self._descriptors.get(id(descriptor))
        if entry is not None and entry[0] is descriptor:
            return entry[1]
        out = descriptor.prefixed(self._owner)
        if len(self._descriptors) >= 256:
            self._descriptors.clear()  # descriptors built on the fly must not grow it forever
        self._descriptors[id(descriptor)] = (descriptor, out)
        return out

    @classmethod
    def of(cls, parent: Any, prefix: str) -> PrefixedContext:
        """``PrefixedContext(parent, prefix)``, reused when ``parent`` offers a
        ``prefixed_children`` dict (the driver's context and every ``PrefixedContext`` do).
        Sharing is safe: a prefixed context holds nothing but its root and its owner name."""
        children = getattr(parent, "prefixed_children", None)
        if children is None:
            return cls(parent, prefix)
        ctx = children.get(prefix)
        if ctx is None:
            ctx = children[prefix] = cls(parent, prefix)
        return ctx

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
        return self._parent.get_state(self._prefixed(descriptor))

    def merge_partitioned_state(self, descriptor: StateDescriptor) -> None:
        self._parent.merge_partitioned_state(self._prefixed(descriptor))

    @property
    def window(self) -> Any:
        return self._parent.window
