"""A local SparkSession configured the way windowlib expects (see ``../shared/NOTES.md``).

``get_or_create_session()`` returns the active session when there is one (a cluster job or a
notebook keeps its own configuration; only the session time zone is forced to UTC, because
windowlib reads and writes timestamps as UTC), otherwise it builds a local one:
``local[2]``, no UI, 4 shuffle partitions, adaptive execution on, UTC, Arrow on.

Python workers must run the same interpreter as the driver: set ``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON`` to the virtualenv's python before the first session starts
(``get_or_create_session`` sets them to ``sys.executable`` when they are unset).
"""

from __future__ import annotations

import os
import sys
from typing import Any

LOCAL_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.bindAddress": "127.0.0.1",
}


def get_or_create_session(master: str = "local[2]", app_name: str = "windowlib",
                          conf: dict[str, str] | None = None) -> Any:
    """The active SparkSession, or a new local one with windowlib's settings."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        if active.conf.get("spark.sql.session.timeZone") != "UTC":
            active.conf.set("spark.sql.session.timeZone", "UTC")
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**LOCAL_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
