"""A staged, unpublished run (``incremental.stage_run``) and the small JSON reference that
carries it to another process (an Airflow task's audit and publish).

Invariant: ``StagedRun.ref()`` holds no data, only where the staged files are, the commit the
run will make (itself kept in the staging prefix's ``pending.json``) and the summary so far;
``restore_staged`` rebuilds the ``StagedRun`` from it or fails with ``STAGING_MISSING`` when
the staging is gone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from windowlib.core.errors import StateError
from windowlib.runs.protocol import CommitDetails
from windowlib.runs.summary import RunSummary
from windowlib.state.checkpoint import CheckpointStore, Staging
from windowlib.state.records import RunRecord


@dataclass
class StagedRun:
    """A staged, unpublished run: where its files are, the commit it will make, its summary
    so far and (in the staging process) the staged firings for the audit."""

    staging: Staging
    summary: RunSummary
    record: RunRecord
    # builds ``firings`` (``stage_run``); ``None`` in another process
    read_firings: Callable[[], Any] | None = field(default=None, repr=False)

    @cached_property
    def firings(self) -> Any:
        """The staged firings (a Spark DataFrame over exactly the staged files) in the
        staging process, built on first use; ``None`` in another process (``restore_staged``:
        the audit reads them from ``ref()["firings"]``)."""
        return None if self.read_firings is None else self.read_firings()

    @property
    def details(self) -> CommitDetails:
        return CommitDetails.of(self.record.extra)

    def ref(self) -> dict[str, Any]:
        """Small JSON that the audit and ``publish_run`` need in another process (the staged
        firings' files included; the commit itself stays in ``pending.json``)."""
        s = self.staging
        return {"version": s.version, "generation": s.generation, "run_id": s.run_id,
                "token": s.token, "parent_version": s.parent.version if s.parent else None,
                "names": sorted(s.names), "summary": self.summary.to_dict(),
                "firings": self.details.frames.get("firings")}


def restore_staged(cs: CheckpointStore, ref: dict[str, Any]) -> StagedRun:
    """The ``StagedRun`` of ``ref`` (``StagedRun.ref()``) from its ``pending.json``."""
    parent = cs.get(ref["parent_version"]) if ref.get("parent_version") else None
    staging = Staging(cs, int(ref["version"]), int(ref["generation"]), ref["run_id"],
                      ref["token"], parent, names=set(ref["names"]))
    pending = cs.pipeline_store.read_bytes(f"{staging.key}/pending.json")
    if pending is None:
        raise StateError(f"staged run {ref['run_id']} (version {ref['version']}) is gone: it "
                         "was published, aborted or garbage-collected; run again",
                         code="STAGING_MISSING")
    record = RunRecord.from_dict(json.loads(pending)["record"])
    return StagedRun(staging, RunSummary.from_dict(ref["summary"]), record)
