"""Declarative aggregates: Spark SQL null semantics, event-time first/last, merge order."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import windowlib.aggregates as agg
from windowlib.core.errors import DefinitionError

pytestmark = pytest.mark.unit

ALL_KINDS = [
    agg.count(), agg.count("x"), agg.sum("x"), agg.min("x"), agg.max("x"), agg.mean("x"),
    agg.first("x"), agg.last("x"), agg.approx_count_distinct("x"), agg.collect_list("x"),
]


def run(a, rows, acc=None):
    """Add ``(row, ts)`` pairs to ``acc`` (a fresh accumulator by default); return the result."""
    acc = a.create_accumulator() if acc is None else acc
    for row, ts in rows:
        acc = a.add(acc, row, ts)
    return acc


def test_count_counts_rows_and_count_column_skips_nulls_and_missing():
    rows = [({"x": 1}, 0), ({"x": None}, 1), ({}, 2), ({"x": 0}, 3)]
    assert agg.count().get_result(run(agg.count(), rows)) == 4
    assert agg.count("x").get_result(run(agg.count("x"), rows)) == 2


def test_sum_of_all_nulls_is_none_and_ints_stay_ints():
    s = agg.sum("x")
    assert s.get_result(run(s, [({"x": None}, 0), ({}, 1)])) is None
    assert s.get_result(run(s, [])) is None
    result = s.get_result(run(s, [({"x": 2}, 0), ({"x": None}, 1), ({"x": 3}, 2)]))
    assert result == 5 and type(result) is int


def test_min_max_ignore_nulls():
    rows = [({"x": None}, 0), ({"x": 3}, 1), ({"x": -2}, 2), ({}, 3), ({"x": 7}, 4)]
    assert agg.min("x").get_result(run(agg.min("x"), rows)) == -2
    assert agg.max("x").get_result(run(agg.max("x"), rows)) == 7
    assert agg.max("x").get_result(run(agg.max("x"), rows[:1])) is None


def test_mean_is_a_float_over_non_null_values_and_none_when_empty():
    m = agg.mean("x")
    result = m.get_result(run(m, [({"x": 1}, 0), ({"x": None}, 1), ({"x": 2}, 2)]))
    assert result == 1.5 and isinstance(result, float)
    assert m.get_result(run(m, [({"x": 4}, 0), ({"x": 4}, 1)])) == 4.0
    assert isinstance(m.get_result(run(m, [({"x": 4}, 0)])), float)
    assert m.get_result(run(m, [({}, 0)])) is None


def test_first_and_last_go_by_event_time_not_arrival():
    rows = [({"x": "b"}, 20), ({"x": "a"}, 10), ({"x": None}, 5), ({"x": "c"}, 30),
            ({"x": None}, 40)]
    assert agg.first("x").get_result(run(agg.first("x"), rows)) == "a"
    assert agg.last("x").get_result(run(agg.last("x"), rows)) == "c"


def test_first_keeps_the_earliest_arrival_and_last_the_latest_on_equal_timestamps():
    rows = [({"x": "p"}, 10), ({"x": "q"}, 10), ({"x": "r"}, 10)]
    assert agg.first("x").get_result(run(agg.first("x"), rows)) == "p"
    assert agg.last("x").get_result(run(agg.last("x"), rows)) == "r"


def test_merge_treats_the_first_accumulator_as_earlier_on_ties():
    for a, expected in ((agg.first("x"), "early"), (agg.last("x"), "late")):
        early = run(a, [({"x": "early"}, 10)])
        late = run(a, [({"x": "late"}, 10)])
        assert a.get_result(a.merge(early, late)) == expected
        assert a.get_result(a.merge(a.create_accumulator(), late)) == "late"
        assert a.get_result(a.merge(early, a.create_accumulator())) == "early"


def test_merge_still_prefers_event_time_over_merge_order():
    a_first, a_last = agg.first("x"), agg.last("x")
    older, newer = [({"x": "old"}, 1)], [({"x": "new"}, 2)]
    assert a_first.get_result(a_first.merge(run(a_first, newer), run(a_first, older))) == "old"
    assert a_last.get_result(a_last.merge(run(a_last, newer), run(a_last, older))) == "new"


def test_collect_list_keeps_arrival_order_across_merge_and_skips_nulls():
    c = agg.collect_list("x")
    a = run(c, [({"x": 3}, 9), ({"x": None}, 1), ({"x": 1}, 0)])
    b = run(c, [({"x": 2}, 5), ({}, 6), ({"x": 3}, 7)])
    assert c.get_result(c.merge(a, b)) == [3, 1, 2, 3]
    assert c.get_result(c.merge(b, a)) == [2, 3, 3, 1]


def test_approx_count_distinct_is_exact_in_the_reference_and_merges_by_union():
    d = agg.approx_count_distinct("x")
    a = run(d, [({"x": 3}, 0), ({"x": 1}, 1), ({"x": 3}, 2), ({"x": None}, 3)])
    b = run(d, [({"x": 1}, 4), ({"x": 5}, 5), ({}, 6)])
    assert d.get_result(a) == 2
    assert d.get_result(d.merge(a, b)) == 3
    assert d.merge(a, b) == [1, 3, 5]


def test_results_do_not_alias_accumulators_and_merge_does_not_mutate_its_arguments():
    c = agg.collect_list("x")
    acc = run(c, [({"x": 1}, 0)])
    result = c.get_result(acc)
    c.add(acc, {"x": 2}, 1)
    assert result == [1]
    for a in ALL_KINDS:
        left = run(a, [({"x": 1}, 0), ({"x": 2}, 5)])
        right = run(a, [({"x": 1}, 0), ({"x": 3}, 5)])
        before = copy.deepcopy((left, right))
        a.merge(left, right)
        assert (left, right) == before, a.kind


def test_add_never_mutates_the_row():
    row = {"x": 4, "y": [1]}
    frozen = copy.deepcopy(row)
    for a in ALL_KINDS:
        run(a, [(row, 0)])
    assert row == frozen


@pytest.mark.parametrize("a", ALL_KINDS, ids=lambda a: a.name)
def test_accumulators_round_trip_through_json_and_keep_adding(a):
    first_half = [({"x": 5}, 3), ({"x": None}, 1), ({"x": 2}, 3)]
    second_half = [({"x": 9}, 0), ({"x": 2}, 8), ({}, 2)]
    direct = run(a, second_half, run(a, first_half))
    restored = json.loads(json.dumps(run(a, first_half)))
    assert a.get_result(run(a, second_half, restored)) == a.get_result(direct)


def test_default_names_and_alias():
    assert [a.name for a in ALL_KINDS] == [
        "count", "count_x", "sum_x", "min_x", "max_x", "mean_x", "first_x", "last_x",
        "approx_count_distinct_x", "collect_list_x"]
    s = agg.sum("amount")
    total = s.alias("total")
    assert total.name == "total" and s.name == "sum_amount"
    assert total.describe() == {"kind": "sum", "column": "amount", "name": "total"}


@pytest.mark.parametrize("bad", ["", "1abc", "with space", None, 3])
def test_alias_rejects_non_identifier_names(bad):
    with pytest.raises(DefinitionError) as err:
        agg.sum("amount").alias(bad)
    assert err.value.code == "ARGUMENT_INVALID"


def test_aggregates_other_than_count_need_a_column():
    with pytest.raises(DefinitionError) as err:
        agg.sum(None)  # type: ignore[arg-type]
    assert err.value.code == "ARGUMENT_INVALID"


def test_aggregate_set_results_are_named_in_declaration_order():
    s = agg.AggregateSet([agg.sum("amount").alias("total"), agg.count(), agg.max("amount")])
    assert s.output_names == ("total", "count", "max_amount")
    acc = s.create_accumulator()
    for i, amount in enumerate([3, None, 4]):
        acc = s.add(acc, {"amount": amount}, i)
    assert list(s.get_result(acc).items()) == [("total", 7), ("count", 3), ("max_amount", 4)]
    merged = s.merge(acc, s.add(s.create_accumulator(), {"amount": 10}, 9))
    assert s.get_result(merged) == {"total": 17, "count": 4, "max_amount": 10}
    assert json.loads(json.dumps(acc)) == acc
    assert s.describe()["aggregates"][0] == {"kind": "sum", "column": "amount", "name": "total"}


def test_aggregate_set_rejects_duplicate_names_naming_the_duplicate():
    with pytest.raises(DefinitionError) as err:
        agg.AggregateSet([agg.sum("a"), agg.count(), agg.sum("a")])
    assert err.value.code == "ARGUMENT_INVALID"
    assert "sum_a" in str(err.value)


@pytest.mark.parametrize("bad", [[], [agg.count(), "sum_a"], [lambda a, b: a]])
def test_aggregate_set_rejects_empty_or_foreign_members(bad):
    with pytest.raises(DefinitionError) as err:
        agg.AggregateSet(bad)
    assert err.value.code == "ARGUMENT_INVALID"


values = st.one_of(st.none(), st.integers(-50, 50))
rows_st = st.lists(
    st.tuples(st.one_of(st.just({}), st.builds(lambda v: {"x": v}, values)),
              st.integers(0, 20)),
    max_size=30)


@given(rows=rows_st, data=st.data())
def test_merging_a_split_equals_adding_everything_to_one_accumulator(rows, data):
    split = data.draw(st.integers(0, len(rows)), label="split")
    whole = agg.AggregateSet(ALL_KINDS)
    one = run(whole, rows)
    merged = whole.merge(run(whole, rows[:split]), run(whole, rows[split:]))
    assert whole.get_result(merged) == whole.get_result(one)
    for a in ALL_KINDS:
        single = a.merge(run(a, rows[:split]), run(a, rows[split:]))
        assert a.get_result(single) == a.get_result(run(a, rows)), a.kind
