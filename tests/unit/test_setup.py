"""What ``make setup`` (``infra/bootstrap.sh``) leaves behind: dependencies that every process
can import without compiling them first."""

from __future__ import annotations

import importlib.util
import os

import pytest

pytestmark = pytest.mark.unit

# the imports every windowlib process pays (a Spark driver or worker, an Airflow task, the
# GX audit); where ``PYTHONDONTWRITEBYTECODE`` is set, a module without a bytecode file is
# compiled again by every process that imports it (docs/performance.md)
HEAVY = ("pyspark.sql.dataframe", "pyarrow.compute", "pandas.core.frame", "numpy.lib",
         "great_expectations.core", "airflow.models.dag", "deltalake.table",
         "windowlib.core.driver")


@pytest.mark.parametrize("module", HEAVY)
def test_the_setup_leaves_bytecode_for_the_modules_every_process_imports(module):
    origin = importlib.util.find_spec(module).origin
    assert origin and origin.endswith(".py")
    assert os.path.exists(importlib.util.cache_from_source(origin)), \
        f"{module} has no bytecode: run `make setup` (infra/bootstrap.sh compiles it)"
