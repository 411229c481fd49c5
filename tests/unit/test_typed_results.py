"""Python window functions declare their results and side outputs (SPEC §6, §9) and the
reference engine checks them: rows conformed to the declared columns, a value that does not fit
is ``RESULT_SCHEMA_MISMATCH`` naming field, key and window; side outputs come back from
``run_bundles(..., with_side_outputs=True)``. Declarations type outputs only: fingerprints do
not move."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TypedDict

import pytest

import windowlib as wl
from windowlib.core.declarations import parse_ddl
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.unit


class Stats(wl.ProcessWindowFunction):
    result_schema = "n long, s double"

    def process(self, key, context, elements):
        yield {"n": len(elements), "s": sum(e["value"] for e in elements)}


@dataclasses.dataclass
class Summary:
    n: int
    mean: float | None


class Summarize(wl.ProcessWindowFunction):
    def process(self, key, context, elements) -> Iterator[Summary]:
        values = [e["value"] for e in elements]
        yield Summary(len(values), sum(values) / len(values) if values else None)


class Row(TypedDict):
    n: int
    first: int


def count_and_first(key, window, elements):
    return [{"n": len(elements), "first": elements[0]["value"]}]


count_and_first.result_schema = Row


class Big(wl.ProcessWindowFunction):
    big = wl.OutputTag("big", schema="key string, n long")

    def process(self, key, context, elements):
        context.output(self.big, {"key": key, "n": len(elements)})
        context.output(wl.OutputTag("audit"), (key, context.pane.index))
        yield {"n": len(elements)}


def P(name: str = "p") -> wl.Pipeline:
    return (wl.Pipeline(name, timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)))


BUNDLES = [Bundle([{"key": "a", "ts": 1, "value": 2}, {"key": "a", "ts": 3, "value": 4},
                   {"key": "b", "ts": 12, "value": 5}]),
           Bundle([{"key": "a", "ts": 2, "value": 1}], watermark=100)]


def fired(pipeline: wl.Pipeline, **kwargs):
    return run_bundles(pipeline, BUNDLES, finalize=True, **kwargs)


# --- typed results ------------------------------------------------------------------------------

def test_a_result_schema_attribute_conforms_the_rows():
    rows = fired(P().process(Stats()))
    assert [(r["key"], r["n"], r["s"]) for r in rows] == [("a", 2, 6.0), ("b", 1, 5.0)]
    assert all(type(r["s"]) is float for r in rows)


def test_rows_of_a_yielded_dataclass_typed_by_the_return_hint():
    p = P().process(Summarize())
    assert p.function.result_type == parse_ddl("n long, mean double")
    rows = fired(p)
    assert [(r["n"], r["mean"]) for r in rows] == [(2, 3.0), (1, 5.0)]


def test_apply_functions_declare_with_a_typeddict():
    p = P().apply(count_and_first)
    assert p.function.result_type == parse_ddl("n long, first long")
    assert [(r["n"], r["first"]) for r in fired(p)] == [(2, 2), (1, 5)]


def test_missing_fields_are_null_and_every_declared_column_is_there():
    class Partial(wl.ProcessWindowFunction):
        result_schema = "n long, label string"

        def process(self, key, context, elements):
            yield {"n": len(elements)}

    assert [r["label"] for r in fired(P().process(Partial()))] == [None, None]


@pytest.mark.parametrize(("row", "field"), [({"n": "two", "s": 1.0}, "n"),
                                            ({"n": 1, "s": 1.0, "extra": 1}, "extra")])
def test_a_row_that_does_not_fit_names_field_key_and_window(row, field):
    class Wrong(wl.ProcessWindowFunction):
        result_schema = "n long, s double"

        def process(self, key, context, elements):
            yield row

    with pytest.raises(wl.ExecutionError) as info:
        fired(P().process(Wrong()))
    assert info.value.code == "RESULT_SCHEMA_MISMATCH"
    message = str(info.value)
    assert f"field {field!r}" in message and "key 'a'" in message
    assert "TimeWindow(0, 10)" in message


class CountAggregate(wl.AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


@pytest.mark.parametrize("after_an_aggregate", [False, True])
def test_the_first_row_that_does_not_fit_fails_before_the_function_goes_on(after_an_aggregate):
    """Rows are conformed as they are taken: a function is not resumed after a row that
    does not fit, directly or behind an aggregate alike."""
    class WrongThenFails(wl.ProcessWindowFunction):
        result_schema = "n long"

        def process(self, key, context, elements):
            yield {"n": "two"}
            raise RuntimeError("resumed after a row that does not fit")

    p = (P().aggregate(CountAggregate(), process_fn=WrongThenFails()) if after_an_aggregate
         else P().process(WrongThenFails()))
    with pytest.raises(wl.ExecutionError) as info:
        fired(p)
    assert info.value.code == "RESULT_SCHEMA_MISMATCH", str(info.value)
    assert "field 'n'" in str(info.value) and "key 'a'" in str(info.value)


@pytest.mark.parametrize(("schema", "why"), [("n lng", "unsupported type"),
                                             ("n long, timing string", "set by windowlib"),
                                             (42, "DDL string")])
def test_an_unreadable_declaration_fails_where_the_pipeline_is_built(schema, why):
    class Declares(wl.ProcessWindowFunction):
        result_schema = schema

        def process(self, key, context, elements):
            yield {}

    with pytest.raises(wl.DefinitionError, match=why):
        P().process(Declares())


def test_declarations_do_not_change_fingerprints():
    """A run's own declaration types the output only; pipelines that declare nothing keep
    their fingerprint (the golden checkpoints pin those of existing definitions)."""
    p = P().process(Summarize())
    spec = p.function.with_result_schema("n long, mean double")
    assert spec == p.function and spec.describe() == p.function.describe()
    with pytest.raises(wl.DefinitionError, match="declare them once"):
        p.function.with_result_schema("n long")


# --- side outputs -------------------------------------------------------------------------------

def test_run_bundles_returns_side_outputs_by_tag():
    p = P().process(Big())
    firings, side = fired(p, with_side_outputs=True)
    assert [r["n"] for r in firings] == [2, 1]
    assert side == {"big": [{"key": "a", "n": 2}, {"key": "b", "n": 1}],
                    "audit": [("a", 0), ("b", 0)]}
    firings2, late, side2 = fired(p, with_late=True, with_side_outputs=True)
    assert (firings2, side2) == (firings, side) and [r["value"] for r in late] == [1]


def test_a_typed_side_output_value_that_does_not_fit_names_field_key_and_window():
    class Wrong(wl.ProcessWindowFunction):
        big = wl.OutputTag("big", schema="key string, n long")

        def process(self, key, context, elements):
            context.output(self.big, {"key": key, "n": "many"})
            yield {}

    with pytest.raises(wl.ExecutionError) as info:
        fired(P().process(Wrong()))
    assert info.value.code == "RESULT_SCHEMA_MISMATCH"
    assert "side output 'big'" in str(info.value) and "field 'n'" in str(info.value)
    assert "key 'a'" in str(info.value)


def test_a_tag_with_a_schema_must_be_declared_on_the_function():
    class Inline(wl.ProcessWindowFunction):
        def process(self, key, context, elements):
            context.output(wl.OutputTag("big", schema="n long"), {"n": 1})
            yield {}

    with pytest.raises(wl.ExecutionError) as info:
        fired(P().process(Inline()))
    assert info.value.code == "SIDE_OUTPUT_UNDECLARED"
