"""Spark's own log noise that windowlib silences on purpose, each case narrowly.

- PySpark logs every SQL error it converts (``SQLQueryContextLogger``,
  ``DataFrameQueryContextLogger``, at ERROR, with the Java stack trace) when the exception is
  created, before any caller can catch it. A probe whose failure is an expected answer ("does
  this table exist?") runs inside :func:`expected_sql_errors`: only that thread's records are
  dropped while it runs, every other error still reaches the logs.
- Spark logs a WARN with a stack trace each time it resolves a glob location
  (:func:`quiet_glob_locations`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Iterator
from typing import Any

__all__ = ["expected_sql_errors", "quiet_glob_locations"]

_QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
_GLOB_WARNING_LOGGER = "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink"
_QUIETED: weakref.WeakSet[Any] = weakref.WeakSet()   # Spark contexts whose logger is raised
_probing = threading.local()


class _DropWhileProbing(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_probing, "depth", 0)


_FILTER = _DropWhileProbing()


@contextlib.contextmanager
def expected_sql_errors() -> Iterator[None]:
    """Inside: the SQL errors PySpark converts in this thread are not logged (the caller
    catches and answers them; they still raise)."""
    from pyspark.logger import PySparkLogger  # creates them as PySpark's logger class

    for name in _QUERY_CONTEXT_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    _probing.depth = getattr(_probing, "depth", 0) + 1
    try:
        yield
    finally:
        _probing.depth -= 1


def quiet_glob_locations(spark: Any) -> None:
    """Spark logs a WARN with a stack trace ("Assume no metadata directory") each time it
    resolves a location that is a glob (it looks for a streaming sink's metadata there):
    harmless for windowlib's catalog tables, so that one logger is raised to ERROR in
    ``spark``'s JVM (classic sessions, once per Spark context: each dotted JVM name costs a
    py4j round trip; nothing on Spark Connect)."""
    try:
        context = spark.sparkContext
        if context in _QUIETED:
            return
        jvm = context._jvm
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            _GLOB_WARNING_LOGGER, jvm.org.apache.logging.log4j.Level.ERROR)
        _QUIETED.add(context)
    except Exception:   # Spark Connect, or another logging backend: the WARN stays
        pass
