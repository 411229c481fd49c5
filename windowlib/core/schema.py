"""Row types of Python window functions' results and of side outputs, as plain data.

A ``Struct`` (fields of ``Atomic``, ``DecimalType``, ``Array``, ``Map`` or nested ``Struct``
types) is what a function declares (``core/declarations.py`` reads DDL strings, dataclasses and
``TypedDict`` classes into one); engines type their output columns from it
(``engines/spark/result_types.py``) and every engine checks rows with the one rule here, so all
of them accept and refuse the same values. This module imports no Spark.

``Struct.conform(row)`` returns the row in canonical form or raises ``Mismatch`` naming the
field: exactly the declared fields in order (missing ones null, undeclared ones refused); ints
accepted in float, double and decimal fields (bools never count as numbers); float fields
rounded to 32 bits; decimals at their declared scale; aware datetimes as naive UTC; tuples as
lists; dataclass instances as dicts. Nothing else is converted: a string is not a number, an
int is not a timestamp.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import decimal
import numbers
import re
import struct
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

__all__ = ["ATOMIC", "Array", "Atomic", "DecimalType", "Field", "Map", "Mismatch", "Struct",
           "sql_identifier"]

ATOMIC = ("boolean", "byte", "short", "int", "long", "float", "double", "string", "binary",
          "date", "timestamp")
_INT_BITS = {"byte": 8, "short": 16, "int": 32, "long": 64}


def sql_identifier(name: str) -> str:
    """``name`` as a Spark SQL identifier: backquoted, backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"


class Mismatch(ValueError):
    """A value does not fit its declared type; ``path`` names the field (``a.b[2]``)."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"field {path!r} {detail}")
        self.path, self.detail = path, detail


@dataclasses.dataclass(frozen=True)
class Atomic:
    name: str       # one of ATOMIC

    def ddl(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class DecimalType:
    precision: int = 10
    scale: int = 0

    def ddl(self) -> str:
        return f"decimal({self.precision},{self.scale})"


@dataclasses.dataclass(frozen=True)
class Array:
    element: Any

    def ddl(self) -> str:
        return f"array<{self.element.ddl()}>"


@dataclasses.dataclass(frozen=True)
class Map:
    key: Any
    value: Any

    def ddl(self) -> str:
        return f"map<{self.key.ddl()},{self.value.ddl()}>"


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    type: Any
    nullable: bool = True

    def ddl(self, sep: str = " ") -> str:
        name = self.name if re.fullmatch(r"[A-Za-z_]\w*", self.name) else \
            sql_identifier(self.name)
        return f"{name}{sep}{self.type.ddl()}{'' if self.nullable else ' NOT NULL'}"


@dataclasses.dataclass(frozen=True)
class Struct:
    """A row type: its fields in order."""

    fields: tuple[Field, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def columns_ddl(self) -> str:
        """``"n long, s double"``."""
        return ", ".join(f.ddl() for f in self.fields)

    def ddl(self) -> str:
        return f"struct<{', '.join(f.ddl(': ') for f in self.fields)}>"

    def conform(self, row: Any) -> dict:
        """``row`` (a mapping or a dataclass instance) in canonical form; ``Mismatch`` when
        it does not fit (see the module docstring)."""
        return self.converter()(row, "")

    def converter(self) -> Callable[[Any, str], dict]:
        """``conform`` as a function of ``(row, "")``, built once per type and kept: a caller
        that checks many rows looks it up once."""
        # by identity: hashing a frozen dataclass walks every field (once per row otherwise)
        entry = _ROW_CONVERTERS.get(id(self))
        if entry is None or entry[0] is not self:
            if len(_ROW_CONVERTERS) >= 512:
                _ROW_CONVERTERS.clear()
            entry = _ROW_CONVERTERS[id(self)] = (self, _converter(self))
        return entry[1]


_ROW_CONVERTERS: dict[int, tuple[Struct, Callable[[Any, str], Any]]] = {}


# --- conforming values ---------------------------------------------------------------------

def _wrong(path: str, expected: str, value: Any) -> Mismatch:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return Mismatch(path or "<row>", f"expects {expected}, got {type(value).__name__} {shown}")


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _int_high(name: str) -> int:
    """The integer type ``name``'s exclusive upper bound; its range is ``[-high, high)``."""
    return 1 << (_INT_BITS[name] - 1)


def _atomic(name: str) -> Callable[[Any, str], Any]:
    if name in _INT_BITS:
        high = _int_high(name)

        def integral(v: Any, path: str) -> int:
            if type(v) is int and -high <= v < high:   # the common case, without ABC checks
                return v
            if not _is_int(v):
                raise _wrong(path, name, v)
            if not -high <= int(v) < high:
                raise Mismatch(path, f"expects {name}, got {int(v)} (out of range)")
            return int(v)
        return integral
    checks: dict[str, Callable[[Any, str], Any]] = {
        "boolean": lambda v, p: bool(v) if isinstance(v, bool) else _fail(p, name, v),
        "double": lambda v, p: float(v) if isinstance(v, numbers.Real) and
        not isinstance(v, bool) else _fail(p, name, v),
        "float": _float32,
        "string": lambda v, p: str(v) if isinstance(v, str) else _fail(p, name, v),
        "binary": lambda v, p: bytes(v) if isinstance(v, bytes | bytearray | memoryview)
        else _fail(p, name, v),
        "date": lambda v, p: _dt.date(v.year, v.month, v.day)
        if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime) else _fail(p, name, v),
        "timestamp": _timestamp,
    }
    return checks[name]


