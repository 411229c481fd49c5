"""Declared row types: Spark DDL and type hints read into one plain ``Struct``
(``core/declarations.py``), and the one rule every engine checks values with
(``Struct.conform``, ``core/schema.py``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

import windowlib as wl
from windowlib.core.declarations import declared, from_class, parse_ddl, yielded_type
from windowlib.core.schema import Array, Atomic, DecimalType, Field, Map, Mismatch, Struct

pytestmark = pytest.mark.unit


@dataclasses.dataclass
class Point:
    x: float
    label: str | None


@dataclasses.dataclass
class Stats:
    n: int
    s: float
    tags: list[str]
    first: dt.datetime | None
    where: Point
    counts: dict[str, int]


class Audit(TypedDict):
    key: str
    n: int


# --- DDL ----------------------------------------------------------------------------------------

def test_ddl_reads_spark_type_names_aliases_and_nesting():
    s = parse_ddl("n bigint, s DOUBLE, i int, b bool, d decimal(5, 2), name varchar(10), "
                  "`odd name` string, tags array<string>, m map<string, array<long>>, "
                  "p struct<x: double, y double> NOT NULL COMMENT 'a point'")
    assert s == Struct((
        Field("n", Atomic("long")), Field("s", Atomic("double")), Field("i", Atomic("int")),
        Field("b", Atomic("boolean")), Field("d", DecimalType(5, 2)),
        Field("name", Atomic("string")), Field("odd name", Atomic("string")),
        Field("tags", Array(Atomic("string"))),
        Field("m", Map(Atomic("string"), Array(Atomic("long")))),
        Field("p", Struct((Field("x", Atomic("double")), Field("y", Atomic("double")))),
              nullable=False)))
    assert parse_ddl(s.columns_ddl()) == s == parse_ddl(s.ddl())
    assert parse_ddl("struct<n:bigint,s:double>") == parse_ddl("n long, s double")


@pytest.mark.parametrize("text", ["", "n", "n long,", "n long extra", "n foo", "n long, n int",
                                  "n decimal(40, 2)", "n array<long", "n map<string>",
                                  "n interval"])
def test_unreadable_ddl_is_a_definition_error_naming_it(text):
    with pytest.raises(wl.DefinitionError) as info:
        parse_ddl(text)
    assert info.value.code == "ARGUMENT_INVALID"
    assert repr(text) in str(info.value)


# --- type hints ---------------------------------------------------------------------------------

def test_dataclass_and_typeddict_hints_give_the_columns():
    assert from_class(Stats).columns_ddl() == (
        "n long, s double, tags array<string>, first timestamp, "
        "where struct<x: double, label: string>, counts map<string,long>")
    assert from_class(Audit) == parse_ddl("key string, n long")
    assert declared(Audit) == declared("key string, n long")


def test_the_return_hint_of_a_function_names_the_rows_it_yields():
    def yields(key, context, elements) -> Iterator[Stats]:
        yield from ()

    def plain(key, context, elements) -> Iterator[dict]:
        yield from ()

    assert yielded_type(yields) == from_class(Stats)
    assert yielded_type(plain) is None
    assert yielded_type(lambda k, c, e: ()) is None


def test_a_hint_without_a_column_type_is_a_definition_error():
    @dataclasses.dataclass
    class Bad:
        n: int
        what: object

    with pytest.raises(wl.DefinitionError, match=r"Bad\.what"):
        from_class(Bad)


# --- conforming values --------------------------------------------------------------------------

SCHEMA = parse_ddl("n long, s double, f float, d decimal(5,2), t timestamp, day date, "
                   "tags array<string>, m map<string, int>, p struct<x: double, label: string>")


def test_conform_returns_the_declared_fields_in_canonical_form():
    aware = dt.datetime(2024, 3, 10, 13, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    row = SCHEMA.conform({"p": Point(1, None), "n": 2, "s": 3, "f": 0.1, "d": Decimal("1.5"),
                          "t": aware, "tags": ("a", "b"), "m": {"k": 1}})
    assert list(row) == list(SCHEMA.names)
    assert row == {"n": 2, "s": 3.0, "f": 0.10000000149011612, "d": Decimal("1.50"),
                   "t": dt.datetime(2024, 3, 10, 11, 0), "day": None, "tags": ["a", "b"],
                   "m": {"k": 1}, "p": {"x": 1.0, "label": None}}
    assert repr(row["s"]) == "3.0" and repr(row["d"]) == "Decimal('1.50')"


@pytest.mark.parametrize(("row", "path", "detail"), [
    ({"n": 1.0}, "n", "expects long, got float 1.0"),
    ({"n": True}, "n", "expects long, got bool True"),
    ({"n": 2**63}, "n", "out of range"),
    ({"s": "1.5"}, "s", "expects double, got str '1.5'"),
    ({"d": Decimal("1.234")}, "d", "does not fit"),
    ({"d": 1000}, "d", "does not fit"),
    ({"t": 1_700_000_000_000}, "t", "expects timestamp"),
    ({"day": dt.datetime(2024, 1, 1)}, "day", "expects date"),
    ({"tags": ["a", 1]}, "tags[1]", "expects string, got int 1"),
    ({"m": {"k": "v"}}, "m['k']", "expects int"),
    ({"p": {"x": 1, "y": 2}}, "p.y", "is not declared (declared: x, label)"),
    ({"extra": 1}, "extra", "is not declared"),
])
def test_a_value_that_does_not_fit_names_its_field(row, path, detail):
    with pytest.raises(Mismatch) as info:
        SCHEMA.conform(row)
    assert info.value.path == path
    assert detail in info.value.detail


def test_not_null_fields_refuse_none():
    with pytest.raises(Mismatch, match="NOT NULL"):
        parse_ddl("n long NOT NULL").conform({})


def _conformed(schema: str, row: dict) -> tuple:
    """``("ok", value, its type)`` of field ``a``'s value, or ``("mismatch", detail)``."""
    try:
        value = parse_ddl(schema).conform(row)["a"]
    except Mismatch as exc:
        return "mismatch", exc.detail
    value = value[0] if isinstance(value, list) else value
    return "ok", value, type(value)


