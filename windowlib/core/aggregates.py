"""Declarative aggregates: the reference engine runs them here, the Spark engine compiles them.

Semantics follow Spark SQL: nulls are ignored, and a column missing from a row counts as null.

Invariants:

* Accumulators are JSON data (``None``, ``int``, ``float``, ``str``, ``bool`` and lists of
  them; never tuples or sets), because they go into JSON snapshots. ``add`` may mutate and
  return its accumulator; ``merge`` never mutates its arguments; ``get_result`` returns a value
  that shares nothing mutable with the accumulator (accumulating panes keep adding to it).
* ``merge(a, b)``: ``a``'s elements arrived before ``b``'s. This decides ties in ``first`` /
  ``last`` and the order of ``collect_list``.
* ``AggregateSet.add`` is the reference engine's hot path: one pre-bound closure per aggregate,
  no per-row allocation for count/sum/min/max/mean.

The public names ``sum``, ``min``, ``max`` shadow the builtins on purpose (the contract is
``wl.aggregates.sum("amount")``); code here that needs a builtin must use ``builtins.sum``
etc. (nothing does today).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.errors import DefinitionError

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

Acc = Any
Adder = Callable[[Acc, dict, int], Acc]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --- per-kind behaviour: make_add(column) -> adder, create(), merge(a, b), result(acc) -------

def _add_count_rows(column: str | None) -> Adder:
    def add(acc: int, row: dict, ts_ms: int) -> int:
        return acc + 1
    return add


def _add_count(column: str | None) -> Adder:
    if column is None:
        return _add_count_rows(column)

    def add(acc: int, row: dict, ts_ms: int) -> int:
        return acc if row.get(column) is None else acc + 1
    return add


def _add_sum(column: str) -> Adder:
    def add(acc: Any, row: dict, ts_ms: int) -> Any:
        v = row.get(column)
        if v is None:
            return acc
        return v if acc is None else acc + v
    return add


def _add_min(column: str) -> Adder:
    def add(acc: Any, row: dict, ts_ms: int) -> Any:
        v = row.get(column)
        if v is None or (acc is not None and acc <= v):
            return acc
        return v
    return add


def _add_max(column: str) -> Adder:
    def add(acc: Any, row: dict, ts_ms: int) -> Any:
        v = row.get(column)
        if v is None or (acc is not None and acc >= v):
            return acc
        return v
    return add


def _add_mean(column: str) -> Adder:
    def add(acc: list, row: dict, ts_ms: int) -> list:
        v = row.get(column)
        if v is not None:
            acc[0] += v
            acc[1] += 1
        return acc
    return add


def _add_first(column: str) -> Adder:
    def add(acc: list | None, row: dict, ts_ms: int) -> list | None:
        v = row.get(column)
        if v is None or (acc is not None and acc[1] <= ts_ms):  # ties: earliest arrival wins
            return acc
        return [v, ts_ms]
    return add


def _add_last(column: str) -> Adder:
    def add(acc: list | None, row: dict, ts_ms: int) -> list | None:
        v = row.get(column)
        if v is None or (acc is not None and acc[1] > ts_ms):  # ties: latest arrival wins
            return acc
        return [v, ts_ms]
    return add


def _distinct_key(v: Any) -> tuple:
    """Total order for the distinct set: numbers together, then other types by type name."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return ("", v)
    return (type(v).__name__, v)


def _add_distinct(column: str) -> Adder:
    def add(acc: list, row: dict, ts_ms: int) -> list:
        v = row.get(column)
        if v is None:
            return acc
        k = _distinct_key(v)
        i = bisect_left(acc, k, key=_distinct_key)
        if i == len(acc) or _distinct_key(acc[i]) != k:
            acc.insert(i, v)
        return acc
    return add


def _add_collect(column: str) -> Adder:
    def add(acc: list, row: dict, ts_ms: int) -> list:
        v = row.get(column)
        if v is not None:
            acc.append(v)
        return acc
    return add


