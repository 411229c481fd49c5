"""Window functions and the FLIP-2 firing context.

User-facing protocols: ``AggregateFunction`` (``create_accumulator``, ``add(value, acc)``,
``merge(a, b)``, ``get_result(acc)``), ``ProcessWindowFunction.process(key, context,
elements)`` and ``WindowFunction.apply(key, window, elements)`` (a plain callable works too).
Elements are row dicts; ``key`` is the key value (a tuple for several key columns, ``None``
for ``window_all``).

``FunctionSpec`` is the frozen configuration a ``Pipeline`` holds; ``FunctionRunner`` is the
logic the driver calls: it keeps a pane's *contents* (an accumulator, or a list of
``TimestampedValue`` when the function needs every element or an evictor is present) and turns
contents into result rows (dicts) at a firing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from windowlib.core.aggregates import AggregateSet
from windowlib.core.codec import decode, encode
from windowlib.core.errors import ExecutionError
from windowlib.core.evictors import TimestampedValue
from windowlib.core.pane import PaneInfo
from windowlib.core.state import StateDescriptor
from windowlib.core.time import finite_ms


class AggregateFunction:
    """Incremental aggregation (Flink's ``AggregateFunction``); accumulators must be plain
    data (numbers, strings, lists, dicts, tuples) so they can be checkpointed."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add(self, value: dict, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def get_result(self, accumulator: Any) -> Any:
        raise NotImplementedError


class ProcessWindowFunction:
    """``process(key, context, elements)`` is called at every firing with the pane's elements
    (or the single pre-aggregated result when combined with ``reduce``/``aggregate``) and
    returns an iterable of rows (dicts; other values become a ``result`` column).
    ``clear(context)`` is called when the window is cleaned up."""

    def process(self, key: Any, context: Context, elements: list) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: Context) -> None:
        return None


class WindowFunction:
    """``apply(key, window, elements) -> iterable`` (Flink's ``WindowFunction``)."""

    def apply(self, key: Any, window: Any, elements: list) -> Iterable[Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class OutputTag:
    """Names a side output (``context.output(tag, value)``)."""

    name: str


PENDING_MERGE = "\x00merge:"  # per-window state values waiting to be merged into one


class Context:
    """The FLIP-2 context handed to ``ProcessWindowFunction.process`` (and to evictors).

    ``pane.index`` counts the window's firings from 0; ``pane.timing`` is EARLY, ON_TIME or
    LATE; ``pane.is_last`` is true when the window is cleaned up right after this firing.
    ``current_watermark``/``current_processing_time`` are epoch ms, or ``None`` while the
    clock has no finite value: before the first watermark (processing time), and after the
    end of a finalized input — the values of the firing's ``watermark``/``processing_time``
    columns.
    """

    __slots__ = ("_driver", "_record", "pane", "window")

    def __init__(self, driver: Any, window: Any, record: Any, pane: PaneInfo | None) -> None:
        self._driver, self.window, self._record, self.pane = driver, window, record, pane

    @property
    def current_watermark(self) -> int | None:
        return finite_ms(self._driver.clock.watermark)

    @property
    def current_processing_time(self) -> int | None:
        return finite_ms(self._driver.clock.processing_time)

    def window_state(self, descriptor: StateDescriptor) -> Any:
        """State scoped to this key and window (deleted with the window). When windows merged,
        their values of this state are merged here, on first use, with the descriptor."""
        store = self._record.fn_state
        pending = store.pop(PENDING_MERGE + descriptor.name, None)
        if pending:
            values = ([store[descriptor.name]] if descriptor.name in store else []) + pending
            store[descriptor.name] = descriptor.merge_values(values)
        return descriptor.handle(store)

    def global_state(self, descriptor: StateDescriptor) -> Any:
        """State scoped to this key, shared by all its windows."""
        return descriptor.handle(self._driver.global_state)

    def output(self, tag: OutputTag | str, value: Any) -> None:
        """Emit ``value`` to the side output ``tag``."""
        self._driver.sink.side_output(tag.name if isinstance(tag, OutputTag) else str(tag), value)


@dataclass(frozen=True)
class FunctionSpec:
    """Which window function a pipeline applies (frozen configuration)."""

    kind: str                      # declarative | aggregate | reduce | fold | apply | process
    fn: Any
    process_fn: Any = None
    initial: Any = None

    @property
    def incremental(self) -> bool:
        return self.kind in ("declarative", "aggregate", "reduce", "fold")

    @property
    def mergeable(self) -> bool:
        return self.kind != "fold"

    def describe(self) -> dict:
        from windowlib.core.describe import describe_value

        out = {"kind": self.kind, "fn": describe_value(self.fn)}
        if self.process_fn is not None:
            out["process_fn"] = describe_value(self.process_fn)
        if self.kind == "fold":
            out["initial"] = describe_value(self.initial)
        return out

    def output_names(self) -> tuple[str, ...] | None:
        """Result column names when they are known without running (declarative only)."""
        if self.kind == "declarative" and self.process_fn is None:
            return self.fn.output_names
        return None


def _rows(items: Iterable[Any] | None, what: str) -> list[dict]:
    if items is None:
        return []
    if isinstance(items, dict) or not isinstance(items, Iterable):
        raise ExecutionError(f"{what} must return an iterable of rows, got "
                             f"{type(items).__name__}", code="FUNCTION_FAILED")
    return [dict(r) if isinstance(r, dict) else {"result": r} for r in items]


def _single(value: Any) -> dict:
    return dict(value) if isinstance(value, dict) else {"result": value}


class FunctionRunner:
    """Executes a ``FunctionSpec`` for the driver. Pane contents are ``None`` when empty."""

    def __init__(self, spec: FunctionSpec, buffered: bool) -> None:
        self.spec = spec
        self.buffered = buffered or not spec.incremental
        self._create, self._add, self._merge, self._result = self._incremental_ops(spec)
        if not self.buffered:
            create, add = self._create, self._add

            def add_incremental(contents: Any, row: dict, ts_ms: int) -> Any:
                return add(create() if contents is None else contents, row, ts_ms)

            self.add = add_incremental  # type: ignore[method-assign]

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
    def results(self, key: Any, window: Any, context: Context, contents: Any) -> list[dict]:
        """Result rows for one firing. ``contents`` is an accumulator, or the element list
        (after ``evict_before``) when buffered; ``None`` for an empty pane."""
        spec = self.spec
        if spec.kind == "apply":
            values = [e.value for e in contents or ()]
            apply = getattr(spec.fn, "apply", spec.fn)
            return _rows(apply(key, window, values), "the window function")
        if spec.kind == "process":
            values = [e.value for e in contents or ()]
            return _rows(spec.fn.process(key, context, values), "process()")
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
            return _rows(spec.process_fn.process(key, context, given), "process()")
        if result is None and spec.kind == "reduce":
            return [{}]
        return [_single(result)]

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
