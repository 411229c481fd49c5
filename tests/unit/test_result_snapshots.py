"""A firing keeps its results as they were when the function produced them, and each window
keeps its own copy of its elements.

A window function may keep what it returned and change it afterwards: a list it grows, a dict
it updates, an accumulator that ``get_result`` hands out as it is. Flink's collector sends
each record on when it is emitted, so later changes never reach an emitted record. Here every
engine receives a function's rows from ``core/runner.py``, which copies them at the call
(nested lists, dicts and sets too). The Spark paths encode rows later than the reference engine:
the pane path encodes a whole chunk of firings at once. These tests pin the copy on the reference
engine. ``tests/spark/test_pane_path.py`` checks that both Spark paths give the same rows.

An element of several windows (sliding windows) is held by each window as its own copy: a
function that changes the elements it is given changes them for later firings of that window
only (the pane path, which builds each window's elements apart, always did).
"""

from __future__ import annotations

import pytest
from strategies import CarelessFn, value_delta

import windowlib as wl
from windowlib.core.copies import kept, kept_row
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.unit

# four windows of key "a", fired in order at the end of the input
BUNDLES = [Bundle([{"key": "a", "ts": t, "value": v} for t, v in ((1, 1), (12, 2), (23, 3),
                                                                   (34, 4))])]


def tumbling(name: str = "snap") -> wl.Pipeline:
    return (wl.Pipeline(name, timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(10)))


class KeepsAList(wl.ProcessWindowFunction):
    """Yields rows holding the list (and a dict in it) it keeps growing."""

    def __init__(self) -> None:
        self.seen: list = []

    def process(self, key, context, elements):
        self.seen.append({"v": elements[0]["value"]})
        yield {"seen": self.seen, "last": self.seen[-1]}
        self.seen[-1]["v"] = -1      # after the yield: changes what the row holds


class KeepsAValue(wl.ProcessWindowFunction):
    """Returns a list itself (a ``result`` column), then keeps growing it."""

    def __init__(self) -> None:
        self.seen: list = []

    def process(self, key, context, elements):
        self.seen.append(elements[0]["value"])
        return [self.seen]


class Audits(wl.ProcessWindowFunction):
    """Sends a list it keeps growing to a side output."""

    def __init__(self) -> None:
        self.seen: list = []

    def process(self, key, context, elements):
        self.seen.append(elements[0]["value"])
        context.output("audit", {"seen": self.seen})
        yield {"n": len(elements)}


class ListAggregate(wl.AggregateFunction):
    """An accumulator that is its own result: later elements change the same list."""

    def create_accumulator(self):
        return {"values": []}

    def add(self, value, accumulator):
        accumulator["values"].append(value["value"])
        return accumulator

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return {"values": a["values"] + b["values"]}


# what ``KeepsAList``'s rows hold when each keeps what it held as it was yielded: the list
# grows, and every earlier dict in it was changed after its own firing
SEEN_AS_YIELDED = [[{"v": 1}], [{"v": -1}, {"v": 2}], [{"v": -1}, {"v": -1}, {"v": 3}],
                   [{"v": -1}, {"v": -1}, {"v": -1}, {"v": 4}]]


def test_rows_keep_nested_values_as_they_were_yielded():
    rows = run_bundles(tumbling().process(KeepsAList()), BUNDLES, finalize=True)
    assert [r["seen"] for r in rows] == SEEN_AS_YIELDED
    assert [r["last"] for r in rows] == [{"v": 1}, {"v": 2}, {"v": 3}, {"v": 4}]


def test_typed_rows_keep_nested_values_as_they_were_yielded():
    """With a declared type the row is conformed as it is taken, in place of the copy: the
    conformed row must hold new lists and dicts, never the function's own."""
    class KeepsATypedList(KeepsAList):
        result_schema = "seen array<struct<v: long>>, last struct<v: long>"

    rows = run_bundles(tumbling().process(KeepsATypedList()), BUNDLES, finalize=True)
    assert [r["seen"] for r in rows] == SEEN_AS_YIELDED
    assert [r["last"] for r in rows] == [{"v": 1}, {"v": 2}, {"v": 3}, {"v": 4}]


def test_typed_rows_after_an_aggregate_keep_nested_values_as_they_were_yielded():
    """The same through an aggregate's process function (``FunctionRunner.results``)."""
    class KeepsATypedListOfTheAccumulator(wl.ProcessWindowFunction):
        result_schema = "seen array<struct<v: long>>"

        def __init__(self) -> None:
            self.seen: list = []

        def process(self, key, context, elements):
            self.seen.append({"v": elements[0]["values"][-1]})
            yield {"seen": self.seen}
            self.seen[-1]["v"] = -1

    p = tumbling().aggregate(ListAggregate(), process_fn=KeepsATypedListOfTheAccumulator())
    rows = run_bundles(p, BUNDLES, finalize=True)
    assert [r["seen"] for r in rows] == SEEN_AS_YIELDED


