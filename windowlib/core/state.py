"""Partitioned state: descriptors and the handles triggers and window functions use.

A *store* is a plain ``dict`` owned by the driver (one per window for trigger and window
state, one per key for global state); handles read and write it by the descriptor's name.
Values must be plain data (``windowlib.core.codec`` encodes them into snapshots), never
objects with behaviour. Descriptors are frozen configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from windowlib.core.errors import DefinitionError, ExecutionError

_PREFIXED: dict[tuple[int, str], tuple[StateDescriptor, StateDescriptor]] = {}
_PREFIXED_LIMIT = 4096


@dataclass(frozen=True)
class StateDescriptor:
    """Base of state descriptors; ``name`` identifies the state within its namespace."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DefinitionError("a state descriptor needs a non-empty name",
                                  code="ARGUMENT_INVALID")

    def prefixed(self, prefix: str) -> StateDescriptor:
        """The same descriptor in a child namespace (composite triggers use this). Equal
        arguments give the same (cached) object: descriptors are immutable."""
        entry = _PREFIXED.get((id(self), prefix))
        if entry is not None and entry[0] is self:
            return entry[1]
        out = replace(self, name=f"{prefix}/{self.name}")
        if len(_PREFIXED) >= _PREFIXED_LIMIT:
            _PREFIXED.clear()  # descriptors built on the fly must not grow the cache forever
        # the entry keeps ``self`` alive, so its id cannot be reused while cached
        _PREFIXED[(id(self), prefix)] = (self, out)
        return out

    def handle(self, store: dict) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def merge_values(self, values: list[Any]) -> Any:
        raise ExecutionError(f"state {self.name!r} ({type(self).__name__}) cannot be merged; "
                             "merge it in Trigger.on_merge yourself", code="MERGE_INVALID")


@dataclass(frozen=True)
class ValueStateDescriptor(StateDescriptor):
    """A single value; ``value()`` returns ``default`` until ``update`` is called."""

    default: Any = None

    def handle(self, store: dict) -> ValueState:
        return ValueState(store, self.name, self.default)


@dataclass(frozen=True)
class ReducingStateDescriptor(StateDescriptor):
    """Values combined with ``reduce_fn(a, b)`` on every ``add``; mergeable."""

    reduce_fn: Callable[[Any, Any], Any] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        if not callable(self.reduce_fn):
            raise DefinitionError(f"ReducingStateDescriptor {self.name!r} needs a reduce_fn",
                                  code="ARGUMENT_INVALID")

    def handle(self, store: dict) -> ReducingState:
        return ReducingState(store, self.name, self.reduce_fn)

    def merge_values(self, values: list[Any]) -> Any:
        acc = None
        for v in values:
            acc = v if acc is None else self.reduce_fn(acc, v)
        return acc


@dataclass(frozen=True)
class ListStateDescriptor(StateDescriptor):
    """An append-only list; mergeable by concatenation."""

    def handle(self, store: dict) -> ListState:
        return ListState(store, self.name)

    def merge_values(self, values: list[Any]) -> Any:
        out: list = []
        for v in values:
            out.extend(v)
        return out


class ValueState:
    __slots__ = ("_default", "_name", "_store")

    def __init__(self, store: dict, name: str, default: Any) -> None:
        self._store, self._name, self._default = store, name, default

    def value(self) -> Any:
        return self._store.get(self._name, self._default)

    def update(self, value: Any) -> None:
        self._store[self._name] = value

    def clear(self) -> None:
        self._store.pop(self._name, None)


class ReducingState:
    __slots__ = ("_fn", "_name", "_store")

    def __init__(self, store: dict, name: str, fn: Callable[[Any, Any], Any]) -> None:
        self._store, self._name, self._fn = store, name, fn

    def get(self) -> Any:
        return self._store.get(self._name)

    def add(self, value: Any) -> None:
        cur = self._store.get(self._name)
        self._store[self._name] = value if cur is None else self._fn(cur, value)

    def clear(self) -> None:
        self._store.pop(self._name, None)


class ListState:
    __slots__ = ("_name", "_store")

    def __init__(self, store: dict, name: str) -> None:
        self._store, self._name = store, name

    def get(self) -> list:
        return list(self._store.get(self._name, ()))

    def add(self, value: Any) -> None:
        self._store.setdefault(self._name, []).append(value)

    def clear(self) -> None:
        self._store.pop(self._name, None)


def merge_into(target: dict, sources: list[dict], descriptor: StateDescriptor) -> None:
    """Merge ``descriptor``'s values of ``sources`` (and ``target``) into ``target``."""
    values = [s[descriptor.name] for s in [target, *sources] if descriptor.name in s]
    if values:
        target[descriptor.name] = descriptor.merge_values(values)
