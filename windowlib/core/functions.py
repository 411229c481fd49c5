"""Window functions and the FLIP-2 firing context.

User-facing protocols: ``AggregateFunction`` (``create_accumulator``, ``add(value, acc)``,
``merge(a, b)``, ``get_result(acc)``), ``ProcessWindowFunction.process(key, context,
elements)`` and ``WindowFunction.apply(key, window, elements)`` (a plain callable works too).
Elements are row dicts; ``key`` is the key value (a tuple for several key columns, ``None``
for ``window_all``).

``FunctionSpec`` is the frozen configuration a ``Pipeline`` holds; ``core/runner.py``'s
``FunctionRunner`` is the logic the driver calls.

Declared types (``core/schema.py``, read by ``core/declarations.py``): the function producing
the rows declares them with a ``result_schema`` attribute (DDL such as ``"n long, s double"``,
or a dataclass / ``TypedDict`` class) or with the return hint of ``process``/``apply``
(``Iterator[Stats]`` of a dataclass or ``TypedDict``); a side output's type comes from an
``OutputTag(name, schema=...)`` held as an attribute of the function (Flink declares tags as
fields too). The runner conforms declared rows and values, on every engine; a value that does
not fit is ``ExecutionError(RESULT_SCHEMA_MISMATCH)`` naming the field, the key and the window.
Functions that declare nothing keep their rows as they are (engines carry them as JSON text).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from windowlib.core.declarations import declared, yielded_type
from windowlib.core.errors import DefinitionError
from windowlib.core.outputs import RESERVED_COLUMNS
from windowlib.core.pane import PaneInfo
from windowlib.core.schema import Struct
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
    returns an iterable of rows (dicts or dataclass instances; other values become a
    ``result`` column). ``clear(context)`` is called when the window is cleaned up.
    ``result_schema`` declares the rows' columns (see the module docstring)."""

    result_schema: ClassVar[Any] = None

    def process(self, key: Any, context: Context, elements: list) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: Context) -> None:
        return None


class WindowFunction:
    """``apply(key, window, elements) -> iterable`` (Flink's ``WindowFunction``);
    ``result_schema`` as for ``ProcessWindowFunction``."""

    result_schema: ClassVar[Any] = None

    def apply(self, key: Any, window: Any, elements: list) -> Iterable[Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class OutputTag:
    """Names a side output (``context.output(tag, value)``). ``schema`` (DDL, a dataclass or a
    ``TypedDict`` class) types its values; such a tag must be an attribute of the function
    (``big = wl.OutputTag("big", schema="key string, n long")``) so engines know its columns
    before the run. Values of tags without a schema are kept as they are (JSON text on
    Spark)."""

    name: str
    schema: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DefinitionError(f"an OutputTag needs a non-empty name, got {self.name!r}",
                                  code="ARGUMENT_INVALID")
        declared(self.schema, f"the schema of side output {self.name!r}")

    @property
    def row_type(self) -> Struct | None:
        """The declared type of this tag's values (``None``: untyped)."""
        return declared(self.schema, f"the schema of side output {self.name!r}")


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
        """Emit ``value`` to the side output ``tag`` (conformed to the tag's declared type)."""
        driver = self._driver
        name, value = driver.logic.runner.side_value(tag, value, driver.key_arg, self.window)
        driver.sink.side_output(name, value)


@dataclass(frozen=True)
class FunctionSpec:
    """Which window function a pipeline applies (frozen configuration)."""

    kind: str          # declarative | aggregate | reduce | fold | apply | process | batch
    fn: Any
    process_fn: Any = None
    initial: Any = None
    # a run's own declaration of the result columns (``run_dataframe(result_schema=...)``);
    # it types the output only, so it is not part of ``describe()`` (nor the fingerprint)
    result_schema: Any = field(default=None, compare=False)

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

    # --- declared types (not part of describe(): they type outputs, not state) --------------
    @property
    def producer(self) -> Any:
        """The function whose rows become the results (``None`` for declarative aggregates,
        which engines type themselves)."""
        if self.process_fn is not None:
            return self.process_fn
        return None if self.kind == "declarative" else self.fn

    @cached_property
    def result_type(self) -> Struct | None:
        """The declared type of result rows (see the module docstring), or ``None``."""
        target = self.producer
        if self.result_schema is not None:
            out = declared(self.result_schema)
        elif target is None:
            return None
        elif getattr(target, "result_schema", None) is not None:
            out = declared(target.result_schema, f"{function_name(target)}.result_schema")
        else:
            method = getattr(target, "process", None) or getattr(target, "apply", None) \
                or (target if self.kind == "apply" else None)
            out = None if method is None else yielded_type(method)
        reserved = sorted(set(out.names) & RESERVED_COLUMNS) if out is not None else []
        if reserved:
            raise DefinitionError(f"the declared result columns {reserved} are set by "
                                  "windowlib itself; rename them", code="ARGUMENT_INVALID")
        return out

    @cached_property
    def side_types(self) -> Mapping[str, Struct]:
        """Typed side outputs: tag name -> type, from ``OutputTag`` attributes (of the class
        or the instance) of the functions that declare a ``schema``."""
        out: dict[str, Struct] = {}
        for target in (self.fn, self.process_fn):
            for value in _attributes(target):
                if isinstance(value, OutputTag) and value.schema is not None and \
                        out.setdefault(value.name, value.row_type) != value.row_type:
                    raise DefinitionError(f"side output {value.name!r} is declared with two "
                                          "schemas", code="ARGUMENT_INVALID")
        return out

    def check(self) -> None:
        """Read every declaration now (``DefinitionError`` where the pipeline is built)."""
        _ = self.result_type, self.side_types

    def with_result_schema(self, schema: Any) -> FunctionSpec:
        """This spec with the result columns declared by a run (``schema``: DDL, or a
        dataclass / ``TypedDict`` class); a function that declares other columns is a
        ``DefinitionError``."""
        given = declared(schema)
        mine = self.result_type
        if mine is not None and given != mine:
            raise DefinitionError(f"result_schema {schema!r} differs from the columns the "
                                  f"function declares ({mine.columns_ddl()}); declare them once",
                                  code="ARGUMENT_INVALID")
        spec = dataclasses.replace(self, result_schema=given)
        spec.check()
        return spec


def function_name(target: Any) -> str:
    """A function's qualified name, for messages."""
    if target is None:
        return "the declarative aggregates"
    return getattr(target, "__qualname__", None) or type(target).__qualname__


def _attributes(target: Any) -> list[Any]:
    """Attribute values of ``target``'s classes and of the instance itself (no descriptors
    are called)."""
    if target is None:
        return []
    values = [v for cls in type(target).__mro__ for v in vars(cls).values()]
    return values + list(getattr(target, "__dict__", {}).values())
