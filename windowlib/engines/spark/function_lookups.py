"""PySpark's column functions without two reflection round trips per call.

Every ``pyspark.sql.functions`` call (``F.col``, ``F.lit``, ``F.when``...) of a classic session
first asks the JVM over py4j whether ``org.apache.spark.sql.functions`` is a class and whether
``<name>`` is a method of it, then calls the method: three round trips for one expression node.
Building a warm hourly run's plan calls them ~360 times, so the two lookups cost ~720 round
trips (~45 ms of a ~1 s run, measured with py4j's commands counted by kind).

:func:`remember_function_lookups` makes PySpark keep the answer (a static method handle) per
py4j gateway and name: a class and its static methods do not change while a JVM lives, and a
handle only names them (``z:org.apache.spark.sql.functions`` and the method), so it is valid in
every thread. Only that one PySpark helper is wrapped, only when it is the function windowlib
knows (``_get_jvm_function(name, sc)`` in ``pyspark.sql.functions.builtin``); otherwise PySpark
is left as it is. Spark Connect sessions do not use py4j and are unaffected.
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()


def remember_function_lookups() -> bool:
    """Wrap PySpark's lookup of JVM column functions with a per-gateway memory (idempotent);
    ``True`` when it is in place."""
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
