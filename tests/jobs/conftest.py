"""Fixtures of the ``jobs/`` tests: small flights and synthetic data sets (built once per test
session, pyarrow only) and, for the ``spark`` tests, the shared local SparkSession."""

from __future__ import annotations

import os
import sys

import pytest
from jobs_helpers import FALL_DAYS, SPRING_DAYS

for _name, _value in (("PYSPARK_PYTHON", sys.executable), ("PYSPARK_DRIVER_PYTHON", sys.executable),
                      ("SPARK_LOCAL_IP", "127.0.0.1")):
    os.environ.setdefault(_name, _value)



@pytest.fixture(scope="session")
def january(tmp_path_factory):
    """One month of flights (27,004 rows) built into a fresh lake root."""
    from jobs.flights import build_history

    root = tmp_path_factory.mktemp("lake_january")
    return root, build_history(root, months=(1,))


@pytest.fixture(scope="session")
def spring(tmp_path_factory):
    from jobs.flights import build_history

    root = tmp_path_factory.mktemp("lake_spring")
    return root, build_history(root, days=SPRING_DAYS)


@pytest.fixture(scope="session")
def fall(tmp_path_factory):
    from jobs.flights import build_history

    root = tmp_path_factory.mktemp("lake_fall")
    return root, build_history(root, days=FALL_DAYS)
