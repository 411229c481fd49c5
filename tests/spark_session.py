"""The shared SparkSession fixture (a pytest plugin, registered in ``tests/conftest.py``): one
local session for the whole test run, whichever tier asks for it first.

Starting a session costs 6-19 s here (see ``../shared/NOTES.md``), so it is session-scoped.
Test modules whose functions run inside Spark tasks register themselves with
``cloudpickle.register_pickle_by_value`` (workers cannot import modules from ``tests/``):
``ship_by_value``. ``spark_examples`` sizes the Hypothesis properties that run Spark.
"""

from __future__ import annotations

import contextlib
import os
import sys

import pytest

_PY = sys.executable
for _name, _value in (("PYSPARK_PYTHON", _PY), ("PYSPARK_DRIVER_PYTHON", _PY),
                      ("SPARK_LOCAL_IP", "127.0.0.1")):
    os.environ.setdefault(_name, _value)


def ship_by_value(*modules) -> None:
    """Let Spark's workers unpickle functions defined in ``modules``."""
    from pyspark import cloudpickle

    for module in modules:
        with contextlib.suppress(ValueError):   # already registered
            cloudpickle.register_pickle_by_value(module)


def spark_examples(ci: int, local: int) -> int:
    """Examples of a property that runs Spark: ``WINDOWLIB_SPARK_EXAMPLES`` when set, else
    ``ci`` under CI and ``local`` otherwise."""
    return int(os.environ.get("WINDOWLIB_SPARK_EXAMPLES")
               or (ci if os.environ.get("CI") else local))


@pytest.fixture(scope="session")
def spark():
    from windowlib.engines.spark.session import get_or_create_session

    session = get_or_create_session(app_name="windowlib-tests",
                                    conf={"spark.sql.shuffle.partitions": "1"})
    yield session
    session.stop()
