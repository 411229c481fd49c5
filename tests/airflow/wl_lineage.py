"""The OpenLineage events the provider wrote (file transport, ``wl_airflow_env``): read from a
mark on, each one parsed back into the client's typed classes and its windowlib facets checked
against ``docs/lineage/*.json`` (``tests/lineage_events.py``)."""

from __future__ import annotations

import json
from typing import Any

from lineage_events import check_windowlib_facets, parse_event
from wl_airflow_env import LINEAGE_EVENTS


def mark() -> int:
    """Where the events written from now on start."""
    return LINEAGE_EVENTS.stat().st_size if LINEAGE_EVENTS.exists() else 0


def events_since(start: int) -> list[dict[str, Any]]:
    """The task events written since ``start`` (DAG-level events left out), checked."""
    with LINEAGE_EVENTS.open("rb") as f:
        f.seek(start)
        lines = [json.loads(line) for line in f.read().decode().splitlines() if line.strip()]
    out = []
    for event in lines:
        parse_event(event)
        check_windowlib_facets(event)
        if "." in event["job"]["name"]:
            out.append(event)
    return out


def of(events: list[dict[str, Any]], task: str, kind: str) -> list[dict[str, Any]]:
    """The ``kind`` events of tasks named ``task`` (``dag_id.task_id`` ends with it)."""
    return [e for e in events if e["job"]["name"].endswith(f".{task}") and e["eventType"] == kind]


def run_facet(event: dict[str, Any]) -> dict[str, Any]:
    return event["run"]["facets"]["windowlib_run"]


def outputs(event: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Output datasets by their last path segment (the table name)."""
    return {o["name"].rsplit("/", 1)[-1]: o for o in event["outputs"]}
