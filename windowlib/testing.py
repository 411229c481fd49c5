"""Testing helpers: ``Bundle`` and ``run_bundles`` (SPEC §9).

``run_bundles`` runs a pipeline over explicit bundles on an engine and returns the firings as
a list of dicts (key columns, ``window_start``, ``window_end`` in ms — ``None`` for global
windows — ``pane_index``, ``timing``, the result columns and ``is_final``; plus ``retract`` in
``accumulating_and_retracting`` mode), and on request the late records, the rejects and the side
outputs (``{tag: [values]}``). Users test their own pipelines with it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.pipeline import Pipeline
from windowlib.core.watermarks import WatermarkStrategy

ENGINES = ("reference", "spark")


@dataclass(frozen=True)
class Bundle:
    """One unit of arrival: elements in arrival order, the bundle's processing time, and
    optionally the watermark after it (overrides the watermark strategy, like a test
    stream's ``advance_watermark_to``; the watermark never moves backwards)."""

    elements: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    processing_time: Any = None
    watermark: Any = None


def run_bundles(pipeline: Pipeline, bundles: Sequence[Bundle], engine: str = "reference",
                finalize: bool = False, with_late: bool = False,
                watermark: WatermarkStrategy | None = None, with_rejects: bool = False,
                with_side_outputs: bool = False) -> Any:
    """Run ``pipeline`` over ``bundles`` and return its firings.

    ``finalize=True`` ends the input after the last bundle (watermark +inf). With
    ``with_late=True`` returns ``(firings, late)``; late records are the element's columns plus
    ``reason``. With ``with_rejects=True`` the rejected rows (columns plus ``reason``) follow,
    with ``with_side_outputs=True`` the side outputs last: ``{tag: [values]}`` (values as
    ``context.output`` gave them; conformed to the tag's schema when it declares one). Every
    engine returns the same records.
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}",
                         code="ENGINE_UNKNOWN")
    bundles = list(bundles)
    for i, b in enumerate(bundles):
        if not isinstance(b, Bundle):
            raise InputError(f"bundle {i} is a {type(b).__name__}, not a windowlib Bundle",
                             code="BUNDLE_INVALID")
    if engine == "spark":
        from windowlib.engines.spark.testing import run_bundles_on_spark

        firings, late, rejects, side = run_bundles_on_spark(
            pipeline, bundles, finalize=finalize, watermark=watermark, with_side_outputs=True)
    else:
        firings, late, rejects, side = _run_reference(pipeline, bundles, finalize, watermark)
    out: list[Any] = [firings]
    for wanted, records in ((with_late, late), (with_rejects, rejects),
                            (with_side_outputs, side)):
        if wanted:
            out.append(records)
    return out[0] if len(out) == 1 else tuple(out)


def _run_reference(pipeline: Pipeline, bundles: list[Bundle], finalize: bool,
                   watermark: WatermarkStrategy | None) -> tuple[list, list, list, dict]:
    from windowlib.engines.base import TimePolicy
    from windowlib.engines.reference import ReferenceExecutor

    out = ReferenceExecutor().run(pipeline, bundles,
                                  time=TimePolicy(watermark=watermark, finalize=finalize)).outputs
    return out.firings, out.late, out.rejects, out.side_outputs
