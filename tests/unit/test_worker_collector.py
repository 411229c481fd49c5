"""A walk runs with the garbage collector's full collections paused and its young ones
running (``engines/spark/worker_collector.py``): a full collection scans every live object,
the walk's buffered elements included, and at CPython's defaults took about a quarter of the
pane path's Python. Cyclic garbage that dies young is still collected, the thresholds come
back as they were after the walk (also after a failure, and when walks overlap in one
worker), and every ``mapInArrow`` walker goes through it (``make_walker``)."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import pytest

from windowlib.engines.spark.walker import make_walker
from windowlib.engines.spark.worker_collector import full_collections_paused

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def default_collector():
    """Every test starts from CPython's default thresholds, the collector on, and leaves the
    process as it found it."""
    saved, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.set_threshold(*saved)
    if not enabled:
        gc.disable()


class _Node:
    def __init__(self):
        self.other = None


def _churn(n: int) -> list:
    """``n`` long-lived containers and as many short-lived ones: enough allocations for many
    young collections."""
    kept = []
    for i in range(n):
        kept.append([i])          # (a dict of atomic values is not tracked; a list is)
        _ = [i, i]
    return kept


def _enough_for_full_collections() -> int:
    """A churn size that makes CPython run full collections at its defaults: after
    ``gc.collect()``, the long-lived objects added must outnumber a quarter of those alive."""
    gc.collect()
    return len(gc.get_objects()) // 2 + 100_000


def _full_collections() -> int:
    return gc.get_stats()[2]["collections"]


def test_no_full_collection_runs_inside_while_young_ones_do():
    n = _enough_for_full_collections()
    outside = _full_collections()
    kept = _churn(n)          # the control: at the defaults, this churn collects in full
    assert _full_collections() > outside
    del kept

    n = _enough_for_full_collections()
    before_full, before_young = _full_collections(), gc.get_stats()[0]["collections"]
    with full_collections_paused():
        kept = _churn(n)
        assert _full_collections() == before_full
        assert gc.get_stats()[0]["collections"] > before_young + 100
    assert len(kept) == n


def test_cyclic_garbage_that_dies_young_is_still_collected():
    with full_collections_paused():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        dead = weakref.ref(a)
        del a, b
        _churn(5_000)             # a few young collections, no explicit gc.collect()
        assert dead() is None


def test_thresholds_come_back_after_a_failure_and_after_overlapping_walks():
    with pytest.raises(RuntimeError), full_collections_paused():
        assert gc.get_threshold()[2] > 10
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)

    first, second = full_collections_paused(), full_collections_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)      # two generators in one worker, finished out of order
    assert gc.get_threshold()[2] > 10, "still paused while the second walk runs"
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


class _Recording:
    """A walker that records the full-collection threshold it runs with."""

    seen: list = []

    def __init__(self, config):
        self.config, self.key, self.live = config, None, 0

    def run(self, batches):
        for batch in batches:
            _Recording.seen.append(gc.get_threshold()[2])
            if batch == "fail":
                raise ValueError("a user function failed")
            yield batch


def test_every_walker_runs_with_full_collections_paused_and_restores_them():
    _Recording.seen = []
    walk = make_walker(SimpleNamespace(max_key_state=1000), _Recording)
    assert list(walk(iter([1, 2]))) == [1, 2]
    assert all(threshold > 10 for threshold in _Recording.seen) and len(_Recording.seen) == 2
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(ValueError):
        list(walk(iter([1, "fail"])))
    assert gc.get_threshold() == (700, 10, 10)
