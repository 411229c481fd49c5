"""What a job's checkpoint says about it: its status (``windowlib status``, the demo) and its
run history (reports), read from the commit records without running anything."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from windowlib.core.errors import StateError
from windowlib.runs.incremental import open_checkpoint
from windowlib.runs.protocol import CommitDetails
from windowlib.runs.summary import iso_ms

__all__ = ["job_status", "run_history", "strategy_label"]


def job_status(job: Any, root: str, *, history: int = 5) -> dict[str, Any]:
    """Watermark, last versions, state size, consumed files (small JSON).

    Watermark strategies: ``watermark_strategy`` is the one the last commit used, each run
    lists its own, and ``watermark_strategy_changes`` names every change among the listed
    versions (``"v4: A -> B"``) and, when the job now configures another one, the next run's
    (``"next run: B -> C"``): allowed, as in Flink, but visible."""
    checkpoint, output = job.locations(root)
    cs = open_checkpoint(job.pipeline, checkpoint)
    try:
        head = cs.latest()
    except StateError as exc:     # shown, and the CLI exits with the error's code
        return {"pipeline": job.name, "error": str(exc), "error_code": exc.code}
    if head is None:
        return {"pipeline": job.name, "version": None, "checkpoint": checkpoint,
                "output": output, "runs": []}
    stats = head.stats
    runs, strategies = [], []
    for version in cs.versions()[::-1][:history]:
        try:   # an old damaged record (a rebuild started over) is shown, not fatal
            c = cs.get(version)
        except StateError as exc:
            runs.append({"version": version, "error": f"[{exc.code}]"})
            continue
        if c is None:
            continue
        s = c.stats
        strategy = CommitDetails.of(c.extra).watermark_strategy
        strategies.append((str(c.version), strategy))
        runs.append({"version": c.version, "run_id": c.run_id, "created_at": c.created_at,
                     "kind": c.kind, "firings": s.get("firings"), "late": s.get("late"),
                     "rejects": s.get("rejects"), "files": s.get("files_consumed"),
                     "watermark_strategy": strategy_label(strategy)})
    configured = getattr(job, "watermark", None)
    if configured is not None:
        strategies.insert(0, ("next run", configured.describe()))
    return {"pipeline": job.name, "version": head.version, "generation": head.generation,
            "watermark": iso_ms(head.watermark_ms),
            "watermark_strategy": strategy_label(CommitDetails.of(head.extra)
                                                 .watermark_strategy),
            "watermark_strategy_changes": _strategy_changes(strategies),
            "processing_time": iso_ms(head.processing_time_ms),
            "state_rows": stats.get("state_rows"), "state_bytes": stats.get("state_bytes"),
            "files_consumed_total": len(cs.manifest(head)), "checkpoint": checkpoint,
            "output": output, "runs": runs, "tables": _tables(cs)}


def _tables(cs: Any) -> list[dict[str, Any]]:
    """One row per output table: its Spark name, Delta location and version (status)."""
    from windowlib.runs.tables import table_info

    return [{"output": name, **entry} for name, entry in table_info(cs).items()]


def strategy_label(described: dict[str, Any] | None) -> str | None:
    """A watermark strategy's ``describe()`` as ``Name(param=value, ...)`` (``None``: not
    recorded)."""
    if described is None:
        return None
    if "type" in described:
        name, params = described["type"], {k: v for k, v in described.items() if k != "type"}
    elif "instance" in described:
        name, params = described["instance"].get("callable"), described.get("attributes") or {}
    else:
        return json.dumps(described, sort_keys=True)
    args = ", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(params.items()))
    return f"{name}({args})"


def _strategy_changes(newest_first: list[tuple[str, Any]]) -> list[str]:
    """``"<version>: old -> new"`` for each change between recorded strategies, oldest first
    (a version without a record is skipped: unknown is no change)."""
    recorded = [(v, s) for v, s in reversed(newest_first) if s is not None]
    return [f"{'v' + v if v.isdigit() else v}: {strategy_label(a)} -> {strategy_label(b)}"
            for (_, a), (v, b) in pairwise(recorded) if a != b]


def run_history(job: Any, root: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Committed run summaries, oldest first (for reports). A published rebuild is one entry
    with ``rebuild: True`` and the figures of the new generation's last run."""
    checkpoint, _ = job.locations(root)
    cs = open_checkpoint(job.pipeline, checkpoint)
    out = []
    for c in reversed(cs.history(limit)):
        if c.kind not in ("run", "generation"):
            continue
        s = dict(c.stats)
        details = CommitDetails.of(c.extra)
        s.update(version=c.version, run_id=c.run_id, published=True,
                 rebuild=c.kind == "generation",
                 validation=details.validation, publish_on_failure=details.publish_on_failure)
        if not s.get("finished_at"):  # stats are recorded before the commit time is known
            s["finished_at"] = c.created_at
        out.append(s)
    return out
