"""Copies that keep a value as it is now: what a window function produced, before it can change
it (``core/runner.py`` takes every result row and side-output value through them).

Values of immutable types (and subclasses of them, such as NumPy's ``float64`` or pendulum's
``DateTime``) are kept as they are; lists, tuples, dicts and sets are copied here, other
objects by ``copy.deepcopy``; a value that cannot be copied (a lock, a generator) is kept as
it is.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["kept", "kept_row"]

# values nothing can change in place: a row holding only these is kept by a shallow copy
_IMMUTABLE = frozenset({int, float, str, bool, type(None), bytes, complex, Decimal,
                        dt.datetime, dt.date, dt.time, dt.timedelta})
_IMMUTABLE_BASES = tuple(_IMMUTABLE)     # and their subclasses (NumPy's float64, pendulum's)


def kept(value: Any) -> Any:
    """``value`` as it is now: a deep copy unless nothing can change it in place (a value
    that cannot be copied is kept as it is)."""
    try:
        return _copied(value)
    except RecursionError:     # a cycle: ``deepcopy`` keeps it
        return copy.deepcopy(value)
    except Exception:     # e.g. a lock or a generator: not a value a firing can keep
        return value


def _copied(value: Any) -> Any:
    """A deep copy of ``value``: lists, tuples, dicts and sets of JSON's kinds copied here
    (about five times faster than ``copy.deepcopy``), other objects by ``deepcopy``."""
    immutable = _IMMUTABLE
    kind = type(value)
    if kind in immutable:
        return value
    if kind is list or kind is tuple:
        items = [v if type(v) in immutable else _copied(v) for v in value]
        return items if kind is list else tuple(items)
    if kind is dict:
        return {k: v if type(v) in immutable else _copied(v) for k, v in value.items()}
    if kind is set:
        return {v if type(v) in immutable else _copied(v) for v in value}
    if isinstance(value, _IMMUTABLE_BASES):
        return value
    return copy.deepcopy(value)


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
