"""The JVM lookups PySpark repeats for every expression, made once per JVM.

Building a plan from Python, classic PySpark asks the JVM over py4j what a name is before it
calls it, every time:

- every ``pyspark.sql.functions`` call (``F.col``, ``F.lit``, ``F.when``...) asks whether
  ``org.apache.spark.sql.functions`` is a class and whether ``<name>`` is a method of it
  (two round trips, then the call);
- every list of columns handed to the JVM asks for ``PythonUtils`` (a short name, resolved by
  trying each package PySpark imported into its JVM view: ~0.2 ms) and its ``toSeq``; a column
  given by name asks for ``functions`` and its ``col`` the same way.

A warm hourly run made ~965 such lookups (~60 ms of a ~1 s run; py4j's commands counted by
kind). A class and its static methods do not change while a JVM lives, and the handles py4j
returns only name them (``z:<class>`` and the method), so they are valid in every thread.

:func:`remember_jvm_lookups` keeps them: PySpark's function lookup (``_get_jvm_function(name,
sc)`` in ``pyspark.sql.functions.builtin``, wrapped only when it has that shape) remembers its
answer per py4j gateway and name, and the session's JVM view gets ``PythonUtils`` and
``functions`` with their ``toSeq`` and ``col`` resolved, as py4j would resolve them. Spark
Connect sessions do not use py4j and are left alone.
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()
# short name in PySpark's JVM view -> (class, the static methods PySpark calls per expression)
_PINNED = {"PythonUtils": ("org.apache.spark.api.python.PythonUtils", ("toSeq",)),
           "functions": ("org.apache.spark.sql.functions", ("col",))}


def remember_jvm_lookups(spark: Any = None) -> bool:
    """Remember PySpark's column-function lookups (process-wide, idempotent) and, for a
    classic ``spark`` session, pin the hot classes in its JVM view; ``True`` when the
    function lookups are remembered."""
    remembered = _remember_function_lookups()
    jvm = getattr(getattr(spark, "_sc", None), "_jvm", None)
    if jvm is not None:
        _pin_classes(jvm)
    return remembered


def _remember_function_lookups() -> bool:
    try:
        from pyspark.sql.functions import builtin
    except ImportError:
        return False
    with _LOCK:
        lookup = getattr(builtin, "_get_jvm_function", None)
        if lookup is None or getattr(lookup, "__code__", None) is None:
            return False
        if getattr(lookup, "_windowlib_remembers", False):
            return True
        if lookup.__code__.co_varnames[:2] != ("name", "sc"):
            return False                    # a PySpark whose helper windowlib does not know
        builtin._get_jvm_function = _remembering(lookup)
        return True


def _remembering(lookup: Any) -> Any:
    known: dict[str, Any] = {}
    gateways: list[Any] = [None]

    def remembered_lookup(name: str, sc: Any) -> Any:
        gateway = sc._gateway
        if gateway is not gateways[0]:      # a new JVM (or the first call): start afresh
            known.clear()
            gateways[0] = gateway
        member = known.get(name)
        if member is None:
            member = known[name] = lookup(name, sc)
        return member

    remembered_lookup._windowlib_remembers = True       # type: ignore[attr-defined]
    remembered_lookup.__wrapped__ = lookup               # type: ignore[attr-defined]
    remembered_lookup.__doc__ = lookup.__doc__
    return remembered_lookup


def _pin_classes(jvm: Any) -> None:
    """Give ``jvm`` (a py4j ``JVMView``) the ``_PINNED`` classes as attributes, each with its
    hot static methods as attributes: Python finds them before py4j's ``__getattr__`` asks the
    JVM. A class the JVM does not have is left to py4j."""
    with _LOCK:
        attributes = vars(jvm)
        for short, (fqn, methods) in _PINNED.items():
            if short in attributes:
                continue
            try:
                cls = getattr(jvm, fqn)
                for method in methods:
                    vars(cls)[method] = getattr(cls, method)
            except Exception:       # py4j's own error for a missing class: nothing pinned
                continue
            attributes[short] = cls
