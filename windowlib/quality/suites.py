"""Expectation suites built in code from a pipeline definition (GX Core 1.x).

A run is validated on two frames, each with its own suite (``<pipeline>.<frame>``):

* ``firings`` — the staged firings, plus a derived ``window_length_ms`` column for sized
  (tumbling/sliding) assigners: required columns not null (keys, ``pane_index``, ``timing``,
  ``is_final``, window bounds unless the assigner is ``GlobalWindows``, ``retract`` in retracting
  mode), ``timing`` in {EARLY, ON_TIME, LATE}, ``pane_index >= 0``, the pane tuple unique,
  window length equal to the assigner's size, then the pipeline's own expectations.
* ``windows`` — one row per (key..., window_start, window_end) with ``on_time_rows``, the number
  of non-retraction ON_TIME firings: at most one per window (SPEC §6).

Invariants and decisions:

* Pane uniqueness is ``(key..., window_start, window_end, pane_index)``; in
  ``accumulating_and_retracting`` mode ``retract`` joins the tuple, because a retraction row is a
  copy of the row it cancels (same window and pane index, ``retract=True``). A duplicated
  retraction is still caught. Window bounds leave the tuple for global windows (always null).
* Uniqueness is checked only when the window function yields exactly one row per firing
  (declarative, aggregate, reduce, fold without a process function); ``apply``/``process`` may
  yield any number of rows per firing, so the check would reject valid output.
* Every built-in expectation carries ``meta["windowlib_check"]``: the stable check name results
  and failure messages use. Pipeline-specific expectations are copied (never mutated) and named
  ``custom_<n>_<expectation type>``.
* Suites are plain GX objects; nothing here touches Spark or a GX context.
* Conservation (``inputs = processed + late + rejects``, SPEC §7) is not a check here: its one
  owner is ``runs.summary.RunSummary.check_conservation``, which refuses to stage a run whose
  counts do not add up, so a GX copy of it could never fail.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import great_expectations as gx
from great_expectations.expectations import Expectation

from windowlib.core.assigners import GlobalWindows
from windowlib.core.errors import DefinitionError
from windowlib.core.pipeline import Pipeline

TIMINGS: tuple[str, ...] = ("EARLY", "ON_TIME", "LATE")
FRAMES: tuple[str, ...] = ("firings", "windows")
#: suite name suffix -> the frame it validates; built-in firings checks and the pipeline's own
#: expectations are separate suites so that each gets the cheapest GX result format.
SUITES: dict[str, str] = {"firings": "firings", "firings_custom": "firings",
                          "windows": "windows"}
WINDOW_LENGTH = "window_length_ms"
ON_TIME_ROWS = "on_time_rows"
META_KEY = "windowlib_check"
_SINGLE_ROW_KINDS = frozenset({"declarative", "aggregate", "reduce", "fold"})


@dataclass(frozen=True)
class Check:
    """One expectation, the frame it validates and its stable name."""

    name: str
    frame: str
    expectation: Expectation
    column: str | None
    builtin: bool = True

    @property
    def suite(self) -> str:
        return self.frame if self.builtin else f"{self.frame}_custom"


@dataclass(frozen=True)
class SuitePlan:
    """What to validate for one pipeline: its checks per frame and the facts they rest on."""

    pipeline: str
    key_columns: tuple[str, ...]
    window_size_ms: int | None
    global_windows: bool
    retracting: bool
    unique_panes: bool
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def window_columns(self) -> tuple[str, ...]:
        """Columns that identify a window (keys and, unless global, its bounds)."""
        bounds = () if self.global_windows else ("window_start", "window_end")
        return (*self.key_columns, *bounds)

    @property
    def pane_tuple(self) -> tuple[str, ...]:
        """Columns that must be unique together in the firings."""
        extra = ("retract",) if self.retracting else ()
        return (*self.window_columns, "pane_index", *extra)

    @property
    def required_columns(self) -> tuple[str, ...]:
        """Firings columns that must exist and never be null."""
        extra = ("retract",) if self.retracting else ()
        return (*self.window_columns, "pane_index", "timing", "is_final", *extra)

    def checks_for(self, frame: str) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.frame == frame)

    def checks_in(self, suite: str) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.suite == suite)

    def suite(self, name: str) -> gx.ExpectationSuite:
        """A new GX suite (``SUITES`` key; fresh expectation copies, safe to add to a context)."""
        if name not in SUITES:
            raise DefinitionError(f"no suite {name!r}; suites: {', '.join(SUITES)}",
                                  code="ARGUMENT_INVALID")
        return gx.ExpectationSuite(
            name=f"{self.pipeline}.{name}",
            expectations=[_copy(c.expectation) for c in self.checks_in(name)])

    def frame_suite(self, frame: str, checks: Sequence[Check] | None = None,
                    name: str | None = None) -> gx.ExpectationSuite:
        """One GX suite with every check of ``frame`` (built-in and the pipeline's own), or just
        ``checks``; named ``<pipeline>.<frame>`` unless ``name`` is given."""
        if frame not in FRAMES:
            raise DefinitionError(f"no frame {frame!r}; frames: {', '.join(FRAMES)}",
                                  code="ARGUMENT_INVALID")
        chosen = self.checks_for(frame) if checks is None else tuple(checks)
        return gx.ExpectationSuite(name=name or f"{self.pipeline}.{frame}",
                                   expectations=[_copy(c.expectation) for c in chosen])

    def suites(self) -> dict[str, gx.ExpectationSuite]:
        """Suites that have checks, keyed by ``SUITES`` name."""
        return {s: self.suite(s) for s in SUITES if self.checks_in(s)}


def _copy(expectation: Expectation) -> Expectation:
    return expectation.copy(update={"id": None}, deep=True)


def _named(expectation: Expectation, name: str, description: str) -> Expectation:
    meta = {**(expectation.meta or {}), META_KEY: name}
    return expectation.copy(update={"meta": meta, "description": description, "id": None},
                            deep=True)


def build_plan(pipeline: Pipeline, extra_expectations: Iterable[Expectation] = ()) -> SuitePlan:
    """The checks for ``pipeline``'s outputs, plus its own ``extra_expectations`` (on firings)."""
    if not isinstance(pipeline, Pipeline):
        raise DefinitionError(f"build_plan needs a Pipeline, got {pipeline!r}",
                              code="ARGUMENT_INVALID")
    assigner = pipeline.window_assigner
    if assigner is None:
        raise DefinitionError(f"pipeline {pipeline.name!r} has no window; nothing to validate",
                              code="NO_WINDOW")
    spec = pipeline.function
    plan = SuitePlan(
        pipeline=pipeline.name,
        key_columns=tuple(pipeline.key_columns),
        window_size_ms=getattr(assigner, "size_ms", None),
        global_windows=isinstance(assigner, GlobalWindows),
        retracting=pipeline.effective_accumulation == "accumulating_and_retracting",
        unique_panes=spec is not None and spec.kind in _SINGLE_ROW_KINDS
        and spec.process_fn is None,
    )
    checks = [*_firings_checks(plan), *_window_checks(plan)]
    checks += _custom_checks(extra_expectations)
    return SuitePlan(**{**plan.__dict__, "checks": tuple(checks)})


def _firings_checks(plan: SuitePlan) -> list[Check]:
    E = gx.expectations
    out = [Check(f"not_null:{c}", "firings",
                 _named(E.ExpectColumnValuesToNotBeNull(column=c), f"not_null:{c}",
                        f"`{c}` is required in every firing"), c)
           for c in plan.required_columns]
    out.append(Check("timing_allowed", "firings", _named(
        E.ExpectColumnValuesToBeInSet(column="timing", value_set=list(TIMINGS)),
        "timing_allowed", "pane timing is EARLY, ON_TIME or LATE"), "timing"))
    out.append(Check("pane_index_non_negative", "firings", _named(
        E.ExpectColumnValuesToBeBetween(column="pane_index", min_value=0),
        "pane_index_non_negative", "pane indices count firings from 0"), "pane_index"))
    if plan.unique_panes:
        cols = list(plan.pane_tuple)
        out.append(Check("pane_unique", "firings", _named(
            E.ExpectCompoundColumnsToBeUnique(column_list=cols), "pane_unique",
            f"one firing per ({', '.join(cols)})"), None))
    if plan.window_size_ms is not None:
        size = plan.window_size_ms
        out.append(Check("window_length", "firings", _named(
            E.ExpectColumnValuesToBeBetween(column=WINDOW_LENGTH, min_value=size,
                                            max_value=size),
            "window_length", f"window_end - window_start = the assigner's size ({size} ms)"),
            WINDOW_LENGTH))
    return out


def _window_checks(plan: SuitePlan) -> list[Check]:
    E = gx.expectations
    return [Check("on_time_at_most_once", "windows", _named(
        E.ExpectColumnValuesToBeBetween(column=ON_TIME_ROWS, min_value=0, max_value=1),
        "on_time_at_most_once", "at most one ON_TIME firing per window (retractions excluded)"),
        ON_TIME_ROWS)]



def _custom_checks(extra: Iterable[Expectation]) -> list[Check]:
    out = []
    for n, expectation in enumerate(_as_sequence(extra), start=1):
        if not isinstance(expectation, Expectation):
            raise DefinitionError(
                "pipeline expectations must be GX expectation objects (e.g. "
                f"gx.expectations.ExpectColumnValuesToBeBetween(...)), got {expectation!r}",
                code="ARGUMENT_INVALID")
        name = f"custom_{n}_{expectation.expectation_type}"
        column = getattr(expectation, "column", None)
        out.append(Check(name, "firings", _named(
            expectation, name, expectation.description or f"pipeline expectation {n}"),
            column if isinstance(column, str) else None, builtin=False))
    return out


def _as_sequence(extra: Iterable[Expectation] | Expectation) -> Sequence[Any]:
    if isinstance(extra, Expectation):
        return [extra]
    return list(extra or ())


__all__ = [
    "FRAMES",
    "META_KEY",
    "ON_TIME_ROWS",
    "SUITES",
    "TIMINGS",
    "WINDOW_LENGTH",
    "Check",
    "SuitePlan",
    "build_plan",
]
