"""``pane_calls._panes``: each firing's ``PaneInfo``, looked up by a code below pane index 64
and built above it, is the core's ``pane_info`` for that index, timing and ``is_last`` (the
NumPy firings of ``tests/spark/test_pane_schedule.py`` stay below index 64)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from windowlib.core.pane import pane_info
from windowlib.engines.spark.pane_calls import TIMINGS, _panes

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
