"""The ``Pipeline`` builder: a frozen configuration that compiles to a ``PipelineLogic``.

Every builder method returns a new ``Pipeline`` and validates what it can at once, so an invalid
definition fails where it is written, with a ``DefinitionError`` code. ``compile()`` produces
the ``PipelineLogic`` the drivers run; ``fingerprint`` is a stable hash of everything that
decides the contents of window state (used to refuse incompatible checkpoints).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from windowlib.core.aggregates import AggregateSet, DeclarativeAggregate
from windowlib.core.assigners import GlobalWindows, WindowAssigner
from windowlib.core.describe import describe_value, earlier_descriptions
from windowlib.core.errors import DefinitionError, InputError
from windowlib.core.evictors import CountEvictor, Evictor
from windowlib.core.functions import FunctionSpec, OutputTag
from windowlib.core.logic import PipelineLogic
from windowlib.core.time import duration_ms
from windowlib.core.triggers import CountTrigger, PurgingTrigger, Trigger
from windowlib.core.triggers.dsl import ACCUMULATION_MODES, DslTrigger

_NAME = re.compile(r"[a-z0-9_]+")
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DAY_MS = 86_400_000


def _column(name: object, what: str, code: str = "KEY_INVALID") -> str:
    if not isinstance(name, str) or not _COLUMN.fullmatch(name):
        raise DefinitionError(f"{what} must be a column name (letters, digits, _), got {name!r}",
                              code=code)
    return name


@dataclass(frozen=True)
class Pipeline:
    """A windowed computation: ``Pipeline(name, timestamp=col).key_by(...).window(...)...``.

    ``name`` is ``[a-z0-9_]+`` (it names checkpoints and outputs); ``timestamp`` is the event
    time column (int ms, datetime, or ISO string). Value columns are all other columns.
    """

    name: str
    timestamp: str = "ts"
    key_columns: tuple[str, ...] = ()
    keyed: bool | None = None
    window_assigner: WindowAssigner | None = None
    window_trigger: Trigger | None = None
    window_evictor: Evictor | None = None
    allowed_lateness_ms: int = 0
    accumulation_mode: str | None = None
    function: FunctionSpec | None = None
    late_output_tag: str | None = None
    max_future_skew_ms: int = _DAY_MS
    _compiled: list = field(default_factory=list, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise DefinitionError(
                f"pipeline name must match [a-z0-9_]+ (it names checkpoint and output "
                f"folders), got {self.name!r}", code="NAME_INVALID")
        _column(self.timestamp, "timestamp", code="ARGUMENT_INVALID")
        if self.accumulation_mode is not None and self.accumulation_mode not in ACCUMULATION_MODES:
            raise DefinitionError(
                f"accumulation must be one of {', '.join(ACCUMULATION_MODES)}, got "
                f"{self.accumulation_mode!r}", code="ACCUMULATION_INVALID")
        if not isinstance(self.max_future_skew_ms, int):
            object.__setattr__(self, "max_future_skew_ms",
                               duration_ms(self.max_future_skew_ms, what="max_future_skew"))
        if self.max_future_skew_ms < 0:
            raise DefinitionError("max_future_skew must not be negative",
                                  code="ARGUMENT_INVALID")
        self._check()

    # --- builder --------------------------------------------------------------------------
    def _with(self, **changes: Any) -> Pipeline:
        return replace(self, _compiled=[], **changes)

    def key_by(self, *columns: str) -> Pipeline:
        """Partition by the given key column(s); windows are evaluated per key."""
        if self.keyed is False:
            raise DefinitionError("key_by after window_all: a pipeline is keyed or not",
                                  code="KEY_INVALID")
        if len(columns) == 1 and isinstance(columns[0], list | tuple):
            columns = tuple(columns[0])
        if not columns:
            raise DefinitionError("key_by needs at least one column", code="KEY_INVALID")
        cols = tuple(_column(c, "key column") for c in columns)
        if self.timestamp in cols or len(set(cols)) != len(cols):
            raise DefinitionError(f"key columns {cols} repeat a column or the timestamp",
                                  code="KEY_INVALID")
        return self._with(key_columns=cols, keyed=True)

    def window(self, assigner: WindowAssigner) -> Pipeline:
        """Assign elements to windows (keyed pipelines)."""
        if not isinstance(assigner, WindowAssigner):
            raise DefinitionError(f"window() needs a window assigner, got {assigner!r}",
                                  code="ARGUMENT_INVALID")
        if self.keyed is None:
            raise DefinitionError("call key_by(...) before window(), or use window_all() for "
                                  "a non-keyed pipeline", code="KEY_INVALID")
        return self._with(window_assigner=assigner)

    def window_all(self, assigner: WindowAssigner) -> Pipeline:
        """Non-keyed windows: all elements form one group (parallelism 1, as in Flink)."""
        if self.keyed:
            raise DefinitionError("window_all on a keyed pipeline; use window()",
                                  code="KEY_INVALID")
        if not isinstance(assigner, WindowAssigner):
            raise DefinitionError(f"window_all() needs a window assigner, got {assigner!r}",
                                  code="ARGUMENT_INVALID")
        return self._with(keyed=False, window_assigner=assigner)

    def count_window(self, size: int, slide: int | None = None) -> Pipeline:
        """Count windows: ``GlobalWindows`` + a count trigger (and evictor when sliding)."""
        for value in (size, slide):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value <= 0):
                raise DefinitionError(f"count_window sizes must be positive ints, got {value!r}",
                                      code="SIZE_NOT_POSITIVE")
        base = self.window(GlobalWindows.create()) if self.keyed is not False else \
            self.window_all(GlobalWindows.create())
        if slide is None:
            return base.trigger(PurgingTrigger.of(CountTrigger.of(size)))
        return base.trigger(CountTrigger.of(slide)).evictor(CountEvictor.of(size))

    def count_window_all(self, size: int, slide: int | None = None) -> Pipeline:
        return self._with(keyed=False).count_window(size, slide)

    def trigger(self, trigger: Trigger) -> Pipeline:
        """Replace the assigner's default trigger."""
        if not isinstance(trigger, Trigger):
            raise DefinitionError(f"trigger() needs a Trigger, got {trigger!r}",
                                  code="ARGUMENT_INVALID")
        return self._with(window_trigger=trigger)

    def evictor(self, evictor: Evictor) -> Pipeline:
        """Evict elements before/after the window function (forces buffering of elements)."""
        if not isinstance(evictor, Evictor):
            raise DefinitionError(f"evictor() needs an Evictor, got {evictor!r}",
                                  code="ARGUMENT_INVALID")
        return self._with(window_evictor=evictor)

    def allowed_lateness(self, lateness: object) -> Pipeline:
        """Keep window state this long after the watermark passes the window's end."""
        ms = duration_ms(lateness, what="allowed_lateness")
        if ms < 0:
            raise DefinitionError(f"allowed_lateness must not be negative, got {lateness!r}",
                                  code="LATENESS_NEGATIVE")
        return self._with(allowed_lateness_ms=ms)

    def side_output_late_data(self, tag: OutputTag | str) -> Pipeline:
        """Name the late output (late elements are always kept in the run's late output)."""
        name = tag.name if isinstance(tag, OutputTag) else tag
        return self._with(late_output_tag=_column(name, "late output tag", "ARGUMENT_INVALID"))

    def accumulation(self, mode: str) -> Pipeline:
        """``accumulating`` | ``discarding`` | ``accumulating_and_retracting``."""
        return self._with(accumulation_mode=mode)

    def max_future_skew(self, skew: object) -> Pipeline:
        """Quarantine elements more than ``skew`` beyond their bundle's processing time."""
        return self._with(max_future_skew_ms=duration_ms(skew, what="max_future_skew"))

    # --- window functions -----------------------------------------------------------------
    def _function(self, spec: FunctionSpec) -> Pipeline:
        if self.function is not None:
            raise DefinitionError(f"pipeline {self.name!r} already has a window function "
                                  f"({self.function.kind})", code="FUNCTION_ALREADY_SET")
        spec.check()    # declared result and side output types
        return self._with(function=spec)

    def reduce(self, fn: Any, process_fn: Any = None) -> Pipeline:
        """Incremental ``fn(a, b) -> row`` (optionally followed by a ProcessWindowFunction)."""
        _check_callable(getattr(fn, "reduce", fn), "reduce")
        _check_process_fn(process_fn)
        return self._function(FunctionSpec("reduce", fn, process_fn))

    def aggregate(self, *aggs: Any, process_fn: Any = None) -> Pipeline:
        """``aggregate(agg_fn[, process_fn])`` or declarative ``aggregate(sum("x"), count())``."""
        if aggs and all(isinstance(a, DeclarativeAggregate) for a in aggs):
            _check_process_fn(process_fn)
            return self._function(FunctionSpec("declarative", AggregateSet(aggs), process_fn))
        if any(isinstance(a, DeclarativeAggregate) for a in aggs):
            raise DefinitionError(
                "aggregate() takes either declarative aggregates (wl.aggregates.*) or one "
                "AggregateFunction [and a ProcessWindowFunction], not a mix",
                code="ARGUMENT_INVALID")
        if len(aggs) == 2 and process_fn is None:
            aggs, process_fn = aggs[:1], aggs[1]
        if len(aggs) != 1:
            raise DefinitionError("aggregate() needs an AggregateFunction", code="ARGUMENT_INVALID")
        agg = aggs[0]
        for method in ("create_accumulator", "add", "get_result"):
            _check_callable(getattr(agg, method, None), f"aggregate function's {method}")
        _check_process_fn(process_fn)
        return self._function(FunctionSpec("aggregate", agg, process_fn))

    def fold(self, initial: Any, fn: Any) -> Pipeline:
        """Flink's deprecated fold: ``fn(acc, row) -> acc`` from ``initial``."""
        _check_callable(getattr(fn, "fold", fn), "fold")
        return self._function(FunctionSpec("fold", fn, None, initial))

    def apply(self, window_fn: Any) -> Pipeline:
        """``window_fn(key, window, elements) -> iterable of rows``."""
        _check_callable(getattr(window_fn, "apply", window_fn), "apply")
        return self._function(FunctionSpec("apply", window_fn))

    def process(self, process_fn: Any) -> Pipeline:
        """A ``ProcessWindowFunction`` (gets the FLIP-2 context and all elements)."""
        if process_fn is None:
            raise DefinitionError("process() needs a ProcessWindowFunction",
                                  code="ARGUMENT_INVALID")
        _check_process_fn(process_fn)
        return self._function(FunctionSpec("process", process_fn))

    def process_panes(self, batch_fn: Any) -> Pipeline:
        """A ``BatchWindowFunction``: many panes per Python call (``core/batch.py``); it must
        declare its ``result_schema``."""
        if not callable(getattr(batch_fn, "process_panes", None)):
            raise DefinitionError("process_panes() needs a BatchWindowFunction (an object with "
                                  "a process_panes(panes) method)", code="ARGUMENT_INVALID")
        if getattr(batch_fn, "result_schema", None) is None:
            raise DefinitionError(f"{type(batch_fn).__name__} must declare result_schema (the "
                                  "columns of the rows it returns, e.g. \"n long, total "
                                  "double\")", code="ARGUMENT_INVALID")
        return self._function(FunctionSpec("batch", batch_fn))

    # --- validation and compilation -------------------------------------------------------
    def _check(self) -> None:
        assigner, trigger = self.window_assigner, self.window_trigger
        if assigner is not None and assigner.is_merging:
            effective = trigger if trigger is not None else assigner.default_trigger()
            if not effective.can_merge():
                raise DefinitionError(
                    f"{type(assigner).__name__} merges windows, but {effective!r} cannot merge "
                    "(Flink: a merging window assigner needs a trigger that can merge)",
                    code="TRIGGER_CANNOT_MERGE")
            if self.function is not None and not self.function.mergeable:
                raise DefinitionError("fold cannot be used with merging (session) windows; "
                                      "use aggregate or reduce", code="FOLD_WITH_MERGING")
        mode = self.accumulation_mode
        if mode is not None and isinstance(trigger, DslTrigger) and \
                trigger.accumulation_is_explicit and trigger.accumulation != mode:
            raise DefinitionError(
                f"the trigger says {trigger.accumulation} but the pipeline says {mode}; "
                "set the mode in one place", code="ACCUMULATION_INVALID")

    @property
    def effective_trigger(self) -> Trigger:
        if self.window_trigger is not None:
            return self.window_trigger
        if self.window_assigner is None:
            raise DefinitionError(f"pipeline {self.name!r} has no window; call window(...)",
                                  code="NO_WINDOW")
        return self.window_assigner.default_trigger()

    @property
    def effective_accumulation(self) -> str:
        if self.accumulation_mode is not None:
            return self.accumulation_mode
        trigger = self.window_trigger
        return trigger.accumulation if isinstance(trigger, DslTrigger) else "accumulating"

    def compile(self) -> PipelineLogic:
        """The logic object the drivers run (cached per pipeline object)."""
        if not self._compiled:
            self._compiled.append(PipelineLogic.build(self))
        return self._compiled[0]

    def describe(self) -> dict:
        """Canonical description of everything that shapes window state."""
        return {
            "format": 1,
            "timestamp": self.timestamp,
            "keys": list(self.key_columns),
            "keyed": bool(self.keyed),
            "assigner": describe_value(self.window_assigner),
            "trigger": describe_value(self.effective_trigger if self.window_assigner else None),
            "evictor": describe_value(self.window_evictor),
            "allowed_lateness_ms": self.allowed_lateness_ms,
            "accumulation": self.effective_accumulation,
            "function": describe_value(self.function),
        }

    # --- execution (an engine installs itself: ``use_engine``; the core imports none) -------
    def run(self, df: Any, arrival: str, watermark: Any = None, finalize: bool = False,
            **options: Any) -> Any:
        """Run on a Spark DataFrame (one-shot, in-memory state): returns ``firings``, ``late``
        and ``rejects`` DataFrames. ``arrival`` is the column whose values order bundles.
        See ``windowlib.engines.spark.engine.run_dataframe`` for the options."""
        return _engine().run(self, df, arrival, watermark=watermark, finalize=finalize,
                             **options)

    def explain(self) -> str:
        """Which Spark path runs this pipeline, and why."""
        return _engine().explain(self)

    def required_columns(self) -> dict[str, str]:
        """The input columns this pipeline reads by name -> what for (``timestamp``, ``key``,
        or the declarative aggregate that reads it). Python window functions read whatever
        they like; only their key and timestamp columns are known."""
        out = {self.timestamp: "timestamp", **{c: "key" for c in self.key_columns}}
        spec = self.function
        if spec is not None and spec.kind == "declarative":
            for agg in spec.fn.aggregates:
                if agg.column is not None:
                    out.setdefault(agg.column, f"{agg.kind}({agg.column!r})")
        return out

    @property
    def fingerprint(self) -> str:
        """Stable 16-hex-digit hash of ``describe()``. ``DEFINITION_UNDESCRIBABLE`` when a
        custom part holds state that cannot be described (``core.describe``)."""
        return _hash_description(self.describe(), self.name)

    @property
    def earlier_fingerprints(self) -> tuple[str, ...]:
        """The fingerprints earlier windowlib versions gave this same definition, when they
        differ from ``fingerprint`` (they described custom triggers, evictors and functions
        without their state): checkpoints carrying one are accepted, and the next commit
        records ``fingerprint``. Empty for definitions of built-ins only."""
        try:
            with earlier_descriptions():
                earlier = _hash_description(self.describe(), self.name)
        except (RecursionError, DefinitionError):
            return ()
        return () if earlier == self.fingerprint else (earlier,)


