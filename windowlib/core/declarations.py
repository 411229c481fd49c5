"""How users declare row types (``core/schema.py`` says what the types are and how values fit).

- a DDL string in Spark's syntax: ``"n long, s double"`` (``name type`` or ``name: type``
  pairs; ``array<T>``, ``map<K, V>``, ``struct<name: T, ...>``, ``decimal(p, s)``,
  ``varchar(n)``, ``NOT NULL``, ``COMMENT '...'``), or ``"struct<n: long, s: double>"``
  (a Spark ``StructType`` is read through its ``simpleString()``);
- a dataclass or ``TypedDict`` class: its type hints give the fields (``from_class``);
- the return hint of ``process``/``apply``: ``Iterator[Stats]`` (``Iterable``, ``Generator``,
  ``list``...) of such a class (``yielded_type``).

A declaration that cannot be read is a ``DefinitionError`` (``ARGUMENT_INVALID``) naming it.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import datetime as _dt
import decimal
import re
import typing
from functools import lru_cache
from types import NoneType, UnionType
from typing import Any, NoReturn, Union

from windowlib.core.errors import DefinitionError
from windowlib.core.schema import ATOMIC, Array, Atomic, DecimalType, Field, Map, Struct

__all__ = ["declared", "from_class", "parse_ddl", "yielded_type"]

_ALIASES = {"bool": "boolean", "tinyint": "byte", "smallint": "short", "integer": "int",
            "bigint": "long", "real": "float", "timestamp_ltz": "timestamp", "dec": "decimal",
            "numeric": "decimal"}


def declared(value: Any, what: str = "result_schema") -> Struct | None:
    """The ``Struct`` a declaration describes (a DDL string, a dataclass or ``TypedDict``
    class, a Spark ``StructType``, or a ``Struct``); ``None`` for ``None``. ``what`` names it
    in errors."""
    if value is None or isinstance(value, Struct):
        return value
    if isinstance(value, str):
        return _parse_cached(value, what)
    if callable(getattr(value, "simpleString", None)):     # a Spark StructType, duck-typed
        return _parse_cached(value.simpleString(), what)
    if _is_row_class(value):
        return _class_cached(value, what)
    raise DefinitionError(f"{what} must be a DDL string such as 'n long, s double', a "
                          f"dataclass or a TypedDict class, got {value!r}",
                          code="ARGUMENT_INVALID")


def _is_row_class(value: Any) -> bool:
    return isinstance(value, type) and (dataclasses.is_dataclass(value)
                                        or typing.is_typeddict(value))


@lru_cache(maxsize=256)
def _parse_cached(text: str, what: str) -> Struct:
    return parse_ddl(text, what)


@lru_cache(maxsize=256)
def _class_cached(cls: type, what: str) -> Struct:
    return from_class(cls, what)


# --- DDL -----------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_]\w*)|(\d+)|('(?:[^'\\]|\\.)*')|"
                    r"([<>(),:]))")
_QUOTED, _WORD = 1, 2


def parse_ddl(text: str, what: str = "result_schema") -> Struct:
    """``"n long, s double"`` (or ``"struct<n: long, s: double>"``) as a ``Struct``."""
    return _Parser(text, what).schema()


class _Parser:
    def __init__(self, text: str, what: str) -> None:
        self.text, self.what = text, what
        self.tokens: list[tuple[int, str]] = []
        pos, end = 0, len(text.rstrip())
        while pos < end:
            m = _TOKEN.match(text, pos)
            if m is None:
                self.fail(f"unexpected {text[pos:].strip()[:20]!r}")
            kind = next(i for i in range(1, 6) if m.group(i) is not None)
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, why: str) -> NoReturn:
        raise DefinitionError(f"{self.what} {self.text!r}: {why} (Spark DDL such as "
                              "'n long, s double, tags array<string>')", code="ARGUMENT_INVALID")

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.tokens[j][1] if j < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if not token or (expected is not None and token.lower() != expected):
            self.fail(f"expected {expected or 'more'}, got {token or 'the end'!r}")
        self.i += 1
        return token

    def schema(self) -> Struct:
        if not self.tokens:
            self.fail("no columns")
        if self.peek().lower() == "struct" and self.peek(1) == "<":
            out = self.type_()
        else:
            out = self.fields(None)
        if self.peek():
            self.fail(f"unexpected {self.peek()!r}")
        return out

    def fields(self, closing: str | None) -> Struct:
        out: list[Field] = []
        while True:
            kind, token = self.tokens[self.i] if self.i < len(self.tokens) else (0, "")
            if kind not in (_QUOTED, _WORD):
                self.fail(f"expected a column name, got {token or 'the end'!r}")
            self.i += 1
            name = token[1:-1].replace("``", "`") if kind == _QUOTED else token
            if self.peek() == ":":
                self.take()
            dtype = self.type_()
            nullable = True
            if self.peek().lower() == "not":
                self.take()
                self.take("null")
                nullable = False
            if self.peek().lower() == "comment":
                self.take()
                if not self.take().startswith("'"):
                    self.fail("COMMENT needs a quoted string")
            if any(f.name == name for f in out):
                self.fail(f"column {name!r} appears twice")
            out.append(Field(name, dtype, nullable))
            if self.peek() != ",":
                break
            self.take()
        if closing is not None:
            self.take(closing)
        return Struct(tuple(out))

    def type_(self) -> Any:
        word = self.take().lower()
        word = _ALIASES.get(word, word)
        if word == "array":
            self.take("<")
            element = self.type_()
            self.take(">")
            return Array(element)
        if word == "map":
            self.take("<")
            key = self.type_()
            self.take(",")
            value = self.type_()
            self.take(">")
            return Map(key, value)
        if word == "struct":
            self.take("<")
            return self.fields(">")
        if word == "decimal":
            args = self.arguments()
            precision, scale = (*args, 0)[:2] if args else (10, 0)
            if len(args) > 2 or not 0 < precision <= 38 or not 0 <= scale <= precision:
                self.fail(f"decimal({', '.join(map(str, args))}) is out of range")
            return DecimalType(precision, scale)
        if word in ("varchar", "char"):
            if len(self.arguments()) != 1:
                self.fail(f"{word} needs a length")
            return Atomic("string")
        if word not in ATOMIC:
            self.fail(f"unsupported type {word!r} (supported: {', '.join(ATOMIC)}, decimal, "
                      "array, map, struct)")
        return Atomic(word)

    def arguments(self) -> list[int]:
        if self.peek() != "(":
            return []
        self.take()
        args = [self.number()]
        while self.peek() == ",":
            self.take()
            args.append(self.number())
        self.take(")")
        return args

    def number(self) -> int:
        token = self.take()
        if not token.isdigit():
            self.fail(f"expected a number, got {token!r}")
        return int(token)


# --- type hints ----------------------------------------------------------------------------

_HINTS: dict[Any, Any] = {bool: Atomic("boolean"), int: Atomic("long"), float: Atomic("double"),
                          str: Atomic("string"), bytes: Atomic("binary"),
                          _dt.datetime: Atomic("timestamp"), _dt.date: Atomic("date"),
                          decimal.Decimal: DecimalType(38, 18)}
_SEQUENCES = (list, tuple, collections.abc.Sequence)
_MAPPINGS = (dict, collections.abc.Mapping)
_ITERABLES = (list, collections.abc.Iterable, collections.abc.Iterator,
              collections.abc.Generator, collections.abc.Sequence, collections.abc.Collection)


def from_class(cls: type, what: str = "result_schema") -> Struct:
    """The fields of a dataclass or ``TypedDict`` class from its type hints: ``int`` long,
    ``float`` double, ``str`` string, ``bool`` boolean, ``bytes`` binary, ``datetime``
    timestamp, ``date`` date, ``Decimal`` decimal(38,18), ``list[T]``/``tuple[T, ...]`` array,
    ``dict[K, V]`` map, a nested dataclass/TypedDict struct; ``T | None`` is T (every column
    is nullable)."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception as exc:
        raise DefinitionError(f"{what}: cannot resolve the type hints of {cls.__qualname__} "
                              f"({exc})", code="ARGUMENT_INVALID") from exc
    names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) \
        else list(hints)
    return Struct(tuple(Field(n, _from_hint(hints[n], f"{what}: {cls.__qualname__}.{n}"))
                        for n in names))


