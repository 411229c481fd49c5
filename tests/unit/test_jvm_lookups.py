"""``jvm_lookups.remember_jvm_lookups`` without a JVM: it wraps only the PySpark helper it
knows, once, and remembers per gateway and name; it pins classes only on a classic session's
JVM view."""

from __future__ import annotations

import types

import pytest

from windowlib.engines.spark import jvm_lookups

pytestmark = pytest.mark.unit


@pytest.fixture
def builtin(monkeypatch):
    from pyspark.sql.functions import builtin

    monkeypatch.setattr(builtin, "_get_jvm_function", builtin._get_jvm_function)
    return builtin


def _context(gateway):
    return types.SimpleNamespace(_gateway=gateway)


def test_a_lookup_is_asked_once_per_gateway_and_name(builtin, monkeypatch):
    asked = []

    def lookup(name, sc):
        asked.append((name, sc._gateway))
        return f"{name}@{sc._gateway}"

    monkeypatch.setattr(builtin, "_get_jvm_function", lookup)
    assert jvm_lookups.remember_jvm_lookups()
    remembered = builtin._get_jvm_function
    assert remembered.__wrapped__ is lookup
    first, second = object(), object()
    assert [remembered(n, _context(first)) for n in ("col", "lit", "col", "lit")] == [
        f"col@{first}", f"lit@{first}", f"col@{first}", f"lit@{first}"]
    assert remembered("col", _context(second)) == f"col@{second}"   # a new JVM: asked again
    assert asked == [("col", first), ("lit", first), ("col", second)]


def test_wrapping_twice_keeps_one_wrapper(builtin):
    assert jvm_lookups.remember_jvm_lookups()
    once = builtin._get_jvm_function
    assert jvm_lookups.remember_jvm_lookups()
    assert builtin._get_jvm_function is once


def test_a_helper_of_another_shape_is_left_alone(builtin, monkeypatch):
    def other(sc, function_name):       # what a later PySpark might have
        raise AssertionError("never called here")

    monkeypatch.setattr(builtin, "_get_jvm_function", other)
    assert not jvm_lookups.remember_jvm_lookups()
    assert builtin._get_jvm_function is other
