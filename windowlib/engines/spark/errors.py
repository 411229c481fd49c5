"""Errors raised inside Spark tasks, turned back into windowlib errors on the driver.

A windowlib error raised in a Python worker (``ExecutionError(KEY_STATE_LIMIT)``, a
``FUNCTION_FAILED``...) reaches the driver as Spark's ``PythonException`` whose message holds
the worker's traceback. ``reraise(exc)`` finds the last windowlib error in it and raises the
same class with the same code and message (also one raised in Spark SQL by ``raise_error``,
such as ``AGGREGATE_OVERFLOW``). A worker that cannot import the module the
pipeline's functions live in (nothing of windowlib ran yet) is ``MODULE_UNAVAILABLE`` naming
the module; a worker that ran out of memory outside the walkers (which report it themselves,
naming the key: ``walk_values.worker_memory_exceeded``) is ``WORKER_MEMORY_EXCEEDED``; a
worker that died (Spark's "Python worker exited unexpectedly": killed by the system, most often
for memory, or a native crash), whatever exception carries it, is ``WORKER_CRASHED``. Any other
exception is re-raised unchanged.
"""

from __future__ import annotations

import re
from typing import NoReturn

from windowlib.core import errors as _errors
from windowlib.engines.spark.walk_values import WORKER_MEMORY_HINT

_PATTERN = re.compile(
    r"(?:windowlib\.core\.errors\.)?(" + "|".join(c.__name__ for c in _errors.ERROR_CLASSES)
    + r"): \[([A-Z_]+)\] (.*)")
# what Spark appends to a message raised in SQL (``raise_error``): not part of ours
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
_OUT_OF_MEMORY = re.compile(r"^MemoryError\b", re.MULTILINE)
_CRASHED = "Python worker exited unexpectedly (crashed)"


def task_text(err: _errors.WindowlibError) -> str:
    """``err`` as a Spark task's failure carries it, for code that raises it inside Spark
    (``raise_error`` in SQL): what ``windowlib_error`` reads back as ``err``."""
    return f"{type(err).__name__}: {err}"


def windowlib_error(exc: BaseException) -> _errors.WindowlibError | None:
    """The windowlib error carried by a Spark task failure, or ``None``."""
    if isinstance(exc, _errors.WindowlibError):
        return exc
    text = str(exc)
    matches = list(_PATTERN.finditer(text))
    if matches:
        name, code, message = matches[-1].groups()
        return getattr(_errors, name)(_SQLSTATE.sub("", message).strip(), code=code)
    return _worker_failure(text, from_worker="PythonException" in type(exc).__name__)


def _worker_failure(text: str, from_worker: bool) -> _errors.ExecutionError | None:
    """A Python worker's failure that no windowlib code reported (module docstring), from the
    failure's ``text``; ``from_worker``: it is Spark's ``PythonException`` (the worker's own
    traceback), not a failure Spark saw from outside the worker."""
    missing = _MISSING_MODULE.search(text)
    if missing is not None and from_worker:
        return _errors.ExecutionError(
            f"the Spark executors cannot import module {missing.group(1)!r}, where the "
            "pipeline's functions (or their imports) live: ship it "
            f"(windowlib.engines.spark.shipping.ship_code(spark, [{missing.group(1)!r}]), "
            "spark.submit.pyFiles), install it on the workers, or define the functions in "
            "a module the workers can import", code="MODULE_UNAVAILABLE")
    if from_worker and _OUT_OF_MEMORY.search(text):
        return _errors.ExecutionError(
            f"a Spark Python worker ran out of memory; {WORKER_MEMORY_HINT}, or smaller input "
            "batches (spark.sql.execution.arrow.maxRecordsPerBatch)",
            code="WORKER_MEMORY_EXCEEDED")
    if _CRASHED in text:
        return _errors.ExecutionError(
            "a Spark Python worker exited unexpectedly (crashed): killed by the system, most "
            "often for using too much memory (the kernel's out-of-memory killer, a container "
            "limit), or a native crash in a library the pipeline's functions use; set "
            "spark.executor.pyspark.memory so that a worker running out of memory fails as "
            "WORKER_MEMORY_EXCEEDED naming the key, and see the executor's log "
            "(spark.python.worker.faulthandler.enabled=true adds the worker's stack)",
            code="WORKER_CRASHED")
    return None


def reraise(exc: BaseException) -> NoReturn:
    """Raise the windowlib error inside ``exc`` (from ``exc``), or ``exc`` itself."""
    err = windowlib_error(exc)
    if err is None or err is exc:
        raise exc
    raise err from exc
