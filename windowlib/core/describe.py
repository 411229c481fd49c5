"""Canonical descriptions of configuration objects (for fingerprints, docs and ``explain``).

``describe_object`` turns frozen configuration (assigners, triggers, evictors, functions) into
JSON-able dicts. Callables are described by module and qualified name plus a hash of their code,
so that editing a function's body changes a pipeline's fingerprint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from typing import Any


def describe_callable(fn: Any) -> dict:
    """Module, qualified name and a short hash of the source (or bytecode) of ``fn``."""
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn)
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"
    try:
        code = inspect.getsource(target).encode()
    except (OSError, TypeError):
        code_obj = getattr(target, "__code__", None)
        code = code_obj.co_code if code_obj is not None else name.encode()
    return {"callable": name, "code": hashlib.sha256(code).hexdigest()[:16]}


def describe_value(value: Any) -> Any:
    """A JSON-able description of a configuration value."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [describe_value(v) for v in value]
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return {str(k): describe_value(v) for k, v in items}
    describe = getattr(value, "describe", None)
    if callable(describe) and not inspect.isclass(value):
        return describe()
    if callable(value) and (inspect.isfunction(value) or inspect.ismethod(value)
                            or inspect.isbuiltin(value) or inspect.isclass(value)):
        return describe_callable(value)
    # An instance (a ProcessWindowFunction, an AggregateFunction...): its class and code, plus
    # its attributes — never repr(), whose default embeds a memory address.
    out = {"instance": describe_callable(type(value))}
    attrs = getattr(value, "__dict__", None)
    if attrs:
        out["attributes"] = describe_value(dict(attrs))
    return out


def describe_object(obj: Any) -> dict:
    """``{"type": ClassName, <field>: <described value>, ...}`` for dataclass configuration."""
    out: dict[str, Any] = {"type": type(obj).__name__}
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            if f.name.startswith("_") and f.name != "_mode":
                continue
            out[f.name.lstrip("_")] = describe_value(getattr(obj, f.name))
    return out
