"""``pane_schedule.stable_lexsort`` is ``np.lexsort``: the same order (ties in input order)
whether the keys are packed into one ``int64`` (ranges that fit, with a common step) or
not (ranges too wide together, or one key wider than ``int64`` differences can hold)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowlib.engines.spark.pane_schedule import stable_lexsort

pytestmark = pytest.mark.unit

I64 = np.iinfo(np.int64)


def _keys(*columns: list[int]) -> tuple[np.ndarray, ...]:
    return tuple(np.array(c, dtype=np.int64) for c in columns)


@pytest.mark.parametrize("keys", [
    _keys([], []),
    _keys([7]),
    _keys([3, 1, 2, 1, 3], [0, 0, 0, 0, 0]),                  # ties keep input order
    _keys([300_000, 0, 600_000, 0], [2, 1, 2, 1]),            # a common step: packed
    _keys([-5, 5, -5, 0], [-1, -1, 3, 3]),                    # negative values
    _keys([I64.min, I64.max, 0], [1, 1, 0]),                  # one key wider than 63 bits
    _keys([-(2**62) * 3 // 2, (2**62) * 3 // 2, 0], [0, 1, 0]),   # a difference past int64
    _keys([0, 2**40, 5], [0, 2**40, 3], [0, 2**40, 1]),       # together past 63 bits
])
def test_the_order_of_np_lexsort(keys):
    assert stable_lexsort(keys).tolist() == np.lexsort(keys).tolist()


VALUES = {      # each drawn key takes its values from one of these ranges
    "small": st.integers(-3, 3),
    "steps": st.integers(-20, 50).map(lambda v: 1_700_000_000_000 + v * 300_000),
    "wide": st.integers(-(2**40), 2**40),
    "any": st.integers(I64.min, I64.max),
}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_drawn_keys_give_the_order_of_np_lexsort(data):
    n = data.draw(st.integers(0, 40), label="rows")
    kinds = data.draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=4),
                      label="keys")
    keys = _keys(*[data.draw(st.lists(VALUES[k], min_size=n, max_size=n)) for k in kinds])
    assert stable_lexsort(keys).tolist() == np.lexsort(keys).tolist()
