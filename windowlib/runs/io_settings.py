"""How a run moves DataFrames in and out of its locations: which reader and writer handle a
location (``use_spark_io``: Spark's own Parquet I/O, or pyarrow inside ``mapInArrow`` tasks;
``runs/frames.py`` says what each path guarantees) and how many tasks move its files
(``io_parallelism``, from the cluster's ``cores``)."""

from __future__ import annotations

from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.engines.spark.session import conf_value
from windowlib.state.uri import Uri

__all__ = ["IO_MODES", "PARALLELISM_CONF", "S3_IO_CONF", "cores", "io_parallelism",
           "use_spark_io"]

IO_MODES = ("auto", "spark", "arrow")
S3_IO_CONF = "spark.windowlib.io.s3"
PARALLELISM_CONF = "spark.windowlib.io.parallelism"


def use_spark_io(spark: Any, loc: Uri, io: str = "auto") -> bool:
    """Whether Spark's own reader/writer handles ``loc`` (see the module docstring)."""
    if io not in IO_MODES:
        raise DefinitionError(f"io must be one of {IO_MODES}, got {io!r}", code="ARGUMENT_INVALID")
    if io != "auto":
        return io == "spark"
    if loc.scheme == "file":
        return True
    return str(conf_value(spark, S3_IO_CONF) or "arrow").lower() == "spark"


def cores(spark: Any) -> int:
    """The cluster's cores: Spark's ``defaultParallelism`` (4 when unknown, e.g. over Spark
    Connect, where the client has no SparkContext)."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:
        return 4


def io_parallelism(spark: Any, n_items: int, parallelism: int | None = None) -> int:
    """Tasks for ``n_items`` files: explicit, else the ``spark.windowlib.io.parallelism`` conf,
    else twice the cluster's ``cores`` (I/O waits)."""
    if parallelism is None:
        conf = conf_value(spark, PARALLELISM_CONF)
        parallelism = int(conf) if conf else 2 * cores(spark)
    return max(1, min(n_items, parallelism))
