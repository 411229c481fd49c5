"""Declarative aggregates, the public face of ``windowlib.core.aggregates``.

Used as ``pipeline.aggregate(sum("amount").alias("total"), count())``. ``sum``, ``min`` and
``max`` shadow the builtins on purpose: the contract is ``wl.aggregates.sum("amount")``.
"""

from windowlib.core.aggregates import (
    AggregateSet,
    DeclarativeAggregate,
    approx_count_distinct,
    collect_list,
    count,
    first,
    last,
    max,
    mean,
    min,
    sum,
)

__all__ = [
    "AggregateSet",
    "DeclarativeAggregate",
    "approx_count_distinct",
    "collect_list",
    "count",
    "first",
    "last",
    "max",
    "mean",
    "min",
    "sum",
]
