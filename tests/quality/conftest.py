"""The quality tier's SparkSession: the same session-scoped fixture as ``tests/spark/conftest.py``
(copied: ``tests`` is not a package, so that fixture cannot be imported from here).
"""

from __future__ import annotations

import os
import sys

import pytest

_PY = sys.executable
for _name, _value in (("PYSPARK_PYTHON", _PY), ("PYSPARK_DRIVER_PYTHON", _PY),
                      ("SPARK_LOCAL_IP", "127.0.0.1")):
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def spark():
    from windowlib.engines.spark.session import get_or_create_session

    session = get_or_create_session(app_name="windowlib-tests",
                                    conf={"spark.sql.shuffle.partitions": "1"})
    yield session
    session.stop()
