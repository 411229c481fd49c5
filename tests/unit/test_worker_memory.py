"""A Python worker out of memory is ``WORKER_MEMORY_EXCEEDED`` naming the key being walked (or
the user's function that ran out, with its key and window), never a bare ``MemoryError``,
``FUNCTION_FAILED`` or Spark's ``PythonException`` (the walkers report it themselves; anything
else of windowlib's in a worker is recognised on the driver)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from windowlib.core.errors import ExecutionError
from windowlib.core.runner import function_failed
from windowlib.engines.spark.errors import windowlib_error
from windowlib.engines.spark.walker import Walker, make_walker

pytestmark = pytest.mark.unit
WALKERS: list = []


class Hungry:
    """A walker that buffers each batch into its key's state, then cannot allocate."""

    def __init__(self, config):
        self.config, self.key, self.live, self.buffer = config, None, 0, []
        WALKERS.append(self)

    def run(self, batches):
        for batch in batches:
            self.key = ("hot",)
            self.buffer.extend(batch)
            self.live = len(self.buffer)
            yield self.live
        raise MemoryError


def test_a_walker_out_of_memory_names_the_key_its_state_and_the_cap(monkeypatch):
    monkeypatch.setenv("PYSPARK_EXECUTOR_MEMORY_MB", "600")
    out = make_walker(SimpleNamespace(max_key_state=5_000_000), Hungry)(iter([[1, 2], [3]]))
    assert [next(out), next(out)] == [2, 3]
    with pytest.raises(ExecutionError) as info:
        next(out)
    message = str(info.value)
    assert info.value.code == "WORKER_MEMORY_EXCEEDED"
    assert "key ('hot',) (3 live state entries" in message
    assert "600 MiB" in message and "max_key_state (now 5000000)" in message
    # raised after the failure: no MemoryError context holding the walk's frames, and the
    # walker's state (the buffered elements) is dropped before the error travels
    assert info.value.__context__ is None and WALKERS[-1].__dict__ == {}


def test_the_general_walkers_live_state_is_counted_from_its_key_driver():
    """The general walker's ``live`` (what ``KEY_STATE_LIMIT`` and the memory error name):
    open windows plus buffered elements, an accumulator counting one; none between keys."""
    walker = Walker.__new__(Walker)
    walker.walk = None
    assert walker.live is None
    contents = {"w1": [1, 2, 3], "w2": [4], "w3": {"sum": 9}}
    walker.walk = SimpleNamespace(driver=SimpleNamespace(records=[0, 1, 2], contents=contents))
    assert walker.live == 3 + 3 + 1 + 1


def stats(key, context, elements):
    """Stands for the user's window function in the errors below."""


def failing_in_function(error: Exception):
    """A walker class whose user function raised ``error``: the core wraps every exception of
    user code as ``FUNCTION_FAILED`` naming the function (``error`` chained as its cause)."""

    class FunctionFails:
        def __init__(self, config):
            self.config, self.key, self.live = config, ("warm", 7), 4

        def run(self, batches):
            yield from ()
            try:
                raise error
            except Exception as exc:
                raise function_failed(stats, ("warm", 7), "TimeWindow(0, 10)", exc) from exc

    return FunctionFails


def test_a_user_function_out_of_memory_is_the_memory_error_naming_the_function(monkeypatch):
    monkeypatch.delenv("PYSPARK_EXECUTOR_MEMORY_MB", raising=False)
    walker_cls = failing_in_function(MemoryError())
    with pytest.raises(ExecutionError) as info:
        list(make_walker(SimpleNamespace(max_key_state=10), walker_cls)(iter([])))
    message = str(info.value)
    assert info.value.code == "WORKER_MEMORY_EXCEEDED"   # its remedy is memory, not the code
    assert "live state entries" not in message    # the walker may be past the key
    assert "stats failed for key ('warm', 7), window TimeWindow(0, 10): MemoryError" in message
    assert "MiB" not in message    # no cap set: none named


def test_other_function_failures_pass_through_unchanged():
    walker_cls = failing_in_function(ValueError("bad value"))
    with pytest.raises(ExecutionError) as info:
        list(make_walker(SimpleNamespace(max_key_state=10), walker_cls)(iter([])))
    assert info.value.code == "FUNCTION_FAILED" and "ValueError: bad value" in str(info.value)


class PythonException(Exception):
    """Named as Spark's captured exception for a failed Python worker."""


def test_a_worker_out_of_memory_outside_the_walkers_is_coded_on_the_driver():
    trace = ("An exception was thrown from the Python worker:\nTraceback (most recent call "
             "last):\n  File \"worker.py\", line 1, in main\nMemoryError\n")
    err = windowlib_error(PythonException(trace))
    assert err is not None and err.code == "WORKER_MEMORY_EXCEEDED"
    assert "spark.executor.pyspark.memory" in str(err)
    assert windowlib_error(PythonException("ValueError: no MemoryError here\n")) is None
    assert windowlib_error(RuntimeError("MemoryError\n")) is None    # not from a worker


class Py4JJavaError(Exception):
    """Named as py4j's error for a failed Spark job."""


def test_a_crashed_worker_is_coded_on_the_driver_whatever_carries_it():
    trace = ("An error occurred while calling o153.count.\n: org.apache.spark.SparkException: "
             "Job aborted due to stage failure: ... org.apache.spark.SparkException: Python "
             "worker exited unexpectedly (crashed). Consider setting ...\n\tat org.apache.spark"
             ".api.python.BasePythonRunner$ReaderIterator.hasNext(PythonRunner.scala:1034)\n")
    err = windowlib_error(Py4JJavaError(trace))
    assert err is not None and err.code == "WORKER_CRASHED"
    assert "\tat org.apache" not in str(err)
    coded = trace + "windowlib.core.errors.ExecutionError: [FUNCTION_FAILED] Ratio failed\n"
    assert windowlib_error(Py4JJavaError(coded)).code == "FUNCTION_FAILED"   # its own first
