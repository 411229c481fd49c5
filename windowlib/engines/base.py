"""The executor contract: what every engine receives and what it returns.

An executor runs a compiled pipeline over its input as bundles, continuing from prior state,
under a time policy, and returns the run's outputs in the public schema (``core/outputs.py``)
together with the new state and where the clocks stand afterwards::

    run = executor.run(pipeline, bundles, prior=PriorState(clock, state, kind), time=policy)
    run.outputs       # firings, late, rejects, side outputs and the new state
    run.clock         # RunClock after the run: the next run's prior clock
    run.state_kind    # the format of the new state (a checkpoint keeps its kind)

Implementations: ``ReferenceExecutor`` (``engines/reference.py``: plain Python, outputs as
lists of dicts, state as a snapshot), and on Spark ``NativeExecutor`` / ``GeneralExecutor``
(outputs as ``SparkOutputs`` over DataFrames, state as a DataFrame) behind ``SparkExecutor``,
which lets the planner choose. ``Pipeline.run``, ``run_bundles`` and ``run_incremental`` call
executors only through this contract; nothing above ``engines/`` reads an engine's internals.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from windowlib.core.loop import RunClock
from windowlib.core.pipeline import Pipeline
from windowlib.core.watermarks import WatermarkStrategy

__all__ = ["BundleTimes", "EngineRun", "Executor", "PriorState", "RunClock", "TimePolicy"]

Outputs = TypeVar("Outputs")


@dataclass(frozen=True)
class BundleTimes:
    """Explicit times of one bundle (ms; either may be ``None``): its given processing time
    and where the watermark stands after it. A bundle with explicit times exists even without
    elements (it moves time)."""

    processing_time: int | None = None
    watermark: int | None = None


@dataclass(frozen=True)
class TimePolicy:
    """How time moves in a run (SPEC §1).

    ``watermark``: the strategy (default ``BoundedOutOfOrderness(0)``). ``finalize``: end of
    input after the last bundle. ``processing_time``: the run's logical time for bundles whose
    arrival value is not a time, or ``{arrival value: time}``. ``arrival_interval``: the
    length of a time-valued arrival's interval when it cannot be read from the value.
    ``bundles``: explicit ``BundleTimes`` per arrival value (they win over everything)."""

    watermark: WatermarkStrategy | None = None
    finalize: bool = False
    processing_time: Any = None
    arrival_interval: Any = None
    bundles: Mapping[Any, BundleTimes] | None = None


@dataclass(frozen=True)
class PriorState:
    """Where a run continues from: the clocks and the engine's state of the last run
    (``state`` and ``kind`` are ``None`` when there is no pane state yet)."""

    clock: RunClock = field(default_factory=RunClock)
    state: Any = None
    kind: str | None = None


@dataclass
class EngineRun(Generic[Outputs]):
    """What an executor returns. ``path`` names the implementation that ran (``reference``,
    ``native``, ``general``); ``reasons`` why the planner did not take the native path;
    ``inputs`` the number of elements given (``None`` when only a job could count them)."""

    outputs: Outputs
    clock: RunClock
    path: str
    state_kind: str | None = None
    inputs: int | None = None
    reasons: tuple[str, ...] = ()
    detail: Any = None          # the engine's own account (a bundle plan), for diagnostics


class Executor(abc.ABC):
    """Runs pipelines over bundles. Implementations are stateless between calls: everything a
    run continues from comes in ``prior``."""

    name: str = "executor"

    @abc.abstractmethod
    def run(self, pipeline: Pipeline, bundles: Any, *, prior: PriorState | None = None,
            time: TimePolicy | None = None, run_id: str | None = None) -> EngineRun[Any]:
        """Run ``pipeline`` over ``bundles`` (the engine's input type) from ``prior``;
        ``run_id`` is stamped on the firings.

        Must not mutate its arguments. Raises ``DefinitionError`` when this executor cannot
        run the pipeline, ``InputError`` for input it cannot accept as a whole, ``StateError``
        for prior state it cannot continue from, ``ExecutionError(FUNCTION_FAILED)`` when a
        user function fails. Rows that are merely bad become rejects, never errors."""
