"""The run protocol's typed values: what a run plans, how it ends, and its idempotency key.

Every caller (``run_incremental``, the CLI, ``jobs/run_pipeline.py``, the DAG tasks) passes
these, or their JSON (``to_dict``/``from_dict``) between processes; nobody parses a status or
builds a key by hand.

- ``RunStatus``: how a run ended. ``blocked`` says the audit failed and nothing was published.
- ``RunKey``: the idempotency key, ``{base}@v{parent version}`` — the base names the attempt
  (a DAG id and run id, or an operator's run id); the parent version makes a key new whenever
  the checkpoint moved, so re-running a past interval consumes what landed since, while a
  retried publish finds its own commit and is a no-op.
- ``RunPlan``: the new files of a run, one ``PlannedBundle`` per partition with new files.
- ``CommitDetails``: what a run records in its commit beyond the storage protocol's fields.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from windowlib.state.manifest import FileEntry

__all__ = ["CommitDetails", "PlannedBundle", "RunKey", "RunPlan", "RunStatus"]


class RunStatus(StrEnum):
    """How a run ended (a ``str``: JSON and XCom carry the value)."""

    PUBLISHED = "published"
    NOTHING_NEW = "nothing_new"
    ALREADY_PUBLISHED = "already_published"
    STAGED = "staged"                  # outputs staged, waiting for the audit and publish
    DRY_RUN = "dry_run"
    BLOCKED = "blocked"                # the audit failed: nothing published
    REBUILD_PUBLISHED = "rebuild published"
    REBUILD_BLOCKED = "rebuild not published (blocked)"
    REBUILD_NOTHING_NEW = "rebuild not published (nothing_new)"

    @property
    def blocked(self) -> bool:
        """The audit failed and nothing was published."""
        return self in (RunStatus.BLOCKED, RunStatus.REBUILD_BLOCKED)

    @property
    def published(self) -> bool:
        """The run's outputs are (or already were) visible to readers."""
        return self in (RunStatus.PUBLISHED, RunStatus.ALREADY_PUBLISHED,
                        RunStatus.REBUILD_PUBLISHED)

    def as_rebuild(self) -> RunStatus:
        """The status of a rebuild whose run ended with this status."""
        return {RunStatus.PUBLISHED: RunStatus.REBUILD_PUBLISHED,
                RunStatus.BLOCKED: RunStatus.REBUILD_BLOCKED,
                RunStatus.NOTHING_NEW: RunStatus.REBUILD_NOTHING_NEW}.get(self, self)


_KEY_CHARS = re.compile(r"[^A-Za-z0-9_.:+=@-]")


@dataclass(frozen=True)
class RunKey:
    """The idempotency key of a run (see the module docstring)."""

    base: str
    parent_version: int | None = None

    @staticmethod
    def base_of(*parts: str) -> str:
        """A base from parts (e.g. DAG id and run id): joined by ``:``, restricted to safe
        characters, at most 160 characters (longer: a prefix and a hash)."""
        text = _KEY_CHARS.sub("_", ":".join(parts))
        if len(text) > 160:
            text = text[:140] + "~" + hashlib.sha256(text.encode()).hexdigest()[:16]
        return text

    def __str__(self) -> str:
        return f"{self.base}@v{self.parent_version or 0}"


@dataclass(frozen=True)
class PlannedBundle:
    """One bundle of a run: a partition's new files (sorted by path) and the processing time
    its value gives (``None`` when the value is not a time)."""

    partition: str
    processing_time_ms: int | None
    files: tuple[FileEntry, ...]

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"partition": self.partition, "processing_time_ms": self.processing_time_ms,
                "files": [asdict(f) for f in self.files]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlannedBundle:
        return cls(str(data["partition"]), data.get("processing_time_ms"),
                   tuple(FileEntry.from_dict(f) for f in data["files"]))


@dataclass(frozen=True)
class RunPlan:
    """What a run will consume: the new files per partition, on top of ``parent_version``."""

    pipeline: str
    run_id: str
    parent_version: int | None
    bundles: tuple[PlannedBundle, ...] = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return not self.bundles

    @property
    def files(self) -> list[FileEntry]:
        return [f for b in self.bundles for f in b.files]

    @property
    def partitions(self) -> list[str]:
        return [b.partition for b in self.bundles]

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "run_id": self.run_id,
                "parent_version": self.parent_version,
                "bundles": [b.to_dict() for b in self.bundles]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunPlan:
        return cls(data["pipeline"], data["run_id"], data.get("parent_version"),
                   tuple(PlannedBundle.from_dict(b) for b in data.get("bundles") or []))


@dataclass(frozen=True)
class CommitDetails:
    """What an incremental run records in its commit record besides the storage protocol's own
    fields (``RunRecord.extra``, its on-disk form): the staged frames (``FrameInfo`` dicts,
    pane state included), the state's schema and format (``state_kind``), the audit, and the
    input schema the next run's files are checked against, and the watermark strategy the run
    used (its ``describe()``; ``None`` in records written before it was recorded)."""

    frames: dict[str, Any] = field(default_factory=dict)
    state_schema: dict[str, Any] | None = None
    state_kind: str | None = None
    validation: dict[str, Any] | None = None
    publish_on_failure: bool = False
    input_schema: dict[str, Any] | None = None   # the source's data schema (runs/schemas.py)
    watermark_strategy: dict[str, Any] | None = None

    def to_extra(self) -> dict[str, Any]:
        return {"frames": self.frames, "state_schema": self.state_schema,
                "state_kind": self.state_kind, "validation": self.validation,
                "publish_on_failure": self.publish_on_failure,
                "input_schema": self.input_schema,
                "watermark_strategy": self.watermark_strategy}

    @classmethod
    def of(cls, extra: Any) -> CommitDetails:
        """From a commit's ``extra`` (records written before ``state_kind`` existed hold
        general-path state)."""
        extra = dict(extra or {})
        return cls(dict(extra.get("frames") or {}), extra.get("state_schema"),
                   extra.get("state_kind") or ("general-keys" if extra.get("state_schema")
                                               else None),
                   extra.get("validation"), bool(extra.get("publish_on_failure")),
                   extra.get("input_schema"), extra.get("watermark_strategy"))