def _fail(path: str, expected: str, value: Any) -> Any:
    raise _wrong(path, expected, value)


def _float32(v: Any, path: str) -> float:
    if not isinstance(v, numbers.Real) or isinstance(v, bool):
        raise _wrong(path, "float", v)
    try:
        return struct.unpack("f", struct.pack("f", float(v)))[0]
    except OverflowError:
        raise Mismatch(path, f"expects float, got {v!r} (out of range)") from None


def _timestamp(v: Any, path: str) -> _dt.datetime:
    if not isinstance(v, _dt.datetime):
        raise _wrong(path, "timestamp (a datetime)", v)
    if v.tzinfo is not None and v.utcoffset() is not None:
        v = v.astimezone(_dt.UTC)
    return _dt.datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)


def _decimal(t: DecimalType) -> Callable[[Any, str], Any]:
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    context = decimal.Context(prec=t.precision + 40)
    int_digits = t.precision - t.scale

    def conv(v: Any, path: str) -> decimal.Decimal:
        if not (isinstance(v, decimal.Decimal) or _is_int(v)):
            raise _wrong(path, t.ddl(), v)
        d = decimal.Decimal(int(v)) if _is_int(v) else v
        try:
            q = d.quantize(quantum, context=context) if d.is_finite() else None
        except decimal.InvalidOperation:
            q = None
        if q is None or q != d or (q and q.adjusted() + 1 > int_digits):
            raise Mismatch(path, f"expects {t.ddl()}, got {v!r} (does not fit)")
        return q
    return conv


def _nullable(conv: Callable[[Any, str], Any], nullable: bool) -> Callable[[Any, str], Any]:
    def check(v: Any, path: str) -> Any:
        if v is None:
            if nullable:
                return None
            raise Mismatch(path or "<row>", "is declared NOT NULL, got None")
        return conv(v, path)
    return check


@lru_cache(maxsize=512)
def _converter(t: Any) -> Callable[[Any, str], Any]:
    """``conv(value, path)`` for a non-null value of type ``t``."""
    if isinstance(t, Atomic):
        return _atomic(t.name)
    if isinstance(t, DecimalType):
        return _decimal(t)
    if isinstance(t, Array):
        element = _nullable(_converter(t.element), True)

        def array(v: Any, path: str) -> list:
            if not isinstance(v, list | tuple):
                raise _wrong(path, t.ddl(), v)
            return [element(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return array
    if isinstance(t, Map):
        key, value = _nullable(_converter(t.key), False), _nullable(_converter(t.value), True)

        def mapping(v: Any, path: str) -> dict:
            if not isinstance(v, Mapping):
                raise _wrong(path, t.ddl(), v)
            return {key(k, f"{path} key"): value(x, f"{path}[{k!r}]") for k, x in v.items()}
        return mapping
    fields = [(f.name, *_as_is(f.type), _nullable(_converter(f.type), f.nullable))
              for f in t.fields]
    names = frozenset(t.names)

    def row(v: Any, path: str) -> dict:
        if type(v) is not dict:     # plain dicts (the common case) skip the ABC checks
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                v = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
            if not isinstance(v, Mapping):
                raise _wrong(path, "a row (a dict)", v)
        if not names.issuperset(v):
            prefix = f"{path}." if path else ""
            extra = next(k for k in v if k not in names)
            raise Mismatch(f"{prefix}{extra}", f"is not declared (declared: "
                                               f"{', '.join(t.names)})")
        out = {}
        for name, exact, low, high, conv in fields:
            x = v.get(name)
            out[name] = (x if type(x) is exact and (low is None or low <= x < high) else
                         conv(x, f"{path}.{name}" if path else name))
        return out
    return row


class _NoValue:
    """A type that no value has (``_as_is``): a field of this kind converts every value."""


def _as_is(t: Any) -> tuple[type, int | None, int | None]:
    """``(type, low, high)``: a value of exactly this type (an int within ``[low, high)``)
    conforms to ``t`` as it is, so a row's converter keeps it without a call (per row, the
    calls cost more than the rest of the check); any other value goes through the field's
    converter, which decides."""
    if isinstance(t, Atomic):
        if t.name in _INT_BITS:
            high = _int_high(t.name)
            return int, -high, high
        exact = {"double": float, "string": str, "boolean": bool, "binary": bytes}.get(t.name)
        if exact is not None:
            return exact, None, None
    return _NoValue, None, None
