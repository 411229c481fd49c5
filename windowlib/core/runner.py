"""The logic the driver calls for a pipeline's window function (``FunctionSpec``, frozen
configuration, lives in ``core/functions.py``).

``FunctionRunner`` keeps a pane's *contents* — an accumulator, or a list of
``TimestampedValue`` when the function needs every element or an evictor is present — and turns
contents into result rows (dicts) at a firing, conformed to the declared row type when the
function declares one (``core/schema.py``); it also conforms the values of typed side outputs.
The same runner runs on every engine, so every engine accepts and refuses the same rows.

A function may keep what it returned (or sent to a side output) and change it later; the rows
and values the runner hands on are copies taken at the call, nested lists, dicts and other
objects included (``core/copies.py``), so no engine sees a later change, however late it
encodes them. Without a declared type they are also plain data (``copies.kept_result``: NumPy
values made Python's); a value that is not is ``FUNCTION_FAILED`` naming the function, the
column (or side output), the key and the window, on every engine.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from itertools import chain
from types import GeneratorType
from typing import Any

from windowlib.core.aggregates import AggregateOverflow, AggregateSet
from windowlib.core.batch import panes_table, rows_by_pane
from windowlib.core.codec import decode, encode
from windowlib.core.copies import NotPlain, kept_result, kept_result_row
from windowlib.core.errors import ExecutionError, WindowlibError
from windowlib.core.evictors import TimestampedValue
from windowlib.core.functions import (
    Context,
    FunctionSpec,
    OutputTag,
    ProcessWindowFunction,
    function_name,
)
from windowlib.core.schema import Mismatch, Struct
from windowlib.core.time import format_ts

__all__ = ["FunctionRunner", "conform"]


_ROW_CONTAINERS = (list, tuple, GeneratorType)    # what functions return, checked first
_NO_ROW = object()


def _rows(items: Iterable[Any] | None, what: str,
          conformed: Callable[[Any], dict] | None = None) -> list[dict]:
    """A function's rows as new dicts, each taken (``_single``) before the function goes on:
    what it returned may be kept and changed by it. ``conformed``: the declared type's check
    of one row (``_conformer``), which takes each row in place of the copy (the row it
    returns holds new containers only); without one, the rows must be plain data
    (``NotPlain``)."""
    container = type(items)
    if container is GeneratorType or container is list:     # the usual: one row, copied in C
        rest = iter(items)
        first = next(rest, _NO_ROW)
        if first is _NO_ROW:
            return []
        if type(first) is not dict:
            row = _single(first, conformed)
        elif conformed is not None:
            row = conformed(first)
        else:
            row = kept_result_row(first)
        second = next(rest, _NO_ROW)
        if second is _NO_ROW:
            return [row]
        return [row, *[_single(r, conformed) for r in chain((second,), rest)]]
    if items is None:
        return []
    if type(items) not in _ROW_CONTAINERS and (isinstance(items, dict)
                                               or not isinstance(items, Iterable)):
        raise ExecutionError(f"{what} must return an iterable of rows, got "
                             f"{type(items).__name__}", code="FUNCTION_FAILED")
    return [_single(r, conformed) for r in items]


def _single(value: Any, conformed: Callable[[Any], dict] | None = None) -> dict:
    """A result as a new row: dicts as they are, dataclass instances as their fields,
    anything else as a ``result`` column; then conformed (``conformed``), or copied as plain
    data (``kept_result``)."""
    if isinstance(value, dict):
        row = value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        row = dataclasses.asdict(value)     # (copies nested values itself)
    else:
        row = {"result": value}
    return kept_result_row(row) if conformed is None else conformed(row)


def conform(row_type: Struct, value: Any, what: str, key: Any, window: Any) -> Any:
    """``value`` conformed to ``row_type`` (``core/schema.py``), or
    ``ExecutionError(RESULT_SCHEMA_MISMATCH)`` naming the field, the key and the window."""
    try:
        return row_type.conform(value)
    except Mismatch as exc:
        raise schema_mismatch(what, exc, key, window) from None


def schema_mismatch(what: str, exc: Mismatch, key: Any, window: Any) -> ExecutionError:
    """The ``RESULT_SCHEMA_MISMATCH`` of ``conform``."""
    return ExecutionError(f"{what}: {exc} (key {key!r}, window {window!r}); fix the "
                          "function or its declared schema", code="RESULT_SCHEMA_MISMATCH")


def _conformer(convert: Callable[[Any, str], dict], what: str, key: Any, window: Any
               ) -> Callable[[Any], dict]:
    """``conform`` of one firing's rows (``convert``: ``Struct.converter()``), for ``_rows``."""
    def conformed(row: Any) -> dict:
        try:
            return convert(row, "")
        except Mismatch as exc:
            raise schema_mismatch(what, exc, key, window) from None
    return conformed


