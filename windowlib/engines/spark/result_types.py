"""The result columns of a pipeline on Spark: typed from the input schema for declarative
aggregates, a user's ``result_schema``, or ``result_json`` for Python window functions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.core.outputs import RESULT_JSON
from windowlib.core.pipeline import Pipeline


def _declarative_type(agg: Any, input_types: Mapping[str, Any]) -> Any:
    """Spark type of one declarative aggregate's result, or None when not safely typable."""
    from pyspark.sql import types as T

    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    atomic = (*integral, T.FloatType, T.DoubleType, T.StringType, T.BooleanType,
              T.TimestampType, T.TimestampNTZType, T.DateType)
    kind = agg.kind
    if kind in ("count", "approx_count_distinct"):
        return T.LongType()
    dtype = input_types.get(agg.column)
    if dtype is None:
        return None
    if kind == "sum":
        if isinstance(dtype, integral):
            return T.LongType()
        if isinstance(dtype, T.FloatType | T.DoubleType):
            return T.DoubleType()
        return None
    if kind == "mean":
        return T.DoubleType() if isinstance(dtype, (*integral, T.FloatType, T.DoubleType)) \
            else None
    if not isinstance(dtype, atomic):
        return None
    if isinstance(dtype, T.TimestampNTZType):
        dtype = T.TimestampType()
    if kind == "collect_list":
        return T.ArrayType(dtype, True)
    return dtype  # min, max, first, last


def result_fields(pipeline: Pipeline, input_types: Mapping[str, Any],
                  result_schema: str | None) -> tuple[str, list]:
    """``(mode, fields)`` of the result columns: typed declarative, a user schema, or JSON."""
    from pyspark.sql import types as T

    if result_schema is not None:
        parsed = T.DataType.fromDDL(result_schema) if isinstance(result_schema, str) \
            else result_schema
        if not isinstance(parsed, T.StructType):
            raise DefinitionError(f"result_schema must describe columns (e.g. 'total long, label "
                                  f"string'), got {result_schema!r}", code="ARGUMENT_INVALID")
        return "schema", list(parsed.fields)
    spec = pipeline.function
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
