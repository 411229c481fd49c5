"""Data quality for windowlib runs: GX suites from the pipeline definition, validation of staged
outputs on Spark, the lateness histogram and the self-contained run report.

Submodules are imported lazily (Great Expectations and Spark are heavy imports):
``validate_outputs``/``ValidationOutcome`` (``validate``), ``build_plan`` (``suites``),
``lateness_histogram`` (``lateness``), ``write_run_report`` (``report``).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "validate_outputs": "validate", "ValidationOutcome": "validate", "CheckResult": "validate",
    "build_plan": "suites", "SuitePlan": "suites",
    "lateness_histogram": "lateness", "LATENESS_BUCKETS": "lateness",
    "write_run_report": "report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'windowlib.quality' has no attribute {name!r}")
    return getattr(importlib.import_module(f"windowlib.quality.{module}"), name)