def function_failed(what: Any, key: Any, window: Any, exc: BaseException, *,
                    label: str = "") -> ExecutionError:
    """The error a failing piece of user code (a window function, an aggregate, an evictor, a
    trigger) becomes on every engine: ``FUNCTION_FAILED`` naming it (after ``label``), the key
    and the window, with the original exception's type and message (the original is chained
    as ``__cause__``). A result that is not plain data (``NotPlain``) says what it holds; a
    declarative sum beyond 64 bits (``AggregateOverflow``) is ``AGGREGATE_OVERFLOW``."""
    if isinstance(exc, AggregateOverflow):
        return ExecutionError(f"{exc}, for key {key!r}, window {window}",
                              code="AGGREGATE_OVERFLOW")
    if isinstance(exc, NotPlain):
        return ExecutionError(
            f"{label}{function_name(what)} produced a value that is not plain data for key "
            f"{key!r}, window {window}: {exc}; results and side-output values without a "
            "declared type hold None, booleans, numbers, strings, bytes, Decimals, datetimes "
            "and lists, tuples, sets and dicts of them (NumPy values are converted)",
            code="FUNCTION_FAILED")
    return ExecutionError(f"{label}{function_name(what)} failed for key {key!r}, window "
                          f"{window}: {type(exc).__name__}: {exc}", code="FUNCTION_FAILED")


def assignment_failed(assigner: Any, key: Any, ts_ms: int, exc: BaseException
                      ) -> ExecutionError:
    """``FUNCTION_FAILED`` for window assignment (a user's assigner, a dynamic session gap
    function), naming it, the key and the element's time (there is no window yet)."""
    gap_fn = getattr(assigner, "gap_fn", None)
    what = function_name(assigner) if gap_fn is None else (
        f"the dynamic gap function {function_name(gap_fn)} of {function_name(assigner)}")
    return ExecutionError(f"{what} failed for key {key!r}, element at {format_ts(ts_ms)} "
                          f"({ts_ms} ms): {type(exc).__name__}: {exc}", code="FUNCTION_FAILED")


def trigger_failed(trigger: Any, key: Any, window: Any, exc: BaseException) -> ExecutionError:
    """``function_failed`` for a trigger (a user's ``Trigger``, or one that calls user code:
    a ``DeltaTrigger``'s delta function)."""
    return function_failed(trigger, key, window, exc, label="trigger ")


