"""The Spark engine (issue 3): ``run_dataframe`` / ``explain`` (``engine.py``), the general path
(``general.py``: the semantic core per key inside ``mapInArrow``), bundles and watermarks on
Spark (``bundles.py``), ``run_bundles(engine="spark")`` (``testing.py``) and a local session
helper (``session.py``). Importing this package does not import pyspark."""

from windowlib.engines.spark.engine import SparkRunResult, explain, run_dataframe

__all__ = ["SparkRunResult", "explain", "run_dataframe"]