def _hash_description(description: dict, name: str) -> str:
    try:
        text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise DefinitionError(f"pipeline {name!r}: a describe() returned data that is not "
                              f"JSON ({exc}); return plain values (numbers, strings, lists, "
                              "dicts)", code="DEFINITION_UNDESCRIBABLE") from None
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class DataFrameEngine(Protocol):
    """What ``Pipeline.run`` and ``Pipeline.explain`` call (the Spark engine's entry points)."""

    def run(self, pipeline: Pipeline, df: Any, arrival: str, **options: Any) -> Any: ...

    def explain(self, pipeline: Pipeline) -> str: ...


_ENGINES: list[DataFrameEngine] = []


def use_engine(engine: DataFrameEngine) -> None:
    """Install the engine behind ``Pipeline.run``/``explain`` (``windowlib`` installs the
    Spark engine, which loads on first use)."""
    _ENGINES[:] = [engine]


def _engine() -> DataFrameEngine:
    if not _ENGINES:
        raise InputError("no engine is installed to run pipelines on DataFrames; "
                         "import windowlib", code="ENGINE_UNKNOWN")
    return _ENGINES[0]


def _check_callable(fn: Any, what: str) -> None:
    if not callable(fn):
        raise DefinitionError(f"{what} needs a callable, got {fn!r}", code="ARGUMENT_INVALID")


def _check_process_fn(process_fn: Any) -> None:
    if process_fn is not None and not callable(getattr(process_fn, "process", None)):
        raise DefinitionError(
            f"expected a ProcessWindowFunction (an object with process(key, context, "
            f"elements)), got {process_fn!r}", code="ARGUMENT_INVALID")


__all__: Sequence[str] = ["Pipeline", "PipelineLogic"]

