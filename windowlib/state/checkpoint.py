"""Versioned checkpoints and the commit protocol (layout: :mod:`windowlib.state.layout`).

Protocol of one run::

    store = CheckpointStore(uri, "demo", fingerprint)
    parent = store.latest()                 # committed only; verifies format and fingerprint
    staging = store.begin(run_id)           # version = parent.version + 1, unique staging prefix
    staging.uri("state"), staging.uri("firings")   # Spark tasks write data files there
    commit = store.commit(staging, RunRecord(watermark_ms=..., consumed=files, stats=...))

Invariants:

- Publication is exactly one conditional write: exclusive create of ``commits/{version}.json``.
  Before it nothing of the run is visible; after it everything is. A crash anywhere leaves the
  previous commit as ``latest()``; leftovers are removed by :func:`windowlib.state.gc.collect`.
- Two runs that began from the same parent race for the same record key: exactly one wins, the
  other gets ``StateError(CHECKPOINT_CONFLICT)`` and its staged files are deleted.
- Nothing here ever rewrites or deletes a commit record; a record that cannot be read or
  verified raises (``CHECKPOINT_CORRUPT`` / ``CHECKPOINT_FORMAT_UNSUPPORTED`` /
  ``FINGERPRINT_MISMATCH``) and no run proceeds on top of it.
- A rebuild writes a new *generation* in its own line (``generations/g=.../``) and publishes it
  with one record in the main line (:meth:`CheckpointStore.commit_generation`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from windowlib.core.errors import DefinitionError, StateError, rebuild_hint
from windowlib.state import layout as L
from windowlib.state.faults import CrashPoint, fault_point
from windowlib.state.manifest import Manifest
from windowlib.state.objectstore import ObjectStore
from windowlib.state.paths import validate_pipeline_name
from windowlib.state.records import Commit, RunRecord
from windowlib.state.staging import Staging, now_iso
from windowlib.state.stores import open_store

if TYPE_CHECKING:
    from windowlib.state.gc import GcReport
    from windowlib.state.s3config import S3Settings

__all__ = ["CheckpointStore", "Commit", "RunRecord", "Staging"]

class CheckpointStore:
    """Checkpoints of one pipeline under ``uri`` (``file://``, path or ``s3://``).

    ``fingerprint`` identifies the pipeline definition (every commit records it);
    ``earlier_fingerprints`` are the same definition's fingerprints as earlier windowlib
    versions computed them, accepted when reading; ``retain_versions`` is how many recent
    versions keep their ephemeral state snapshots (see :meth:`gc`).
    """

    def __init__(self, uri: str | ObjectStore, pipeline_name: str, fingerprint: str, *,
                 settings: S3Settings | None = None, retain_versions: int = 3,
                 manifest_compact_every: int = 16, earlier_fingerprints: Sequence[str] = (),
                 _line: str = "", _generation: int | None = None) -> None:
        self.pipeline = validate_pipeline_name(pipeline_name)
        if not isinstance(fingerprint, str) or not fingerprint:
            raise StateError("fingerprint must be a non-empty string", code="STATE_INVALID")
        if retain_versions < 1:
            raise StateError("retain_versions must be >= 1", code="STATE_INVALID")
        root = uri if isinstance(uri, ObjectStore) else open_store(uri, settings)
        self.root_store = root
        self.pipeline_store = root.child(self.pipeline)
        self.fingerprint = fingerprint
        self.earlier_fingerprints = tuple(earlier_fingerprints)
        self.retain_versions = retain_versions
        self.manifest_compact_every = manifest_compact_every
        self._line = _line
        self._generation = _generation
        self._manifests: dict[int, Manifest] = {}  # committed manifests are immutable

    def __repr__(self) -> str:
        line = f", line={self._line!r}" if self._line else ""
        return f"CheckpointStore({self.pipeline_store.root_uri!r}{line})"

    @property
    def uri(self) -> str:
        return self.pipeline_store.root_uri

    @property
    def line(self) -> str:
        """``""`` for the pipeline's main line, else the rebuild line's prefix."""
        return self._line

    def _line_key(self, key: str) -> str:
        return f"{self._line}/{key}" if self._line else key

    # -- reading ----------------------------------------------------------------------------

    def _read_commit(self, version: int, *, check: bool = True) -> Commit | None:
        key = self._line_key(L.commit_key(version))
        data = self.pipeline_store.read_bytes(key)
        if data is None:
            return None
        rec = L.decode_record(data, self.pipeline_store.uri_for(key), self.pipeline)
        if rec["version"] != version or rec["pipeline"] != self.pipeline:
            raise StateError(f"commit record {self.pipeline_store.uri_for(key)} names version "
                             f"{rec['version']} of {rec['pipeline']!r}",
                             code="CHECKPOINT_CORRUPT")
        if check and rec["fingerprint"] not in (self.fingerprint, *self.earlier_fingerprints):
            raise StateError(
                f"pipeline {self.pipeline!r}: the checkpoint (version {version}, generation "
                f"{rec['generation']}) was written by a different definition (fingerprint "
                f"{str(rec['fingerprint'])[:12]}…, now {self.fingerprint[:12]}…). Nothing was "
                f"changed. Revert the definition, or {rebuild_hint(self.pipeline)}.",
                code="FINGERPRINT_MISMATCH")
        return Commit(version, rec, self.uri, L.record_checksum(data))

    def versions(self) -> list[int]:
        """Committed version numbers of this line, ascending (no record is read)."""
        return self._versions()

    def _versions(self) -> list[int]:
        prefix = self._line_key(L.COMMITS)
        out = []
        for info in self.pipeline_store.list(prefix):
            v = L.parse_commit_key(info.key[len(self._line_key("")):])
            if v is not None:
                out.append(v)
        return sorted(out)

    def latest_version(self) -> int:
        """Highest committed version (0 if none): the hint plus forward probes, else a LIST.
        A hint ahead of every record means a record was deleted: ``CHECKPOINT_CORRUPT``."""
        hint_raw = self.pipeline_store.read_bytes(self._line_key(L.LATEST_HINT))
        v = 0
        try:
            v = int(json.loads(hint_raw)["version"]) if hint_raw else 0
        except (ValueError, KeyError, TypeError):
            v = 0
        if v <= 0 or not self.pipeline_store.exists(self._line_key(L.commit_key(v))):
            versions = self._versions()
            highest = versions[-1] if versions else 0
            if v > highest:
                raise self._missing(v, f"the latest-version hint names version {v}")
            return highest
        while self.pipeline_store.exists(self._line_key(L.commit_key(v + 1))):
            v += 1
        return v

    def _missing(self, version: int, why: str) -> StateError:
        where = self.pipeline_store.uri_for(self._line_key(L.commit_key(version)))
        return StateError(f"commit record {where} is missing ({why}): a published version was "
                          "deleted. Nothing was changed; restore the record (versioning, "
                          "backup), or start a new state generation", code="CHECKPOINT_CORRUPT")

    def _check_link(self, commit: Commit, parent: Commit | None) -> None:
        """``commit`` follows ``parent`` in the chain (``CHECKPOINT_CORRUPT`` otherwise)."""
        if parent is None:
            if commit.version > 1:
                raise self._missing(commit.version - 1, f"version {commit.version} follows it")
            return
        link = commit.record.get("parent_checksum")
        if link is not None and link != parent.checksum:
            where = self.pipeline_store.uri_for(self._line_key(L.commit_key(parent.version)))
            raise StateError(f"commit record {where} is not the one version {commit.version} "
                             "was published on (replaced or edited): the checkpoint is damaged; "
                             "restore the record or start a new state generation",
                             code="CHECKPOINT_CORRUPT")

    def latest(self, *, check_fingerprint: bool = True) -> Commit | None:
        """The current committed checkpoint, verified (its record, and its link to the record
        before it), or ``None`` for a new pipeline."""
        v = self.latest_version()
        if not v:
            return None
        head = self._read_commit(v, check=check_fingerprint)
        if head is None:       # removed between the listing and the read
            raise self._missing(v, "it was listed a moment ago")
        if head.record.get("kind") != "generation":   # a rebuild starts over: no parent read
            self._check_link(head, self._read_commit(v - 1, check=False) if v > 1 else None)
        return head

    def get(self, version: int, *, check_fingerprint: bool = False) -> Commit | None:
        return self._read_commit(version, check=check_fingerprint)

    def history(self, limit: int | None = None) -> list[Commit]:
        """Committed versions, newest first (fingerprints not enforced: history may span
        definitions). The chain is verified over what is read: versions contiguous, each
        record linked to the one before (``CHECKPOINT_CORRUPT`` otherwise)."""
        versions = self._versions()
        if versions and versions[-1] != len(versions):
            missing = next(i for i, v in enumerate(versions, start=1) if v != i)
            raise self._missing(missing, f"versions up to {versions[-1]} exist")
        versions = versions[::-1]
        if limit is not None:
            versions = versions[:limit + 1]      # one more: the link of the oldest shown
        commits = []
        for v in versions:
            commit = self._read_commit(v, check=False)
            if commit is None:
                raise self._missing(v, "it was listed a moment ago")
            commits.append(commit)
        for newer, older in itertools.pairwise(commits):
            self._check_link(newer, older)
        if commits and commits[-1].version == 1:
            self._check_link(commits[-1], None)
        return commits if limit is None else commits[:limit]

    def find_run(self, run_id: str, limit: int = 50) -> Commit | None:
        """The commit made by ``run_id`` among the ``limit`` newest, if any (idempotent retries).
        A record that cannot be read is skipped: what needs it (``latest``) raises anyway, and a
        rebuild over a damaged checkpoint must still find its own commit."""
        for v in self._versions()[::-1][:limit]:
            try:
                c = self._read_commit(v, check=False)
            except StateError:
                continue
            if c is not None and c.run_id == run_id:
                return c
        return None

    def manifest(self, commit: Commit | None = None) -> Manifest:
        """The input manifest as of ``commit`` (default: latest; empty for a new pipeline)."""
        commit = commit if commit is not None else self.latest()
        if commit is None:
            return Manifest()
        if commit.version not in self._manifests or len(self._manifests) > 8:
            if len(self._manifests) > 8:
                self._manifests.clear()
            self._manifests[commit.version] = Manifest.load(
                self.pipeline_store, commit.record.get("manifest"), self.pipeline)
        return self._manifests[commit.version]

    def committed(self, generation: int | None = None) -> list[Commit]:
        """Run commits whose outputs readers see: every run of ``generation`` (default: the
        current one), oldest first; a published rebuild expands to its line's commits. Records
        older than the rebuild that published ``generation`` are not read (a rebuild replaces
        a damaged history)."""
        head = self.latest(check_fingerprint=False)
        if head is None:
            return []
        gen = head.generation if generation is None else generation
        newest_first: list[Commit] = []
        for v in self._versions()[::-1]:
            c = self._read_commit(v, check=False)
            if c is None or c.generation != gen:
                continue
            if c.kind == "generation":
                line = self._for_line(str(c.record["line"]), gen, c.fingerprint)
                runs = [x for x in line.history() if x.version <= c.record["line_version"]]
                return runs[::-1] + newest_first[::-1]
            newest_first.append(c)
        return newest_first[::-1]

    # -- writing ----------------------------------------------------------------------------

    def begin(self, run_id: str, *, parent: Commit | None = None) -> Staging:
        """Start a run on top of ``parent`` (default: :meth:`latest`, fingerprint-checked)."""
        if not isinstance(run_id, str) or not run_id or len(run_id) > 200:
            raise DefinitionError("run_id must be a non-empty string (at most 200 characters)",
                                  code="NAME_INVALID")
        if parent is None:
            parent = self.latest()
        version = parent.version + 1 if parent else 1
        generation = parent.generation if parent else (self._generation or 1)
        staging = Staging(self, version, generation, run_id, secrets.token_hex(8), parent)
        marker = {"run_id": run_id, "version": version, "generation": generation,
                  "created_at": now_iso(), "fingerprint": self.fingerprint}
        self.pipeline_store.write_bytes(f"{staging.key}/{L.STAGING_MARKER}",
                                        json.dumps(marker, sort_keys=True).encode())
        fault_point(CrashPoint.AFTER_BEGIN)
        return staging

    def commit(self, staging: Staging, record: RunRecord | None = None) -> Commit:
        """Publish ``staging`` with one exclusive create of its commit record.

        Raises ``CHECKPOINT_CONFLICT`` (after deleting the staged files) if another run
        published this version first.
        """
        record = record or RunRecord()
        if staging.checkpoint is not self or staging.state != "open":
            raise StateError(f"staging {staging.key} is {staging.state} or belongs to another "
                             "store", code="STATE_INVALID")
        names = sorted(set(record.prefixes if record.prefixes is not None else staging.names))
        parent_manifest = self.manifest(staging.parent) if staging.parent else Manifest()
        manifest_ref = parent_manifest.stage(self.pipeline_store, staging.key, record.consumed,
                                             staging.version, self.manifest_compact_every)
        fault_point(CrashPoint.AFTER_STAGE_MANIFEST)
        body = {
            "format_version": L.FORMAT_VERSION, "kind": "run", "pipeline": self.pipeline,
            "version": staging.version, "generation": staging.generation,
            "fingerprint": self.fingerprint, "run_id": staging.run_id,
            "parent_version": staging.parent.version if staging.parent else None,
            "parent_checksum": staging.parent.checksum if staging.parent else None,
            "staging": staging.key,
            "prefixes": {n: staging.key_for(n) for n in names},
            "ephemeral": sorted(set(record.ephemeral) & set(names)),
            "watermark_ms": record.watermark_ms, "processing_time_ms": record.processing_time_ms,
            "max_event_time_ms": record.max_event_time_ms, "stats": dict(record.stats),
            "manifest": manifest_ref, "created_at": now_iso(), "extra": dict(record.extra),
        }
        commit = self._publish(staging.version, body, staging)
        staging.state = "committed"
        return commit

    def _publish(self, version: int, body: dict[str, Any], staging: Staging | None) -> Commit:
        data = L.encode_record(body)
        key = self._line_key(L.commit_key(version))
        fault_point(CrashPoint.BEFORE_COMMIT)
        if not self.pipeline_store.create_exclusive(key, data):
            winner = self._read_commit(version, check=False)
            if winner is not None and staging is not None \
                    and winner.record.get("staging") == staging.key:
                staging.state = "committed"   # our own commit: a retried publish is a no-op
                return winner
            if staging is not None:
                staging.abort()
            who = f" (run {winner.run_id!r})" if winner else ""
            raise StateError(
                f"pipeline {self.pipeline!r}: another run{who} committed version {version} "
                "first — it holds the pipeline. This run published nothing and its staged "
                "files were removed; rerun to process what is still new.",
                code="CHECKPOINT_CONFLICT")
        fault_point(CrashPoint.AFTER_COMMIT)
        with contextlib.suppress(StateError):  # best effort: only a hint for latest_version()
            self.pipeline_store.write_bytes(self._line_key(L.LATEST_HINT),
                                            json.dumps({"version": version}).encode())
        return Commit(version, L.decode_record(data, key, self.pipeline), self.uri,
                      L.record_checksum(data))

    # -- generations (rebuilds) -------------------------------------------------------------

    def _for_line(self, line: str, generation: int, fingerprint: str) -> CheckpointStore:
        return CheckpointStore(self.root_store, self.pipeline, fingerprint,
                               retain_versions=self.retain_versions,
                               manifest_compact_every=self.manifest_compact_every,
                               earlier_fingerprints=self.earlier_fingerprints,
                               _line=line, _generation=generation)

    def generation_numbers(self) -> list[int]:
        """Generation lines that exist (published or not)."""
        found = set()
        for info in self.pipeline_store.list(L.GENERATIONS):
            m = re.match(r"generations/g=(\d{6})/", info.key)
            if m:
                found.add(int(m.group(1)))
        return sorted(found)

    def start_generation(self, run_id: str = "rebuild") -> CheckpointStore:
        """Claim a new state generation for a rebuild with this store's fingerprint.

        Returns a store for the generation's own line: ``begin``/``commit`` there as usual
        (starting from empty state); readers see none of it until :meth:`commit_generation`.
        """
        if self._line:
            raise StateError("start_generation is called on the pipeline's main store",
                             code="STATE_INVALID")
        # no record is read (the head may be damaged: a rebuild is how to start over): the
        # current generation is 1 or one whose line exists
        g = max([1 if self.latest_version() else 0, *self.generation_numbers()]) + 1
        while True:
            line = L.generation_prefix(g)
            marker = json.dumps({"generation": g, "run_id": run_id, "created_at": now_iso(),
                                 "fingerprint": self.fingerprint}, sort_keys=True).encode()
            if self.pipeline_store.create_exclusive(f"{line}/_generation.json", marker):
                return self._for_line(line, g, self.fingerprint)
            g += 1

    def commit_generation(self, line: CheckpointStore, run_id: str = "rebuild") -> Commit:
        """Make ``line``'s latest commit the pipeline's current checkpoint, atomically (one
        exclusive create in the main line). ``CHECKPOINT_CONFLICT`` if a run committed first."""
        if not line._line or line.pipeline_store.root_uri != self.pipeline_store.root_uri:
            raise StateError("commit_generation needs a store from start_generation()",
                             code="STATE_INVALID")
        last = line.latest()
        if last is None:
            raise StateError("the new generation has no committed run yet; nothing to publish",
                             code="STATE_INVALID")
        versions = self._versions()     # not read, not the hint: the records may be damaged
        head = versions[-1] if versions else 0
        body = {k: v for k, v in last.record.items() if k != "checksum"}
        body.update({"kind": "generation", "version": head + 1, "run_id": run_id,
                     "parent_version": head or None,
                     "parent_checksum": self._intact_checksum(head), "line": line._line,
                     "line_version": last.version, "created_at": now_iso()})
        return self._publish(head + 1, body, None)

    def _intact_checksum(self, version: int) -> str | None:
        """The checksum of record ``version`` when it is intact (a rebuild links to it), else
        ``None``: a rebuild must publish over a damaged head too."""
        if version <= 0:
            return None
        with contextlib.suppress(StateError):
            commit = self._read_commit(version, check=False)
            return commit.checksum if commit is not None else None
        return None

    def gc(self, *, grace_seconds: float = 3600.0, now: datetime | None = None) -> GcReport:
        """Remove uncommitted leftovers and snapshots beyond retention (see ``gc.collect``)."""
        from windowlib.state.gc import collect

        return collect(self, grace_seconds=grace_seconds, now=now)


def open_checkpoint(uri: str, pipeline_name: str, fingerprint: str,
                    **kwargs: Any) -> CheckpointStore:
    """Convenience alias of :class:`CheckpointStore`."""
    return CheckpointStore(uri, pipeline_name, fingerprint, **kwargs)