def _from_hint(hint: Any, where: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, UnionType):
        rest = [a for a in args if a is not NoneType]
        if len(rest) == 1:
            return _from_hint(rest[0], where)
    elif hint in _HINTS:
        return _HINTS[hint]
    elif origin in _SEQUENCES and args and (origin is not tuple or args[1:] == (Ellipsis,)):
        return Array(_from_hint(args[0], where))
    elif origin in _MAPPINGS and len(args) == 2:
        return Map(_from_hint(args[0], where), _from_hint(args[1], where))
    elif _is_row_class(hint):
        return from_class(hint, where)
    raise DefinitionError(f"{where}: the type hint {hint!r} has no column type (use int, float, "
                          "str, bool, bytes, datetime, date, Decimal, list[T], tuple[T, ...], "
                          "dict[K, V], T | None, a dataclass or a TypedDict; or declare "
                          "result_schema as DDL)", code="ARGUMENT_INVALID")


def yielded_type(fn: Any) -> Struct | None:
    """The row type a callable's return hint names: ``Iterable[X]`` (``Iterator``,
    ``Generator``, ``list``...) of a dataclass or ``TypedDict`` X; ``None`` when there is no
    such hint or it cannot be resolved (e.g. a class local to a function)."""
    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception:
        return None
    args = typing.get_args(hint)
    if not args or typing.get_origin(hint) not in _ITERABLES or not _is_row_class(args[0]):
        return None
    return declared(args[0], f"the rows {getattr(fn, '__qualname__', fn)} yields")
