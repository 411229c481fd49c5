"""Canonical descriptions of configuration objects (for fingerprints, docs and ``explain``).

A pipeline's fingerprint hashes the description of everything that shapes its results, so a
description must see every parameter. windowlib's own assigners, triggers, evictors, aggregates
and watermark strategies describe themselves (``describe()``; their descriptions are frozen:
changing one refuses every checkpoint written with it). Everything else is described here:

* plain data as itself — ``None``, bools, numbers, strings, lists and tuples, dicts (keys as
  strings, sorted) — and sets (sorted), datetimes, dates, times, time zones, timedeltas,
  decimals, fractions, enum members, bytes and compiled regexes as tagged values;
* a function, method or class: module, qualified name and a hash of its source (without
  source: of its bytecode, constants and names), plus the values of its closure, the instance
  of a bound method, a ``functools.partial``'s arguments (the globals a function reads are not
  part of it: pass such values as constructor arguments);
* any other object — a custom trigger, evictor, function or strategy without ``describe()``: its
  class (as above) and its constructor state, i.e. its ``__dict__`` and ``__slots__`` values,
  described recursively. A reference back to an object being described is marked, not
  followed.

What cannot be described raises ``DefinitionError(DEFINITION_UNDESCRIBABLE)`` naming where it
sits: an object with no visible state (no ``__dict__`` or ``__slots__``: a lock, an iterator, a
C extension's object) or nesting deeper than ``MAX_DEPTH``. The fix is a ``describe()`` method
on the class that holds it, returning its configuration as JSON-able data.

``earlier_descriptions()`` describes as windowlib did before: custom objects by (hardly) their
class and ``__dict__`` only, custom triggers by class name. Those are the fingerprints existing
checkpoints carry; readers accept them (``Pipeline.earlier_fingerprints``), never write them.
"""

from __future__ import annotations

import contextvars
import dataclasses
import datetime as _dt
import decimal
import enum
import fractions
import functools
import gc
import hashlib
import inspect
import re
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from windowlib.core.errors import DefinitionError

MAX_DEPTH = 64
# ids of the objects being described (shared by nested describe() calls) and where they are
_STACK: contextvars.ContextVar[tuple[tuple[int, str], ...]] = contextvars.ContextVar(
    "windowlib_describe_stack", default=())
_EARLIER: contextvars.ContextVar[bool] = contextvars.ContextVar("windowlib_describe_earlier",
                                                                default=False)


@contextmanager
def earlier_descriptions() -> Iterator[None]:
    """Describe as earlier windowlib versions did, inside the block (see the module docstring)."""
    token = _EARLIER.set(True)
    try:
        yield
    finally:
        _EARLIER.reset(token)


def earlier_descriptions_active() -> bool:
    """Whether the caller runs inside ``earlier_descriptions()``."""
    return _EARLIER.get()


def uses_builtin_form(cls: type) -> bool:
    """Whether instances of ``cls`` take a built-in's frozen ``describe()`` form: windowlib's own
    classes, and every class inside ``earlier_descriptions()``. Others: ``describe_instance``."""
    module = getattr(cls, "__module__", "") or ""
    return module == "windowlib" or module.startswith("windowlib.") or _EARLIER.get()


def describe_callable(fn: Any) -> dict:
    """Module, qualified name and a short hash of the source (or code) of ``fn``; plus its
    closure values, a bound method's instance, or a partial's arguments when it has them."""
    if _EARLIER.get():
        target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn)
        return _name_and_code(target, lambda code: code.co_code)
    if isinstance(fn, functools.partial):
        return {"partial": describe_value(fn.func), "args": describe_value(list(fn.args)),
                "keywords": describe_value(dict(fn.keywords))}
    if not (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isclass(fn)
            or inspect.isbuiltin(fn)):
        return describe_instance(fn)     # a callable object: its class and its state
    out = _name_and_code(fn, _code_bytes)
    with _entering(fn, out["callable"]) as ref:
        if ref is not None:
            return ref
        if inspect.ismethod(fn) and not inspect.isclass(fn.__self__):
            out["self"] = describe_value(fn.__self__)
        func = getattr(fn, "__func__", fn)
        closure = getattr(func, "__closure__", None) if inspect.isfunction(func) else None
        if closure:
            out["closure"] = {var: _cell(cell) for var, cell
                              in zip(func.__code__.co_freevars, closure, strict=True)}
    return out


