"""``RunSummary``: what one incremental run did, as small JSON-able data (XCom, reports, CLI).

Invariant checked before anything is published: ``inputs = processed + late + rejects``, in
rows. An unreadable file counts its rows on both sides when its footer (or its lines) tells how
many it had; a file whose row count cannot be known is listed in ``bad_files`` with
``rows: None`` and counted as a file, not as rows (``lines`` states rows and files apart).

``phases``: the wall seconds of a run by phase (``PHASES``, in that order; a phase the run did
not go through is absent): ``tables`` bringing the output tables and their catalog names in
step (at the start of a run and after its commit), ``plan`` listing the new files, ``inputs``
reading footers, the saved state's record and the source's schema, ``build`` the engine's
plan on the driver (nothing executes), ``write`` the routed frame and its one Spark job
(reading the new files and the state, computing, writing every output), ``validate`` the
quality gate when ``run_incremental`` calls it, ``commit`` the commit record. ``seconds``
is the staging's wall time (``inputs`` to the staged record).

A run's ``validation`` is the quality gate's JSON; ``validation_status`` reads it as ``passed``,
``failed``, ``off`` (the caller turned validation off) or ``not run`` (no record: a run that
was not validated, e.g. one committed before the gate failed closed).
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from windowlib.core.errors import StateError
from windowlib.core.time import finite_ms
from windowlib.runs.protocol import RunStatus

VALIDATION_STATUSES = ("passed", "failed", "off", "not run")
PHASES = ("tables", "plan", "inputs", "build", "write", "validate", "commit")


@contextmanager
def timed(phases: dict[str, float], name: str) -> Iterator[None]:
    """Add the wall seconds spent in the block to ``phases[name]`` (also when it raises)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = round(phases.get(name, 0.0) + time.perf_counter() - started, 3)


def add_phases(*parts: dict[str, float]) -> dict[str, float]:
    """The ``parts`` added phase by phase, in ``PHASES`` order (a new dict)."""
    keys = [k for k in PHASES if any(k in p for p in parts)]
    keys += [k for p in parts for k in p if k not in keys]
    return {k: round(sum(p.get(k, 0.0) for p in parts), 3) for k in keys}


def validation_status(validation: Mapping[str, Any] | None) -> str:
    """``passed`` | ``failed`` | ``off`` | ``not run`` for a run's ``validation`` record."""
    if not isinstance(validation, Mapping):
        return "not run"
    status = validation.get("status")
    if status in VALIDATION_STATUSES:
        return str(status)
    if validation.get("skipped"):   # an unvalidated publish recorded before the gate failed closed
        return "not run"
    return "passed" if validation.get("success") else "failed"


def iso_ms(ms: int | None) -> str | None:
    """ISO-8601 UTC for a clock value; ``None`` for unknown (-inf/+inf/None)."""
    ms = finite_ms(ms)
    if ms is None:
        return None
    return (_dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
            + _dt.timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")


@dataclass
class RunSummary:
    """One run; ``status`` says how it ended (``protocol.RunStatus``)."""

    pipeline: str
    run_id: str
    status: RunStatus
    version: int | None = None
    generation: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    watermark: str | None = None
    processing_time: str | None = None
    watermark_ms: int | None = None
    inputs: int = 0
    processed: int = 0
    late: int = 0
    rejects: int = 0
    firings: int = 0
    firings_by_timing: dict[str, int] = field(default_factory=dict)
    retractions: int = 0
    side_outputs: int = 0
    files_consumed: int = 0
    partitions: list[str] = field(default_factory=list)
    bad_files: list[dict[str, Any]] = field(default_factory=list)
    state_rows: int = 0
    state_entries: int = 0
    state_bytes: int = 0
    lateness_histogram: list[list[Any]] = field(default_factory=list)
    schema_changes: list[str] = field(default_factory=list)
    validation: dict[str, Any] | None = None
    published: bool = False
    publish_on_failure: bool = False
    path: str = "general"
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)   # wall seconds by PHASES
    tables: dict[str, Any] = field(default_factory=dict)   # runs/tables.sync_tables' report

    def check_conservation(self) -> None:
        """Raise ``StateError(CONSERVATION_VIOLATED)`` unless every input row is accounted."""
        if self.inputs != self.processed + self.late + self.rejects:
            raise StateError(
                f"run {self.run_id} of {self.pipeline!r}: inputs ({self.inputs}) != processed "
                f"({self.processed}) + late ({self.late}) + rejects ({self.rejects}); nothing "
                "was published", code="CONSERVATION_VIOLATED")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = str(self.status)
        return out

    def __post_init__(self) -> None:
        self.status = RunStatus(self.status)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def _unreadable(self) -> str:
        unknown = sum(1 for b in self.bad_files if b.get("rows") is None)
        rows = sum(b["rows"] for b in self.bad_files if b.get("rows") is not None)
        return (f"{len(self.bad_files)} unreadable: {rows} rows rejected"
                + (f", {unknown} with an unknown row count" if unknown else ""))

    def lines(self) -> list[str]:
        """A short human-readable summary (CLI, logs)."""
        timing = ", ".join(f"{k} {v}" for k, v in sorted(self.firings_by_timing.items()))
        out = [f"{self.pipeline}: {self.status}"
               + (f" version {self.version}" if self.version is not None else ""),
               f"  watermark {self.watermark or '-'}  processing time "
               f"{self.processing_time or '-'}",
               f"  inputs {self.inputs} rows = processed {self.processed} + late {self.late} "
               f"+ rejects {self.rejects}; files {self.files_consumed}"
               + (f" ({self._unreadable()})" if self.bad_files else ""),
               f"  firings {self.firings}" + (f" ({timing})" if timing else "")
               + (f", retractions {self.retractions}" if self.retractions else ""),
               f"  state {self.state_rows} keys, {self.state_entries} entries, "
               f"{self.state_bytes} bytes"]
        if self.phases:
            out.append("  time " + ", ".join(f"{k} {v:.2f} s" for k, v
                                              in add_phases(self.phases).items()))
        status = validation_status(self.validation)
        if status != "not run":
            out.append(f"  validation {'FAILED' if status == 'failed' else status}"
                       + "".join(f"\n    - {f}" for f in (self.validation or {}).get("failed", [])))
        return out
