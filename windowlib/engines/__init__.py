"""Engines that execute the semantic core behind one contract (``base.py``): ``reference``
(plain Python, the executable specification) and ``spark`` (native and general paths).
Importing this package loads neither pyspark nor an engine."""

from __future__ import annotations

from typing import Any


class _SparkEngine:
    """``Pipeline.run``/``explain`` on Spark, loaded on first use (``windowlib`` installs it
    with ``core.pipeline.use_engine``)."""

    def run(self, pipeline: Any, df: Any, arrival: str, **options: Any) -> Any:
        from windowlib.engines.spark.engine import run_dataframe

        return run_dataframe(pipeline, df, arrival, **options)

    def explain(self, pipeline: Any) -> str:
        from windowlib.engines.spark.engine import explain

        return explain(pipeline)


def spark_engine() -> _SparkEngine:
    return _SparkEngine()
