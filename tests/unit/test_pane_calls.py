"""``pane_calls``' per-firing values built in bulk: each firing's ``PaneInfo`` (``_panes``:
looked up by a code below pane index 64 and built above it, the core's ``pane_info`` for that
index, timing and ``is_last``; the NumPy firings of ``tests/spark/test_pane_schedule.py`` stay
below index 64), its ``TimeWindow`` (``_windows``) and its element values (``_pane_values``),
each equal to what building them one firing at a time gives."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from windowlib.core.pane import pane_info
from windowlib.core.windows import TimeWindow
from windowlib.engines.spark.pane_calls import TIMINGS, _pane_values, _panes, _windows

pytestmark = pytest.mark.unit


def test_every_firing_gets_the_cores_pane_on_both_sides_of_the_lookup_table():
    cases = list(itertools.product([0, 1, 2, 62, 63, 64, 65, 100, 5000],
                                   range(len(TIMINGS)), (0, 1)))
    index, kind, is_last = (np.array(c, dtype=np.int64) for c in zip(*cases))
    got = _panes(index, kind, is_last)
    want = [pane_info(i, TIMINGS[k], bool(f)) for i, k, f in cases]
    assert got == want
    assert [(p.index, p.timing, p.is_first, p.is_last) for p in got] == [
        (i, TIMINGS[k], i == 0, bool(f)) for i, k, f in cases]


@pytest.mark.parametrize("starts", [
    [0, 0, 300, 0, 300, 300, 600],         # repeated starts: one window object per start
    [0, 300, 600, -300],                   # all distinct
    [5],
    [],
])
def test_each_firing_gets_its_window_shared_only_between_equal_starts(starts):
    got = _windows(np.array(starts, dtype=np.int64), 300)
    assert got == [TimeWindow(s, s + 300) for s in starts]
    assert all(type(w) is TimeWindow for w in got)
    assert len({id(w) for w in got}) >= len(set(starts))


@pytest.mark.parametrize("bounds", [
    [(0, 0), (1, 1), (2, 2), (3, 5)],       # mostly single elements
    [(0, 2), (1, 3), (4, 4), (0, 5)],       # mostly longer panes (accumulating: overlaps)
    [(3, 3)],
    [],
])
def test_each_firing_gets_a_new_list_of_its_panes_elements(bounds):
    elements = [{"v": i} for i in range(6)]
    first, last = (np.array(c, dtype=np.int64).reshape(-1) for c in
                   (zip(*bounds) if bounds else ([], [])))
    got = _pane_values(elements, first, last)
    assert got == [elements[a:b + 1] for a, b in bounds]
    assert len({id(values) for values in got}) == len(got)     # the function may keep one
    for values in got:
        values.append("kept by the function")
    assert elements == [{"v": i} for i in range(6)]