def test_a_returned_value_is_kept_as_it_was_returned():
    rows = run_bundles(tumbling().process(KeepsAValue()), BUNDLES, finalize=True)
    assert [r["result"] for r in rows] == [[1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]


def test_side_output_values_are_kept_as_they_were_sent():
    _, side = run_bundles(tumbling().process(Audits()), BUNDLES, finalize=True,
                          with_side_outputs=True)
    assert [v["seen"] for v in side["audit"]] == [[1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]


def test_an_accumulator_handed_out_by_get_result_is_kept_per_firing():
    p = (tumbling().trigger(wl.CountTrigger.of(1)).aggregate(ListAggregate()))
    rows = run_bundles(p, [Bundle([{"key": "a", "ts": t, "value": t} for t in (1, 2, 3)])],
                       finalize=True)
    assert [r["values"] for r in rows] == [[1], [1, 2], [1, 2, 3]]


def test_values_that_cannot_change_are_not_copied():
    """Scalars, subclasses of them and values that cannot be copied stay the same objects."""
    import threading

    class Label(str):
        pass

    lock = threading.Lock()
    row = {"label": Label("x"), "n": 1, "lock": lock}
    copied = kept_row(row)
    assert copied["label"] is row["label"] and copied["lock"] is lock
    nested = {"items": [1, [2]]}
    copied = kept_row(nested)
    assert copied == nested and copied["items"] is not nested["items"]
    assert copied["items"][1] is not nested["items"][1]


def _elements() -> list[dict]:
    return [{"key": "a", "ts": t, "value": t} for t in (1, 2, 3, 6)]


def test_each_window_keeps_its_own_copy_of_an_element():
    sliding = (wl.Pipeline("own", timestamp="ts").key_by("key")
               .window(wl.SlidingEventTimeWindows.of(10, 5)).process(CarelessFn()))
    rows = run_bundles(sliding, [Bundle(_elements())], finalize=True)
    assert [(r["window_start"], r["values"]) for r in rows] == [
        (-5, [1, 2, 3]), (0, [1, 2, 3, 6]), (5, [6])]
    # the window's own copy: a later firing of the same window sees the change
    early = (wl.Pipeline("same", timestamp="ts").key_by("key")
             .window(wl.TumblingEventTimeWindows.of(10)).trigger(wl.CountTrigger.of(2))
             .process(CarelessFn()))
    rows = run_bundles(early, [Bundle(_elements())], finalize=True)
    assert [r["values"] for r in rows] == [[1, 2], [101, 102, 3, 6]]


def test_a_trigger_sees_its_own_windows_copy_of_an_element():
    """An element of five sliding windows whose first window fires on it (a delta trigger)
    and whose function changes its elements: the next windows' triggers see the element as it
    came, so the five windows, which hold the same elements, fire alike (found by
    ``tests/spark/test_differential_properties.py``: the reference engine handed the first
    window's changed element to the other windows' triggers)."""
    p = (wl.Pipeline("delta_own", timestamp="ts")
         .window_all(wl.SlidingEventTimeWindows.of(5, 1))
         .trigger(wl.DeltaTrigger.of(2, value_delta)).process(CarelessFn()))
    bundles = [Bundle([{"key": "a", "ts": -15, "value": v}]) for v in (3, 0, 0)]
    rows = run_bundles(p, bundles)
    fired: dict = {}
    for r in rows:
        fired.setdefault(r["window_start"], []).append((r["idx"], r["values"]))
    assert sorted(fired) == [-19, -18, -17, -16, -15]
    assert all(panes == fired[-19] for panes in fired.values()), fired


def test_a_run_leaves_the_callers_elements_as_they_were():
    """The reference engine takes its own copy of each element it is given."""
    elements = _elements()
    before = [dict(e) for e in elements]
    p = (wl.Pipeline("input", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(CarelessFn()))
    first = run_bundles(p, [Bundle(elements)], finalize=True)
    assert elements == before
    assert run_bundles(p, [Bundle(elements)], finalize=True) == first


class TagsItsElements(wl.ProcessWindowFunction):
    """Appends to a list inside each element."""

    def process(self, key, context, elements):
        for e in elements:
            e["tags"].append("seen")
        yield {"tags": [e["tags"] for e in elements]}


def test_nested_values_of_the_callers_elements_stay_as_they_were():
    elements = [{"key": "a", "ts": 1, "tags": []}, {"key": "a", "ts": 12, "tags": ["x"]}]
    p = (wl.Pipeline("nested_input", timestamp="ts").key_by("key")
         .window(wl.SlidingEventTimeWindows.of(20, 10)).process(TagsItsElements()))
    rows = run_bundles(p, [Bundle(elements)], finalize=True)
    assert [e["tags"] for e in elements] == [[], ["x"]]
    # each window its own copy, nested lists included
    assert [r["tags"] for r in rows] == [[["seen"]], [["seen"], ["x", "seen"]], [["x", "seen"]]]


def test_nested_copies_keep_kinds_and_cycles():
    """The copy keeps each container's kind, copies other objects deeply, and keeps a
    cyclic value (copied by ``deepcopy``)."""
    import dataclasses as dc

    @dc.dataclass
    class Box:
        items: list

    value = {"t": (1, [2]), "s": {3}, "box": Box([4]), "l": [{"k": [5]}]}
    copied = kept(value)
    assert copied == value and type(copied["t"]) is tuple and type(copied["s"]) is set
    assert copied["t"][1] is not value["t"][1] and copied["box"].items is not value["box"].items
    assert copied["l"][0]["k"] is not value["l"][0]["k"]
    cyclic: list = [1]
    cyclic.append(cyclic)
    copied = kept(cyclic)
    assert copied is not cyclic and copied[1] is copied