def describe_value(value: Any) -> Any:
    """A JSON-able description of a configuration value (see the module docstring)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [describe_value(v) for v in value]
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return {str(k): describe_value(v) for k, v in items}
    earlier = _EARLIER.get()
    tagged = None if earlier else _tagged(value)
    if tagged is not None:
        return tagged
    describe = getattr(value, "describe", None)
    if callable(describe) and not inspect.isclass(value):
        return describe()
    if callable(value) and (inspect.isfunction(value) or inspect.ismethod(value)
                            or inspect.isbuiltin(value) or inspect.isclass(value)
                            or (not earlier and isinstance(value, functools.partial))):
        return describe_callable(value)
    if earlier:
        out = {"instance": describe_callable(type(value))}
        attrs = getattr(value, "__dict__", None)
        if attrs:
            out["attributes"] = describe_value(dict(attrs))
        return out
    return describe_instance(value)


def describe_instance(obj: Any) -> dict:
    """``{"instance": <class as a callable>, "attributes": <state>}`` (attributes omitted when
    there are none): how an object without its own ``describe()`` is described."""
    cls = type(obj)
    where = cls.__qualname__
    with _entering(obj, where) as ref:
        if ref is not None:
            return ref
        state = _state(obj)
        if state is None:
            raise _undescribable(where, "it keeps no state windowlib can see (no __dict__ or "
                                 "__slots__)")
        out: dict[str, Any] = {"instance": describe_callable(cls)}
        if state:
            out["attributes"] = describe_value(state)
        return out


def describe_object(obj: Any) -> dict:
    """``{"type": ClassName, <field>: <described value>, ...}`` for dataclass configuration
    (windowlib's built-ins: their descriptions are frozen, see the module docstring)."""
    out: dict[str, Any] = {"type": type(obj).__name__}
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            if f.name.startswith("_") and f.name != "_mode":
                continue
            out[f.name.lstrip("_")] = describe_value(getattr(obj, f.name))
    return out


# --- helpers --------------------------------------------------------------------------------

def _name_and_code(target: Any, code_bytes: Any) -> dict[str, Any]:
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"
    try:
        code = _source(target).encode()
    except (OSError, TypeError):
        code_obj = getattr(target, "__code__", None)
        code = code_bytes(code_obj) if code_obj is not None else name.encode()
    return {"callable": name, "code": hashlib.sha256(code).hexdigest()[:16]}


_COLLECTOR_LOCK = threading.RLock()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector paused inside (one thread at a time; restored as found), for
    code that parses Python: a collection inside ``ast.parse`` whose finalizer parses Python
    too (a logging handler formatting a traceback places its carets with ``ast``) makes
    CPython 3.11 raise ``SystemError: AST constructor recursion depth mismatch``."""
    with _COLLECTOR_LOCK:
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if enabled:
                gc.enable()


def _source(target: Any) -> str:
    """``inspect.getsource(target)``; reading a class's source parses its module."""
    with collector_paused():
        return inspect.getsource(target)


@contextmanager
def _entering(obj: Any, where: str) -> Iterator[dict | None]:
    """Push ``obj`` on the description stack; yields a back-reference when it is already on
    it (a cycle), else ``None``. Refuses nesting deeper than ``MAX_DEPTH``."""
    stack = _STACK.get()
    for depth, (seen, seen_where) in enumerate(stack):
        if seen == id(obj):
            yield {"back_reference": seen_where, "depth": depth}
            return
    if len(stack) >= MAX_DEPTH:
        raise _undescribable(where, f"it is nested more than {MAX_DEPTH} levels deep")
    token = _STACK.set((*stack, (id(obj), where)))
    try:
        yield None
    finally:
        _STACK.reset(token)


def _undescribable(where: str, why: str) -> DefinitionError:
    owners = [w for _, w in _STACK.get()]
    path = " -> ".join([*owners, where]) if owners and owners[-1] != where else where
    return DefinitionError(
        f"cannot describe {path} for the pipeline's fingerprint: {why}. Give the class that "
        "holds it a describe() method returning its configuration as JSON-able data, or keep "
        "plain values (numbers, strings, lists, dicts, datetimes) in it",
        code="DEFINITION_UNDESCRIBABLE")


def _state(obj: Any) -> dict[str, Any] | None:
    """``__dict__`` plus the set ``__slots__`` of ``obj``; ``None`` when it has neither."""
    attrs = getattr(obj, "__dict__", None)
    has_slots = False
    state = dict(attrs) if isinstance(attrs, dict) else {}
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__")
        if slots is None:
            continue
        has_slots = True
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            attr = f"_{klass.__name__.lstrip('_')}{slot}" \
                if slot.startswith("__") and not slot.endswith("__") else slot
            try:
                state[attr] = getattr(obj, attr)
            except AttributeError:   # an unset slot
                continue
    if not isinstance(attrs, dict) and not has_slots:
        return None
    return state


def _cell(cell: Any) -> Any:
    try:
        value = cell.cell_contents
    except ValueError:          # a free variable not assigned yet
        return {"unbound": True}
    return describe_value(value)


def _tagged(value: Any) -> dict | None:
    """Values without a ``__dict__`` that are plain data, as tagged JSON (or ``None``)."""
    if isinstance(value, set | frozenset):
        items = [describe_value(v) for v in value]
        return {"set": sorted(items, key=repr)}
    if isinstance(value, _dt.datetime | _dt.time):
        tz = value.tzinfo
        return {type(value).__name__ if isinstance(value, _dt.time) else "datetime":
                value.isoformat(), "tz": None if tz is None else str(tz)}
    if isinstance(value, _dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, _dt.timedelta):
        return {"timedelta_us": (value.days * 86_400 + value.seconds) * 1_000_000
                + value.microseconds}
    if isinstance(value, _dt.tzinfo):
        return {"tzinfo": str(value)}
    if isinstance(value, decimal.Decimal | fractions.Fraction | complex):
        return {type(value).__name__.lower(): str(value)}
    if isinstance(value, enum.Enum):
        return {"enum": describe_callable(type(value))["callable"], "name": value.name}
    if isinstance(value, bytes | bytearray):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, re.Pattern):
        pattern = value.pattern
        return {"regex": pattern if isinstance(pattern, str) else pattern.hex(),
                "flags": value.flags}
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    return None


def _code_bytes(code: types.CodeType) -> bytes:
    """Bytecode, names and constants (nested code included) of ``code``, canonically."""
    parts = [code.co_code, repr(code.co_names).encode()]
    parts += [_const(c) for c in code.co_consts]
    return b"\x00".join(parts)


def _const(value: Any) -> bytes:
    if inspect.iscode(value):
        return _code_bytes(value)
    if isinstance(value, frozenset):      # its repr's order depends on string hashing
        return b"frozenset" + b",".join(sorted(_const(v) for v in value))
    if isinstance(value, tuple):
        return b"(" + b",".join(_const(v) for v in value) + b")"
    return repr(value).encode()