class FunctionRunner:
    """Executes a ``FunctionSpec`` for the driver. Pane contents are ``None`` when empty."""

    def __init__(self, spec: FunctionSpec, buffered: bool) -> None:
        self.spec = spec
        self.result_type = spec.result_type
        # the declared type's converter, looked up once (``None``: rows kept as they are)
        self._convert = None if spec.result_type is None else spec.result_type.converter()
        self._what_row = f"a result row of {function_name(spec.producer)}"
        self.side_types = spec.side_types
        self.buffered = buffered or not spec.incremental
        # whether ``results`` reads its ``context`` (a process function sees the pane)
        self.uses_context = spec.kind in ("process", "batch") or spec.process_fn is not None
        self._create, self._add, self._merge, self._result = self._incremental_ops(spec)
        if not self.buffered:
            create, add = self._create, self._add

            def add_incremental(contents: Any, row: dict, ts_ms: int) -> Any:
                return add(create() if contents is None else contents, row, ts_ms)

            self.add = add_incremental  # type: ignore[method-assign]
            if spec.kind == "declarative":
                self.add = spec.fn.adder()  # type: ignore[method-assign]
        if spec.kind in ("process", "apply"):
            self.value_results, self.results = self._value_callers()  # type: ignore[method-assign]
        if (spec.kind in ("declarative", "aggregate") and not self.buffered
                and spec.process_fn is None and self.result_type is None):
            self.results = self._accumulator_results  # type: ignore[method-assign]
            if spec.kind == "declarative":
                self.results = self._declarative_results  # type: ignore[method-assign]

    @staticmethod
    def _incremental_ops(spec: FunctionSpec) -> tuple[Callable, Callable, Callable, Callable]:
        fn = spec.fn
        if spec.kind == "declarative":
            agg: AggregateSet = fn
            return agg.create_accumulator, agg.add, agg.merge, agg.get_result
        if spec.kind == "aggregate":
            return (fn.create_accumulator, lambda acc, row, ts: fn.add(row, acc), fn.merge,
                    fn.get_result)
        if spec.kind == "reduce":
            reduce_fn = getattr(fn, "reduce", fn)
            return (lambda: None,
                    lambda acc, row, ts: dict(row) if acc is None else reduce_fn(acc, row),
                    lambda a, b: b if a is None else a if b is None else reduce_fn(a, b),
                    lambda acc: acc)
        if spec.kind == "fold":
            fold_fn = getattr(fn, "fold", fn)
            return (lambda: copy.deepcopy(spec.initial), lambda acc, row, ts: fold_fn(acc, row),
                    None, lambda acc: acc)
        return (None, None, None, None)  # type: ignore[return-value]

    # --- contents -------------------------------------------------------------------------
    def add(self, contents: Any, row: dict, ts_ms: int) -> Any:
        if self.buffered:
            if contents is None:
                return [TimestampedValue(row, ts_ms)]
            contents.append(TimestampedValue(row, ts_ms))
            return contents
        return self._add(self._create() if contents is None else contents, row, ts_ms)

    def merge(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        if self.buffered:
            return [*a, *b]
        return self._merge(a, b)

    def aggregate_elements(self, elements: list[TimestampedValue]) -> Any:
        acc = self._create()
        for e in elements:
            acc = self._add(acc, e.value, e.timestamp)
        return acc

    # --- results --------------------------------------------------------------------------
    def results(self, key: Any, window: Any, context: Context | None, contents: Any
                ) -> list[dict]:
        """Result rows for one firing, conformed to the declared type when there is one.
        ``contents`` is an accumulator, or the element list (after ``evict_before``) when
        buffered; ``None`` for an empty pane. A failing function is ``FUNCTION_FAILED``; the
        rows are conformed as they are taken (``_rows``)."""
        convert = self._convert
        conformed = None if convert is None else _conformer(convert, self._what_row, key,
                                                             window)
        try:
            return self._results(key, window, context, contents, conformed)
        except WindowlibError:
            raise
        except Exception as exc:
            raise function_failed(self.spec.producer, key, window, exc) from exc

    @property
    def takes_values(self) -> bool:
        """Whether the function reads only its elements' values (``process``, ``apply``):
        ``value_results`` then gives the same rows as ``results``."""
        return self.spec.kind in ("process", "apply")

    def value_results(self, key: Any, window: Any, context: Context | None, values: list
                      ) -> list[dict]:
        """``results`` of a function that ``takes_values``, given the pane's element values
        (a list of its own, which the function may keep) instead of its contents. Set per
        runner by ``_value_callers``; other kinds take contents, not values."""
        raise TypeError(f"a {self.spec.kind} function does not take values (takes_values)")

    def _value_callers(self) -> tuple[Callable, Callable]:
        """``(value_results, results)`` of a ``process`` or ``apply`` function, the one place
        that calls it: the function's rows checked and copied, or conformed to the declared
        type, as they are taken (``_rows``; the first row that does not fit is
        ``RESULT_SCHEMA_MISMATCH`` before the function goes on), and a failure made
        ``FUNCTION_FAILED``, in one frame per firing (every engine's firing path calls one).
        ``results`` hands it the contents' values."""
        spec = self.spec
        producer = spec.producer
        process = spec.kind == "process"      # (``Pipeline.process`` checked ``process``)
        call = spec.fn.process if process else getattr(spec.fn, "apply", spec.fn)
        what = "process()" if process else "the window function"
        what_row, convert = self._what_row, self._convert

        def value_results(key: Any, window: Any, context: Context | None, values: list
                          ) -> list[dict]:
            conformed = None if convert is None else _conformer(convert, what_row, key,
                                                                 window)
            try:
                return _rows(call(key, context, values) if process else
                             call(key, window, values), what, conformed)
            except WindowlibError:
                raise
            except Exception as exc:
                raise function_failed(producer, key, window, exc) from exc

        def element_results(key: Any, window: Any, context: Context | None, contents: Any
                            ) -> list[dict]:
            return value_results(key, window, context, [e.value for e in contents or ()])

        return value_results, element_results

    def _accumulator_results(self, key: Any, window: Any, context: Context | None,
                             contents: Any) -> list[dict]:
        """``results`` of an accumulator that is its own result (declarative or aggregate
        functions with no process function and no declared type): the same rows, fewer
        steps."""
        try:
            return [_single(self._result(self._create() if contents is None else contents))]
        except WindowlibError:
            raise
        except Exception as exc:
            raise function_failed(self.spec.producer, key, window, exc) from exc

    def _declarative_results(self, key: Any, window: Any, context: Context | None,
                             contents: Any) -> list[dict]:
        """``_accumulator_results`` of declarative aggregates: ``AggregateSet.get_result`` is
        already a new row (no copy needed)."""
        try:
            return [self._result(self._create() if contents is None else contents)]
        except WindowlibError:
            raise
        except Exception as exc:
            raise function_failed(self.spec.producer, key, window, exc) from exc

    def side_value(self, tag: OutputTag | str, value: Any, key: Any, window: Any
                   ) -> tuple[str, Any]:
        """``(tag name, value)`` of a ``context.output`` call, the value conformed to the
        tag's declared type. A tag with a schema the function does not declare is an
        ``ExecutionError(SIDE_OUTPUT_UNDECLARED)`` (its columns must be known before the
        run)."""
        name = tag.name if isinstance(tag, OutputTag) else str(tag)
        row_type = self.side_types.get(name)
        if isinstance(tag, OutputTag) and tag.schema is not None and tag.row_type != row_type:
            raise ExecutionError(
                f"side output {name!r} has a schema but {function_name(self.spec.producer)} "
                f"does not declare it: make the tag an attribute of the function, e.g. "
                f"{name} = wl.OutputTag({name!r}, schema=...)", code="SIDE_OUTPUT_UNDECLARED")
        if row_type is None:
            try:
                return name, kept_result(value)
            except NotPlain as exc:     # (inside the function's call: FUNCTION_FAILED)
                raise NotPlain(f"side output {name!r} got {exc}") from None
        # (the conformed value holds new containers only: no copy first, as for result rows)
        return name, conform(row_type, value, f"a value of side output {name!r}", key, window)

    def _results(self, key: Any, window: Any, context: Context | None, contents: Any,
                 conformed: Callable[[Any], dict] | None) -> list[dict]:
        spec = self.spec         # process/apply: ``_value_callers``
        if spec.kind == "batch":      # one pane per call here; the pane path sends many
            if not contents:
                return []
            pane = context.pane
            table = panes_table([(window, pane.index, pane.timing._value_, pane.is_last,
                                  contents)])
            rows = rows_by_pane(spec.fn.process_panes(table), 1, "process_panes()")[0]
            return rows if conformed is None else list(map(conformed, rows))
        if self.buffered:
            acc = self.aggregate_elements(contents or [])
        else:
            acc = self._create() if contents is None else contents
        if spec.kind == "reduce" and acc is None:
            result = None
        else:
            result = self._result(acc)
        if spec.process_fn is not None:
            given = [] if result is None and spec.kind == "reduce" else [result]
            return _rows(spec.process_fn.process(key, context, given), "process()",
                         conformed)
        if result is None and spec.kind == "reduce":
            return [{} if conformed is None else conformed({})]
        return [_single(result, conformed)]

    @property
    def needs_clear(self) -> bool:
        """False when ``clear`` would do nothing (no function, or the inherited no-op
        ``ProcessWindowFunction.clear``), so the driver need not build a context for it."""
        clear = self._clear_fn()
        return clear is not None and getattr(clear, "__func__", None) is not \
            ProcessWindowFunction.clear

    def _clear_fn(self) -> Any:
        target = self.spec.fn if self.spec.kind == "process" else self.spec.process_fn
        return getattr(target, "clear", None)

    def clear(self, key: Any, context: Context) -> None:
        clear = self._clear_fn()
        if clear is not None:
            clear(context)

    # --- snapshots ------------------------------------------------------------------------
    def encode_contents(self, contents: Any) -> Any:
        if self.buffered:
            return [[encode(e.value), e.timestamp] for e in contents]
        return encode(contents)

    def decode_contents(self, data: Any) -> Any:
        if self.buffered:
            return [TimestampedValue(decode(v), int(ts)) for v, ts in data]
        return decode(data)
