"""Errors raised inside Spark tasks, turned back into windowlib errors on the driver.

A windowlib error raised in a Python worker (``ExecutionError(KEY_STATE_LIMIT)``, a
``FUNCTION_FAILED``...) reaches the driver as Spark's ``PythonException`` whose message holds
the worker's traceback. ``reraise(exc)`` finds the last windowlib error in it and raises the
same class with the same code and message. A worker that cannot import the module the
pipeline's functions live in (nothing of windowlib ran yet) is ``MODULE_UNAVAILABLE`` naming
the module; a worker that ran out of memory outside the walkers (which report it themselves,
naming the key: ``walk_values.worker_memory_exceeded``) is ``WORKER_MEMORY_EXCEEDED``. Any
other exception is re-raised unchanged.
"""

from __future__ import annotations

import re
from typing import NoReturn

from windowlib.core import errors as _errors

_PATTERN = re.compile(
    r"(?:windowlib\.core\.errors\.)?(" + "|".join(c.__name__ for c in _errors.ERROR_CLASSES)
    + r"): \[([A-Z_]+)\] (.*)")
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
_OUT_OF_MEMORY = re.compile(r"^MemoryError\b", re.MULTILINE)


def windowlib_error(exc: BaseException) -> _errors.WindowlibError | None:
    """The windowlib error carried by a Spark task failure, or ``None``."""
    if isinstance(exc, _errors.WindowlibError):
        return exc
    text = str(exc)
    matches = list(_PATTERN.finditer(text))
    if not matches:
        from_worker = "PythonException" in type(exc).__name__
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
                "a Spark Python worker ran out of memory; give the Python workers more memory "
                "(spark.executor.pyspark.memory, or spark.executor.memoryOverhead where it is "
                "not set) or smaller input batches (spark.sql.execution.arrow.maxRecordsPerBatch)",
                code="WORKER_MEMORY_EXCEEDED")
        return None
    name, code, message = matches[-1].groups()
    cls = getattr(_errors, name)
    return cls(message.strip(), code=code)


def reraise(exc: BaseException) -> NoReturn:
    """Raise the windowlib error inside ``exc`` (from ``exc``), or ``exc`` itself."""
    err = windowlib_error(exc)
    if err is None or err is exc:
        raise exc
    raise err from exc
