"""A Python worker out of memory is ``WORKER_MEMORY_EXCEEDED`` naming the key being walked,
never a bare ``MemoryError`` or Spark's ``PythonException`` (the walkers report it themselves;
anything else of windowlib's in a worker is recognised on the driver)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from windowlib.core.errors import ExecutionError
from windowlib.engines.spark.errors import windowlib_error
from windowlib.engines.spark.walker import make_walker

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


class HungryDriver:
    """The general walker's shape: its key's live state is counted from the key driver."""

    def __init__(self, config):
        self.config, self.key = config, ("warm", 7)
        self.walk = SimpleNamespace(driver=SimpleNamespace(contents=[[1, 2, 3], [4]]))

    @staticmethod
    def state_size(driver):
        return sum(len(c) for c in driver.contents)

    def run(self, batches):
        yield from ()
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


def test_the_general_walkers_state_is_counted_from_its_key_driver(monkeypatch):
    monkeypatch.delenv("PYSPARK_EXECUTOR_MEMORY_MB", raising=False)
    with pytest.raises(ExecutionError) as info:
        list(make_walker(SimpleNamespace(max_key_state=10), HungryDriver)(iter([])))
    message = str(info.value)
    assert "key ('warm', 7) (4 live state entries" in message
    assert "MiB" not in message    # no cap set: none named


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
