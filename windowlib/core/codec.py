"""Plain-data encoding of state values for snapshots (JSON-compatible, never pickles).

``encode`` maps a value to JSON-able data and ``decode`` inverts it exactly. Supported: None,
bool, int, float (incl. inf/nan), str, list, dict (any hashable keys), tuple, set, bytes,
``datetime``/``date``/``time``/``timedelta`` and ``Decimal``. Non-JSON types are tagged as
``{"$t": tag, "v": ...}``; a dict that itself has a ``"$t"`` key is escaped the same way.
Anything else raises ``StateError(SNAPSHOT_UNSERIALIZABLE)`` naming the type.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
from decimal import Decimal
from typing import Any

from windowlib.core.errors import StateError

TAG = "$t"    # the key of a tagged value: a row holding it is not its own encoding
# the scalar types ``encode`` writes (containers: list, tuple, dict, set, frozenset), and the
# types whose subclasses it writes by value; what a result may hold (``core/copies``)
SCALARS = frozenset({type(None), bool, int, float, str, bytes, Decimal, _dt.datetime, _dt.date,
                     _dt.time, _dt.timedelta})
SUBCLASSED = (int, float, str, _dt.date, _dt.time, _dt.timedelta)
# one compact encoder: json.dumps builds a new JSONEncoder on every call with non-default
# separators, which costs more than encoding a small row
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def encode(value: Any) -> Any:
    """JSON-able data for ``value`` (see module docstring)."""
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        return value
    if t is float:
        return value if math.isfinite(value) else {TAG: "float", "v": repr(value)}
    if t is list:
        return [encode(v) for v in value]
    if t is dict:
        if all(type(k) is str for k in value) and TAG not in value:
            return {k: encode(v) for k, v in value.items()}
        return {TAG: "dict", "v": [[encode(k), encode(v)] for k, v in value.items()]}
    if t is tuple:
        return {TAG: "tuple", "v": [encode(v) for v in value]}
    if t is set or t is frozenset:
        return {TAG: "set", "v": sorted((encode(v) for v in value), key=repr)}
    if t is bytes:
        return {TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    if t is Decimal:
        return {TAG: "decimal", "v": str(value)}
    if isinstance(value, _dt.datetime):
        return {TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, _dt.date):
        return {TAG: "date", "v": value.isoformat()}
    if isinstance(value, _dt.time):
        return {TAG: "time", "v": value.isoformat()}
    if isinstance(value, _dt.timedelta):
        return {TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, int | float | str):  # subclasses such as IntEnum or numpy scalars
        return encode(_plain(value))
    raise StateError(
        f"cannot snapshot a value of type {t.__module__}.{t.__qualname__}; window state "
        "(accumulators, buffered rows, trigger state) must be plain data: numbers, strings, "
        "lists, dicts, tuples, datetimes", code="SNAPSHOT_UNSERIALIZABLE")


# JSON text of the values ``encode`` returns unchanged, as ``_COMPACT`` writes them (strings
# ASCII-escaped, integers by ``int.__repr__``)
_SCALAR_TEXT: dict[type, Any] = {
    str: json.encoder.encode_basestring_ascii, int: int.__repr__,
    bool: lambda v: "true" if v else "false", type(None): lambda v: "null"}


def to_json(value: Any) -> str:
    """Compact JSON text of ``encode(value)``. A flat row of integers, strings, booleans and
    nulls under string keys (what most window functions return) is its own encoding and is
    written here without building a JSON encoder per call."""
    if type(value) is dict and TAG not in value:
        text, quote = _SCALAR_TEXT, json.encoder.encode_basestring_ascii
        parts = []
        for k, v in value.items():
            write = text.get(type(v))
            if write is None or type(k) is not str:
                break
            parts.append(f"{quote(k)}:{write(v)}")
        else:
            return "{" + ",".join(parts) + "}"
    return _COMPACT.encode(encode(value))


def _plain(value: Any) -> Any:
    for base in (bool, int, float, str):
        if isinstance(value, base):
            return base(value)
    return value  # pragma: no cover


_DECODERS = {
    "float": float,
    "tuple": lambda v: tuple(decode(x) for x in v),
    "set": lambda v: {decode(x) for x in v},
    "dict": lambda v: {decode(k): decode(x) for k, x in v},
    "bytes": lambda v: base64.b64decode(v),
    "decimal": Decimal,
    "datetime": _dt.datetime.fromisoformat,
    "date": _dt.date.fromisoformat,
    "time": _dt.time.fromisoformat,
    "timedelta": lambda v: _dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2]),
}


def decode(data: Any) -> Any:
    """Inverse of ``encode``."""
    t = type(data)
    if t is list:
        return [decode(v) for v in data]
    if t is dict:
        tag = data.get(TAG)
        if tag is not None:
            try:
                return _DECODERS[tag](data["v"])
            except (KeyError, ValueError, TypeError) as exc:
                raise StateError(f"corrupt snapshot value {data!r}: {exc}",
                                 code="SNAPSHOT_CORRUPT") from exc
        return {k: decode(v) for k, v in data.items()}
    return data
