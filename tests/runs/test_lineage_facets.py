"""windowlib's OpenLineage facets without a run: names follow OpenLineage's naming, error facets
never carry credentials, and every facet validates against its schema in ``docs/lineage/``."""

from __future__ import annotations

import json

import pytest
from lineage_events import check_windowlib_facets

from windowlib.core.errors import StateError
from windowlib.runs import lineage as L

pytestmark = pytest.mark.unit

SECRET = "wJalrXUtnFEMI-K7MDENG"


def _event_json(run_facets: dict) -> dict:
    from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
    from openlineage.client.serde import Serde

    event = RunEvent(eventType=RunState.FAIL, eventTime="2024-03-01T00:00:00Z",
                     run=Run(runId="01890000-0000-7000-8000-000000000000", facets=run_facets),
                     job=Job(namespace="windowlib", name="p"))
    return json.loads(Serde.to_json(event))


def test_dataset_names_follow_openlineage_naming():
    assert L.dataset_name("file:///lake/events") == ("file", "/lake/events")
    assert L.dataset_name("s3://bucket/lake/events") == ("s3://bucket", "lake/events")
    assert L.dataset_name("s3a://bucket/lake") == ("s3://bucket", "lake")


def test_error_facets_carry_the_code_and_no_credentials():
    exc = StateError(f"cannot read s3://AKIAEXAMPLE:{SECRET}@bucket/x?X-Amz-Signature={SECRET}",
                     code="ACCESS_DENIED")
    data = _event_json(L.error_facets(exc))
    facet = data["run"]["facets"]["windowlib_error"]
    assert facet["code"] == "ACCESS_DENIED" and facet["exitCode"] == 1
    assert SECRET not in json.dumps(data) and "s3://***@bucket/x" in facet["message"]
    assert check_windowlib_facets(data) == 1


def test_a_user_error_behind_an_airflow_failure_keeps_its_code():
    try:
        try:
            raise StateError("changed", code="FINGERPRINT_MISMATCH")
        except StateError as inner:
            raise RuntimeError("[FINGERPRINT_MISMATCH] changed") from inner
    except RuntimeError as outer:
        facet = L.error_facets(outer)["windowlib_error"]
    assert (facet.code, facet.exitCode) == ("FINGERPRINT_MISMATCH", 2)


def test_the_run_facet_counts_and_late_rerun_validate_against_the_schema():
    summary = {"run_id": "k@v2", "status": "published", "published": True, "version": 3,
               "inputs": 17, "processed": 10, "late": 5, "rejects": 2, "firings": 4,
               "firings_by_timing": {"LATE": 3, "ON_TIME": 1}, "watermark": None}
    facets = {**L.run_facet("p", "publish", fingerprint="f", summary=summary,
                            version_before=2), **L.blocked_facets("p", {"failed": ["x"]})}
    data = _event_json(facets)
    run = data["run"]["facets"]["windowlib_run"]
    assert run["counts"]["input"] == 17 == 10 + 5 + 2 and run["lateRerun"] is True
    assert run["checkpointVersionBefore"] == 2 and run["checkpointVersionAfter"] == 3
    assert data["run"]["facets"]["windowlib_error"]["code"] == "BLOCKED"
    assert check_windowlib_facets(data) == 2
