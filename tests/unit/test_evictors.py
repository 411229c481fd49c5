"""Evictor boundaries (SPEC §4, FLIP-4)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pytest

from windowlib.core.describe import describe_callable
from windowlib.core.errors import DefinitionError
from windowlib.core.evictors import (
    CountEvictor,
    DeltaEvictor,
    Evictor,
    TimeEvictor,
    TimestampedValue,
)
from windowlib.core.windows import TimeWindow

pytestmark = pytest.mark.unit

WINDOW = TimeWindow(0, 100)


@dataclass
class Ctx:
    current_watermark: int = 0
    current_processing_time: int = 0


def pane(*pairs: tuple[int, int]) -> list[TimestampedValue]:
    """Elements ``{"v": v}`` at the given timestamps, in insertion order."""
    return [TimestampedValue({"v": v}, ts) for v, ts in pairs]


def run_before(evictor: Evictor, elements: list[TimestampedValue]) -> list[int]:
    evictor.evict_before(elements, len(elements), WINDOW, Ctx())
    return [e.value["v"] for e in elements]


def abs_delta(a: dict, b: dict) -> float:
    return abs(a["v"] - b["v"])


def test_count_evictor_keeps_the_last_n_elements():
    assert run_before(CountEvictor.of(2), pane((1, 10), (2, 5), (3, 7), (4, 1))) == [3, 4]


def test_count_evictor_leaves_a_pane_at_or_below_max_count_alone():
    assert run_before(CountEvictor.of(3), pane((1, 0), (2, 0), (3, 0))) == [1, 2, 3]
    assert run_before(CountEvictor.of(3), []) == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_count_evictor_rejects_non_positive_or_non_int_max_count(bad):
    with pytest.raises(DefinitionError) as err:
        CountEvictor.of(bad)
    assert err.value.code == "ARGUMENT_INVALID"


def test_delta_evictor_removes_from_the_middle_not_just_a_prefix():
    # last value is 10; deltas 0, 9, 1, 8, 0 -> with threshold 5 the 2nd and 4th go
    elements = pane((10, 1), (1, 2), (9, 3), (2, 4), (10, 5))
    assert run_before(DeltaEvictor.of(5, abs_delta), elements) == [10, 9, 10]


def test_delta_evictor_threshold_is_inclusive():
    # deltas to last (10): 5, 4.9, 0 -> delta exactly at threshold is evicted
    elements = pane((5, 1), (5.1, 2), (10, 3))
    assert run_before(DeltaEvictor.of(5, abs_delta), elements) == [5.1, 10]


def test_delta_evictor_never_evicts_the_last_element_with_a_zero_self_delta():
    assert run_before(DeltaEvictor.of(1, abs_delta), pane((7, 0))) == [7]
    assert run_before(DeltaEvictor.of(1, abs_delta), []) == []


def test_time_evictor_evicts_the_element_exactly_at_max_ts_minus_interval():
    # max_ts 100, interval 10 -> cutoff 90: 89 and 90 go, 91 stays (Flink: ts <= cutoff)
    elements = pane((1, 89), (2, 90), (3, 100), (4, 95), (5, 91))
    assert run_before(TimeEvictor.of(10), elements) == [3, 4, 5]


def test_time_evictor_with_a_zero_interval_evicts_everything():
    # cutoff = max_ts: every element is on or below it (Flink's rule, not special-cased)
    elements = pane((1, 7), (2, 9), (3, 9))
    assert run_before(TimeEvictor.of(0), elements) == []


def test_time_evictor_uses_the_largest_timestamp_not_the_last_element():
    elements = pane((1, 100), (2, 50), (3, 95))
    assert run_before(TimeEvictor.of("10 ms"), elements) == [1, 3]


def test_time_evictor_parses_durations_and_ignores_an_empty_pane():
    assert TimeEvictor.of("2 seconds").interval_ms == 2_000
    assert run_before(TimeEvictor.of(10), []) == []
    with pytest.raises(DefinitionError) as err:
        TimeEvictor.of(-1)
    assert err.value.code == "ARGUMENT_INVALID"


@pytest.mark.parametrize("evictor_cls, args", [
    (CountEvictor, (1,)),
    (DeltaEvictor, (1, abs_delta)),
    (TimeEvictor, (1,)),
])
def test_do_evict_after_moves_eviction_after_the_function(evictor_cls, args):
    before = evictor_cls.of(*args)
    after = evictor_cls.of(*args, do_evict_after=True)
    elements = pane((1, 0), (5, 10))

    after.evict_before(elements, 2, WINDOW, Ctx())
    before.evict_after(elements, 2, WINDOW, Ctx())
    assert [e.value["v"] for e in elements] == [1, 5]

    after.evict_after(elements, 2, WINDOW, Ctx())
    assert [e.value["v"] for e in elements] == [5]


def test_evictors_mutate_the_list_in_place_and_never_the_values():
    elements = pane((10, 1), (1, 2), (9, 3), (2, 4), (10, 5))
    values = [e.value for e in elements]
    snapshot = copy.deepcopy(values)
    same_list = elements
    for evictor in (DeltaEvictor.of(5, abs_delta), TimeEvictor.of(2), CountEvictor.of(1)):
        evictor.evict_before(elements, len(elements), WINDOW, Ctx())
    assert same_list is elements
    assert [e.value["v"] for e in elements] == [10]
    assert values == snapshot
    assert elements[0].value is values[-1]


def test_describe_names_the_class_and_every_parameter():
    assert CountEvictor.of(3, do_evict_after=True).describe() == {
        "evictor": "windowlib.core.evictors.CountEvictor", "max_count": 3,
        "do_evict_after": True}
    assert TimeEvictor.of("1 minute").describe()["interval_ms"] == 60_000
    assert DeltaEvictor.of(2.5, abs_delta).describe()["delta_fn"] == describe_callable(abs_delta)


def test_evictors_are_frozen_configuration():
    evictor = CountEvictor.of(3)
    with pytest.raises(AttributeError):
        evictor.max_count = 4  # type: ignore[misc]
    assert evictor == CountEvictor(3) and hash(evictor) == hash(CountEvictor(3))