EDGES = [v for bits in (8, 16, 32, 64) for v in (-(1 << (bits - 1)) - 1, -(1 << (bits - 1)),
                                                  (1 << (bits - 1)) - 1, 1 << (bits - 1))]


@given(st.sampled_from(["byte", "short", "int", "long", "double", "float", "string",
                        "boolean", "binary", "date", "timestamp", "decimal(5,2)"]),
       st.one_of(st.none(), st.booleans(), st.sampled_from(EDGES),
                 st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=False),
                 st.text(max_size=3), st.binary(max_size=3),
                 st.binary(max_size=3).map(bytearray), st.decimals(places=3, allow_nan=False),
                 st.dates(), st.datetimes(), st.lists(st.integers(), max_size=2)))
def test_a_rows_field_conforms_as_the_same_value_in_an_array(kind, value):
    """A row's converter keeps values of exactly its fields' types without calling their
    converters (``schema._as_is``): every value must come out of a row's field exactly as
    the same value out of an array of that type, which is converted value by value."""
    assert _conformed(f"a {kind}", {"a": value}) == _conformed(f"a array<{kind}>",
                                                               {"a": [value]})


def test_a_spark_struct_type_declares_through_its_simple_string():
    class StructTypeLike:             # what pyspark's StructType offers (no JVM needed)
        def simpleString(self):
            return "struct<n:bigint,tags:array<string>,m:map<string,decimal(10,2)>>"

    assert declared(StructTypeLike()) == parse_ddl(
        "n long, tags array<string>, m map<string, decimal(10, 2)>")
