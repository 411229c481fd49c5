"""The result columns of a pipeline on Spark: typed from the input schema for declarative
aggregates, from the declared row type of a Python window function (``core/schema.py``: its
``result_schema``, yield hints, or a run's ``result_schema=``), or ``result_json`` for Python
functions that declare nothing. ``spark_type`` maps a declared type to Spark's."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from windowlib.core import schema
from windowlib.core.outputs import RESULT_JSON
from windowlib.core.pipeline import Pipeline

_ATOMIC_TYPES = {"boolean": "BooleanType", "byte": "ByteType", "short": "ShortType",
                 "int": "IntegerType", "long": "LongType", "float": "FloatType",
                 "double": "DoubleType", "string": "StringType", "binary": "BinaryType",
                 "date": "DateType", "timestamp": "TimestampType"}


def spark_type(dtype: Any) -> Any:
    """The Spark ``DataType`` of a declared type (``core/schema.py``)."""
    from pyspark.sql import types as T

    if isinstance(dtype, schema.Atomic):
        return getattr(T, _ATOMIC_TYPES[dtype.name])()
    if isinstance(dtype, schema.DecimalType):
        return T.DecimalType(dtype.precision, dtype.scale)
    if isinstance(dtype, schema.Array):
        return T.ArrayType(spark_type(dtype.element), True)
    if isinstance(dtype, schema.Map):
        return T.MapType(spark_type(dtype.key), spark_type(dtype.value), True)
    return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable)
                         for f in dtype.fields])


def is_atomic(dtype: Any) -> bool:
    """Whether ``dtype`` is a numeric (not decimal), string, boolean, date or timestamp type:
    the inputs of ``min``/``max``/``first``/``last``/``collect_list`` typed here."""
    from pyspark.sql import types as T

    return isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType
                      | T.FloatType | T.DoubleType | T.StringType | T.BooleanType
                      | T.TimestampType | T.TimestampNTZType | T.DateType)


def sum_type(dtype: Any) -> Any:
    """Spark's type of ``sum`` over a column of ``dtype``: long for integral, double for
    floating-point input; ``None`` for any other (not typed here)."""
    from pyspark.sql import types as T

    if isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return T.LongType()
    if isinstance(dtype, T.FloatType | T.DoubleType):
        return T.DoubleType()
    return None


def _declarative_type(agg: Any, input_types: Mapping[str, Any]) -> Any:
    """Spark type of one declarative aggregate's result, or None when not safely typable."""
    from pyspark.sql import types as T

    kind = agg.kind
    if kind in ("count", "approx_count_distinct"):
        return T.LongType()
    dtype = input_types.get(agg.column)
    if dtype is None:
        return None
    if kind == "sum":
        return sum_type(dtype)
    if kind == "mean":
        return T.DoubleType() if sum_type(dtype) is not None else None
    if not is_atomic(dtype):
        return None
    if isinstance(dtype, T.TimestampNTZType):
        dtype = T.TimestampType()
    if kind == "collect_list":
        return T.ArrayType(dtype, True)
    return dtype  # min, max, first, last


def with_result_schema(pipeline: Pipeline, result_schema: Any) -> Pipeline:
    """``pipeline`` with the result columns a run declares (``run_dataframe(result_schema=...)``:
    DDL, a dataclass / ``TypedDict`` class, or a Spark ``StructType``); same fingerprint."""
    spec = pipeline.function
    if result_schema is None or spec is None:
        return pipeline
    return dataclasses.replace(pipeline, function=spec.with_result_schema(result_schema),
                               _compiled=[])


def result_fields(pipeline: Pipeline, input_types: Mapping[str, Any]) -> tuple[str, list]:
    """``(mode, fields)`` of the result columns: ``typed`` (declarative aggregates, from the
    input types), ``schema`` (the declared row type; rows arrive conformed by the core) or
    ``json``."""
    from pyspark.sql import types as T

    spec = pipeline.function
    declared = spec.result_type if spec is not None else None
    if declared is not None:
        return "schema", list(spark_type(declared).fields)
    names = spec.output_names() if spec is not None else None
    if names is not None:
        fields = []
        for agg in spec.fn.aggregates:
            dtype = _declarative_type(agg, input_types)
            if dtype is None:
                break
            fields.append(T.StructField(agg.name, dtype, True))
        else:
            return "typed", fields
    return "json", [T.StructField(RESULT_JSON, T.StringType(), True)]
