"""Copies that keep a value as it is now: what a window function produced, before it can change
it (``core/runner.py`` takes every result row and side-output value through them), and each
window's copy of an element.

Values of immutable types (and subclasses of them, such as NumPy's ``float64`` or pendulum's
``DateTime``) are kept as they are; lists, tuples, dicts and sets are copied here, other
objects by ``copy.deepcopy``; a value that cannot be copied (a lock, a generator) is kept as
it is.

A result (``kept_result``, ``kept_result_row``) must also be plain data, what ``core/codec``
encodes, since the Spark paths write it as JSON text: NumPy values become Python's
(``tolist()``), subclasses of lists, tuples, dicts and sets their base type, and anything else
is ``NotPlain`` (the runner makes it ``FUNCTION_FAILED`` naming the key and the window), so
every engine accepts and refuses the same results.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from windowlib.core.codec import SCALARS, SUBCLASSED

__all__ = ["NotPlain", "kept", "kept_result", "kept_result_row", "kept_row"]

# values nothing can change in place: a row holding only these is kept by a shallow copy
# (the codec's scalars, and complex, which a copy keeps but the codec cannot write)
_IMMUTABLE = SCALARS | {complex}
_IMMUTABLE_BASES = tuple(_IMMUTABLE)     # and their subclasses (NumPy's float64, pendulum's)


def kept(value: Any) -> Any:
    """``value`` as it is now: a deep copy unless nothing can change it in place (a value
    that cannot be copied is kept as it is)."""
    try:
        return _copied(value, _IMMUTABLE, _kept_other)
    except RecursionError:     # a cycle: ``deepcopy`` keeps it
        return copy.deepcopy(value)
    except Exception:     # e.g. a lock or a generator: not a value a firing can keep
        return value


def _copied(value: Any, scalars: frozenset, other: Any) -> Any:
    """A deep copy of ``value``: values of the types in ``scalars`` as they are, lists,
    tuples, dicts and sets copied here (about five times faster than ``copy.deepcopy``),
    anything else by ``other(value)``."""
    kind = type(value)
    if kind in scalars:
        return value
    if kind is list or kind is tuple:
        items = [v if type(v) in scalars else _copied(v, scalars, other) for v in value]
        return items if kind is list else tuple(items)
    if kind is dict:
        return {k if type(k) in scalars else _copied(k, scalars, other):
                v if type(v) in scalars else _copied(v, scalars, other)
                for k, v in value.items()}
    if kind is set or kind is frozenset:
        return kind(v if type(v) in scalars else _copied(v, scalars, other) for v in value)
    return other(value)


def _kept_other(value: Any) -> Any:
    return value if isinstance(value, _IMMUTABLE_BASES) else copy.deepcopy(value)


def kept_row(row: Mapping) -> dict:
    """A new dict of ``row``'s items, its nested values ``kept`` (a shallow copy when all
    are immutable, the usual row)."""
    copied = row.copy() if type(row) is dict else dict(row)
    immutable = _IMMUTABLE
    for value in copied.values():      # (a loop: ``issuperset`` would build a set per row)
        if type(value) not in immutable:
            for name, item in copied.items():
                copied[name] = kept(item)
            break
    return copied


class NotPlain(TypeError):
    """A result value that is not plain data; the message says what it holds."""


_CONTAINERS = (list, tuple, dict, set, frozenset)


def kept_result(value: Any) -> Any:
    """``value`` as plain data, copied (module docstring); ``NotPlain`` when it is not."""
    try:
        return _copied(value, SCALARS, _plain_other)
    except RecursionError:
        raise NotPlain("a value that contains itself") from None


def _plain_other(value: Any) -> Any:
    kind = type(value)
    if kind.__module__ == "numpy" and hasattr(value, "tolist"):    # scalars and arrays
        return _copied(value.tolist(), SCALARS, _plain_other)
    if isinstance(value, SUBCLASSED):      # IntEnum, pendulum's DateTime: written by value
        return value
    for base in _CONTAINERS:      # a namedtuple, an OrderedDict
        if isinstance(value, base):
            return _copied(base(value), SCALARS, _plain_other)
    raise NotPlain(f"a {kind.__module__}.{kind.__qualname__}")


def kept_result_row(row: Mapping) -> dict:
    """``kept_row`` for a result row: its values ``kept_result`` (``NotPlain`` names the
    column)."""
    copied = row.copy() if type(row) is dict else dict(row)
    plain = SCALARS
    for value in copied.values():
        if type(value) not in plain:
            for name, item in copied.items():
                try:
                    copied[name] = kept_result(item)
                except NotPlain as exc:
                    raise NotPlain(f"column {name!r} holds {exc}") from None
            break
    return copied
