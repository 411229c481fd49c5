"""The published view of a version (:class:`Commit`) and what a run reports (:class:`RunRecord`).

Invariant: a ``Commit`` wraps a verified, immutable commit record; URIs it returns point at data
that the record published (relative keys resolved against the pipeline root).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from windowlib.core.time import finite_ms
from windowlib.state.manifest import FileEntry

__all__ = ["DEFAULT_EPHEMERAL", "Commit", "RunRecord"]

DEFAULT_EPHEMERAL = ("state",)


@dataclass(frozen=True)
class Commit:
    """One published version. ``record`` is the verified commit record (do not mutate)."""

    version: int
    record: Mapping[str, Any]
    pipeline_uri: str
    checksum: str | None = None     # of the record's bytes (the next record links to it)

    generation = property(lambda self: int(self.record["generation"]))
    fingerprint = property(lambda self: str(self.record["fingerprint"]))
    run_id = property(lambda self: str(self.record["run_id"]))
    created_at = property(lambda self: str(self.record["created_at"]))
    # ms, or None when unknown (records of earlier versions may hold the -inf sentinel)
    watermark_ms = property(lambda self: finite_ms(self.record.get("watermark_ms")))
    processing_time_ms = property(lambda self: finite_ms(self.record.get("processing_time_ms")))
    max_event_time_ms = property(lambda self: finite_ms(self.record.get("max_event_time_ms")))
    stats = property(lambda self: dict(self.record.get("stats") or {}))
    extra = property(lambda self: dict(self.record.get("extra") or {}))
    kind = property(lambda self: str(self.record.get("kind", "run")))

    @property
    def prefixes(self) -> dict[str, str]:
        """Published data prefixes: name -> absolute URI."""
        return {n: f"{self.pipeline_uri}/{k}" for n, k in self.record["prefixes"].items()}

    def uri(self, name: str) -> str:
        """Absolute URI of the published prefix ``name`` (``KeyError`` if not published)."""
        return f"{self.pipeline_uri}/{self.record['prefixes'][name]}"


@dataclass(frozen=True)
class RunRecord:
    """What a run reports at commit. ``prefixes`` defaults to every name handed out by
    ``Staging.uri``; ``ephemeral`` names are snapshots GC may drop beyond retention."""

    watermark_ms: int | None = None
    processing_time_ms: int | None = None
    max_event_time_ms: int | None = None
    stats: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    consumed: Sequence[FileEntry] = ()
    prefixes: Sequence[str] | None = None
    ephemeral: Sequence[str] = DEFAULT_EPHEMERAL

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (a staged run's ``pending.json``); :meth:`from_dict` reverses it."""
        return {"watermark_ms": self.watermark_ms,
                "processing_time_ms": self.processing_time_ms,
                "max_event_time_ms": self.max_event_time_ms, "stats": dict(self.stats),
                "extra": dict(self.extra), "consumed": [asdict(f) for f in self.consumed],
                "prefixes": list(self.prefixes or []), "ephemeral": list(self.ephemeral)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        return cls(data["watermark_ms"], data["processing_time_ms"], data["max_event_time_ms"],
                   data["stats"], data["extra"],
                   [FileEntry.from_dict(f) for f in data["consumed"]], data["prefixes"],
                   data.get("ephemeral", DEFAULT_EPHEMERAL))
