"""Test registry (``WINDOWLIB_REGISTRY=wl_single_registry``): only ``clickstream_demo``, so the
real-services test schedules one pipeline DAG (plus ``windowlib_backfill``)."""

from __future__ import annotations

from typing import Any

from jobs import registry as _real
from jobs.registry import default_root, validate_root
from windowlib.core.errors import DefinitionError

__all__ = ["default_root", "get", "registry", "validate_root"]


def registry() -> dict[str, Any]:
    return {"clickstream_demo": _real.get("clickstream_demo")}


def get(name: str) -> Any:
    if name != "clickstream_demo":
        raise DefinitionError(f"unknown pipeline {name!r}; known pipelines: clickstream_demo",
                              code="PIPELINE_UNKNOWN")
    return _real.get(name)
