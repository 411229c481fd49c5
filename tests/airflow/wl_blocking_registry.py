"""Test registry (``WINDOWLIB_REGISTRY=wl_blocking_registry``): the project's jobs, with
``clickstream_demo`` given one impossible expectation (``clicks <= 0``) so its audit fails."""

from __future__ import annotations

import dataclasses
from typing import Any

from jobs import registry as _real
from jobs.registry import default_root, validate_root

__all__ = ["default_root", "get", "registry", "validate_root"]
IMPOSSIBLE = "clicks"


def _expectations() -> list[Any]:
    import great_expectations as gx

    own = _real.get("clickstream_demo").build_expectations()
    return [*own, gx.expectations.ExpectColumnValuesToBeBetween(column=IMPOSSIBLE, max_value=0)]


def registry() -> dict[str, Any]:
    jobs = _real.registry()
    jobs["clickstream_demo"] = dataclasses.replace(jobs["clickstream_demo"],
                                                   expectations=_expectations)
    return jobs


def get(name: str) -> Any:
    jobs = registry()
    if name not in jobs:
        return _real.get(name)  # raises PIPELINE_UNKNOWN with the known names
    return jobs[name]