def _merge_none_or(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def merge(a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return op(a, b)
    return merge


def _merge_distinct(a: list, b: list) -> list:
    out: list = []
    last_key: tuple | None = None
    for v in sorted(a + b, key=_distinct_key):
        k = _distinct_key(v)
        if k != last_key:
            out.append(v)
            last_key = k
    return out


@dataclass(frozen=True, slots=True)
class _Kind:
    make_add: Callable[[Any], Adder]
    create: Callable[[], Acc]
    merge: Callable[[Acc, Acc], Acc]
    result: Callable[[Acc], Any]


def _none() -> None:
    return None


def _identity(acc: Any) -> Any:
    return acc


class AggregateOverflow(ArithmeticError):
    """An integral sum outside the 64-bit range of the Spark column that holds it (Python's
    integers do not overflow; Spark's longs do): the runner makes it ``AGGREGATE_OVERFLOW``
    naming the key and the window."""


_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _long_sum(total: Any) -> Any:
    """``total`` when it is not an integer beyond 64 bits; ``AggregateOverflow`` when it is."""
    if type(total) is int and not _LONG_MIN <= total <= _LONG_MAX:
        raise AggregateOverflow(f"is {total}, beyond the 64-bit range of its column")
    return total


_KINDS: dict[str, _Kind] = {
    "count": _Kind(_add_count, lambda: 0, lambda a, b: a + b, _identity),
    "sum": _Kind(_add_sum, _none, _merge_none_or(lambda a, b: a + b), _long_sum),
    "min": _Kind(_add_min, _none, _merge_none_or(lambda a, b: b if b < a else a), _identity),
    "max": _Kind(_add_max, _none, _merge_none_or(lambda a, b: b if b > a else a), _identity),
    "mean": _Kind(_add_mean, lambda: [0, 0], lambda a, b: [a[0] + b[0], a[1] + b[1]],
                  lambda acc: _long_sum(acc[0]) / acc[1] if acc[1] else None),
    "first": _Kind(_add_first, _none, _merge_none_or(lambda a, b: b if b[1] < a[1] else a),
                   lambda acc: None if acc is None else acc[0]),
    "last": _Kind(_add_last, _none, _merge_none_or(lambda a, b: b if b[1] >= a[1] else a),
                  lambda acc: None if acc is None else acc[0]),
    "approx_count_distinct": _Kind(_add_distinct, list, _merge_distinct, len),
    "collect_list": _Kind(_add_collect, list, lambda a, b: a + b, list),
}


# --- public objects ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeclarativeAggregate:
    """One aggregate over one column, runnable here and compilable to Spark SQL.

    ``kind`` is one of ``count, sum, min, max, mean, first, last, approx_count_distinct,
    collect_list``; ``column`` is ``None`` only for ``count()`` (count rows); ``name`` is the
    output column. Build them with the module functions (``sum("amount").alias("total")``).
    The accumulator protocol is the module's (JSON accumulators; ``merge(a, b)`` with ``a``
    earlier; ``ts_ms`` is the row's event time, used by ``first``/``last``).
    """

    kind: str
    column: str | None
    name: str = ""
    _add: Adder = field(init=False, repr=False, compare=False)
    _kind: _Kind = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kind = _KINDS.get(self.kind)
        if kind is None:
            raise DefinitionError(f"unknown aggregate kind {self.kind!r}; expected one of "
                                  f"{sorted(_KINDS)}", code="ARGUMENT_INVALID")
        if self.column is None:
            if self.kind != "count":
                raise DefinitionError(f"{self.kind}() needs a column", code="ARGUMENT_INVALID")
        elif not isinstance(self.column, str) or not self.column:
            raise DefinitionError(f"{self.kind}(): column must be a non-empty str, "
                                  f"got {self.column!r}", code="ARGUMENT_INVALID")
        if not self.name:
            default = "count" if self.column is None else f"{self.kind}_{self.column}"
            object.__setattr__(self, "name", default)
        else:
            _check_name(self.name)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_add", kind.make_add(self.column))

    def alias(self, name: str) -> DeclarativeAggregate:
        """The same aggregate with output column ``name`` (an identifier)."""
        _check_name(name)
        return DeclarativeAggregate(self.kind, self.column, name)

    def create_accumulator(self) -> Acc:
        return self._kind.create()

    def add(self, acc: Acc, row: dict, ts_ms: int) -> Acc:
        return self._add(acc, row, ts_ms)

    def merge(self, a: Acc, b: Acc) -> Acc:
        return self._kind.merge(a, b)

    def get_result(self, acc: Acc) -> Any:
        return self._kind.result(acc)

    def describe(self) -> dict:
        return {"kind": self.kind, "column": self.column, "name": self.name}


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise DefinitionError(f"aggregate name must be an identifier such as 'total', "
                              f"got {name!r}", code="ARGUMENT_INVALID")


class AggregateSet:
    """Several declarative aggregates run as one ``AggregateFunction`` (``Pipeline.aggregate``).

    The accumulator is a list with one entry per aggregate; the result is a dict
    ``{name: value}`` in declaration order. Output names must be unique.
    """

    __slots__ = ("_adders", "_kinds", "_outputs", "aggregates", "output_names")

    def __init__(self, aggs: Sequence[DeclarativeAggregate]) -> None:
        aggs = tuple(aggs)
        if not aggs:
            raise DefinitionError("aggregate() needs at least one aggregate",
                                  code="ARGUMENT_INVALID")
        seen: set[str] = set()
        for a in aggs:
            if not isinstance(a, DeclarativeAggregate):
                raise DefinitionError(
                    f"expected a declarative aggregate such as sum('amount'), got {a!r}",
                    code="ARGUMENT_INVALID")
            if a.name in seen:
                raise DefinitionError(f"duplicate aggregate output name {a.name!r}; "
                                      "use .alias() to rename one", code="ARGUMENT_INVALID")
            seen.add(a.name)
        self.aggregates: tuple[DeclarativeAggregate, ...] = aggs
        self.output_names: tuple[str, ...] = tuple(a.name for a in aggs)
        self._adders = tuple(enumerate(a._add for a in aggs))
        self._kinds = tuple(a._kind for a in aggs)
        # (name, index, result function or None when the accumulator is its own result)
        self._outputs = tuple((n, i, None if k.result is _identity else k.result)
                              for i, (n, k) in enumerate(zip(self.output_names, self._kinds)))

    def create_accumulator(self) -> list:
        return [k.create() for k in self._kinds]

    def add(self, acc: list, row: dict, ts_ms: int) -> list:
        for i, add in self._adders:
            acc[i] = add(acc[i], row, ts_ms)
        return acc

    def add_or_create(self, acc: list | None, row: dict, ts_ms: int) -> list:
        """``add`` to ``acc``, or to a new accumulator when ``acc`` is ``None``."""
        if acc is None:
            acc = [k.create() for k in self._kinds]
        for i, add in self._adders:
            acc[i] = add(acc[i], row, ts_ms)
        return acc

    def adder(self) -> Callable[[list | None, dict, int], list]:
        """``add_or_create`` as one callable, without the loop for a single aggregate."""
        if len(self._adders) != 1:
            return self.add_or_create
        add, create = self._adders[0][1], self._kinds[0].create

        def add_or_create_one(acc: list | None, row: dict, ts_ms: int) -> list:
            if acc is None:
                acc = [create()]
            acc[0] = add(acc[0], row, ts_ms)
            return acc
        return add_or_create_one

    def merge(self, a: list, b: list) -> list:
        return [k.merge(x, y) for k, x, y in zip(self._kinds, a, b)]

    def get_result(self, acc: list) -> dict:
        out = {}
        for name, i, result in self._outputs:
            try:
                out[name] = acc[i] if result is None else result(acc[i])
            except AggregateOverflow as exc:
                agg = self.aggregates[i]
                raise AggregateOverflow(f"the {agg.kind} of {agg.column!r} as {name!r}: its "
                                        f"sum {exc}") from None
        return out

    def describe(self) -> dict:
        return {"aggregates": [a.describe() for a in self.aggregates]}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AggregateSet) and self.aggregates == other.aggregates

    def __hash__(self) -> int:
        return hash(self.aggregates)

    def __repr__(self) -> str:
        return f"AggregateSet({list(self.aggregates)!r})"


# --- constructors (the public functions) ------------------------------------------------------

def count(column: str | None = None) -> DeclarativeAggregate:
    """Rows (``count()``) or non-null values of ``column``; named ``count`` / ``count_<col>``."""
    return DeclarativeAggregate("count", column)


def sum(column: str) -> DeclarativeAggregate:
    """Sum of non-null values; ``None`` if there are none; ints stay ints."""
    return DeclarativeAggregate("sum", column)


def min(column: str) -> DeclarativeAggregate:
    """Smallest non-null value, or ``None``."""
    return DeclarativeAggregate("min", column)


def max(column: str) -> DeclarativeAggregate:
    """Largest non-null value, or ``None``."""
    return DeclarativeAggregate("max", column)


def mean(column: str) -> DeclarativeAggregate:
    """Float mean of non-null values (accumulator ``[sum, count]``), or ``None``."""
    return DeclarativeAggregate("mean", column)


def first(column: str) -> DeclarativeAggregate:
    """Non-null value with the smallest event time; ties go to the earliest arrival."""
    return DeclarativeAggregate("first", column)


def last(column: str) -> DeclarativeAggregate:
    """Non-null value with the largest event time; ties go to the latest arrival."""
    return DeclarativeAggregate("last", column)


def approx_count_distinct(column: str) -> DeclarativeAggregate:
    """Number of distinct non-null values.

    The reference engine computes the EXACT count (accumulator: the sorted list of distinct
    values; merge is the union). Spark's native path uses a HyperLogLog++ sketch
    (``approx_count_distinct``), so differential tests compare the two within its error bound.
    Values of one column must be mutually orderable, as in a typed Spark column.
    """
    return DeclarativeAggregate("approx_count_distinct", column)


def collect_list(column: str) -> DeclarativeAggregate:
    """Non-null values in arrival order (merge concatenates, earlier accumulator first)."""
    return DeclarativeAggregate("collect_list", column)

