"""The Python worker's garbage collector while a walker runs (``walker.make_walker``).

A full collection scans every live object of the process, and a walk keeps many alive: the
buffered elements, the chunk's rows, the output rows. At CPython's default thresholds full
collections ran about 30 times per million input rows of the pane path and took about a
quarter of its Python (``docs/performance.md``). Inside ``full_collections_paused()`` only
the young generations are collected: cyclic garbage that dies young is still freed, and what
the walk keeps is scanned only when it is young. Cyclic garbage that dies old (a cycle dropped
after it survived two young collections) is left until the walk ends and the defaults apply
again (a worker that runs out of memory meanwhile still ends in ``WORKER_MEMORY_EXCEEDED``);
reference counting frees everything else at once, as always. The thresholds come back as
they were when the last walk of the process ends; walks that overlap in one worker
(generators finished out of order) count, so none of them restores the defaults under
another.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["full_collections_paused"]

#: the oldest generation's threshold inside: young collections between full ones, never met
_NO_FULL_COLLECTIONS = 1_000_000_000

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def full_collections_paused() -> Iterator[None]:
    """Full collections paused inside, young ones as configured; see the module docstring."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], _NO_FULL_COLLECTIONS)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)
