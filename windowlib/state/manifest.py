"""The input manifest: which files a pipeline has consumed, stored with each commit.

Storage (all keys relative to the pipeline root, written inside the run's staging prefix, so the
manifest is published by the same single commit-record write as the state):

- each commit writes a **delta** (``<staging>/_manifest/delta.jsonl.gz``: the files that run
  consumed, one JSON object per line);
- every ``compact_every`` commits the run instead writes a **full** snapshot
  (``<staging>/_manifest/full.jsonl.gz`` = previous snapshot + all deltas since + this run);
- the commit record's ``manifest`` field is ``{"base": key | None, "deltas": [keys], "files": n,
  "sha256": {key: checksum}}``, so loading the manifest reads at most ``compact_every`` small
  files, whatever the history, and a damaged or swapped manifest file is ``CHECKPOINT_CORRUPT``
  (records written before checksums existed have none; their files are loaded unchecked).

A file counts as consumed when its path, size and ETag (S3) or mtime (files) match a manifest
entry; a path seen before with a different identity was rewritten and is reported as new.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any

from windowlib.core.errors import StateError, rebuild_hint
from windowlib.state.objectstore import ObjectStore

__all__ = ["FileEntry", "Manifest"]

DELTA_NAME = "_manifest/delta.jsonl.gz"
FULL_NAME = "_manifest/full.jsonl.gz"


@dataclass(frozen=True)
class FileEntry:
    """One input file. ``etag`` for S3, ``mtime_ms`` for files; ``version`` = consuming commit;
    ``rows`` = its row count from the Parquet footer the consuming run read (``None`` when no
    footer was read: CSV/JSON, an unreadable footer, manifests written before). Not part of
    the file's identity."""

    path: str
    size: int
    etag: str | None = None
    mtime_ms: int | None = None
    partition: str | None = None
    version: int | None = None
    rows: int | None = None

    def identity(self) -> tuple[str, int, str]:
        marker = f"etag:{self.etag}" if self.etag else f"mtime:{self.mtime_ms}"
        return self.path, int(self.size), marker

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileEntry:
        return cls(path=str(d["path"]), size=int(d["size"]), etag=d.get("etag"),
                   mtime_ms=d.get("mtime_ms"), partition=d.get("partition"),
                   version=d.get("version"),
                   rows=None if d.get("rows") is None else int(d["rows"]))


def _encode(entries: Iterable[FileEntry]) -> bytes:
    lines = "".join(json.dumps(asdict(e), sort_keys=True) + "\n" for e in entries)
    return gzip.compress(lines.encode(), mtime=0)


def _decode(data: bytes, where: str, pipeline: str | None) -> list[FileEntry]:
    try:
        text = gzip.decompress(data).decode()
        return [FileEntry.from_dict(json.loads(line)) for line in text.splitlines() if line]
    except (OSError, EOFError, ValueError, KeyError, TypeError):
        raise StateError(f"input manifest {where} is truncated or corrupt; the checkpoint is "
                         f"left untouched: restore the object from a backup, or "
                         f"{rebuild_hint(pipeline)}", code="CHECKPOINT_CORRUPT") from None


class Manifest:
    """The consumed files of one committed version (path -> entry)."""

    def __init__(self, entries: Iterable[FileEntry] = (), *, base: str | None = None,
                 deltas: tuple[str, ...] = (), sums: dict[str, str] | None = None) -> None:
        self._by_path: dict[str, FileEntry] = {}
        for e in entries:
            self._by_path[e.path] = e
        self.base = base
        self.deltas = deltas
        self.sums = dict(sums or {})      # manifest file key -> SHA-256 of its bytes

    def __len__(self) -> int:
        return len(self._by_path)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self._by_path.values(), key=lambda e: e.path))

    def get(self, path: str) -> FileEntry | None:
        return self._by_path.get(path)

    def consumed(self, files: Iterable[FileEntry]) -> list[FileEntry]:
        """The files of ``files`` that are new (never consumed, or rewritten since), in order."""
        out = []
        for f in files:
            seen = self._by_path.get(f.path)
            if seen is None or seen.identity() != f.identity():
                out.append(f)
        return out

    new_files = consumed  # clearer alias: returns the *new* files

    @classmethod
    def load(cls, store: ObjectStore, ref: dict[str, Any] | None,
             pipeline: str | None = None) -> Manifest:
        """Read the manifest a commit record's ``manifest`` field points to (empty if None);
        ``pipeline`` names the pipeline in error messages."""
        if not ref:
            return cls()
        base = ref.get("base")
        deltas = tuple(ref.get("deltas") or ())
        sums = ref.get("sha256") or {}
        entries: list[FileEntry] = []
        for key in ([base] if base else []) + list(deltas):
            data = store.read_bytes(key)
            if data is None:
                raise StateError(f"input manifest {store.uri_for(key)} named by the commit "
                                 f"record is missing: restore it from a backup, or "
                                 f"{rebuild_hint(pipeline)}", code="CHECKPOINT_CORRUPT")
            if key in sums and hashlib.sha256(data).hexdigest() != sums[key]:
                raise StateError(f"input manifest {store.uri_for(key)} does not match the "
                                 "checksum its commit record holds (damaged or replaced): "
                                 f"restore it from a backup, or {rebuild_hint(pipeline)}",
                                 code="CHECKPOINT_CORRUPT")
            entries.extend(_decode(data, store.uri_for(key), pipeline))
        manifest = cls(entries, base=base, deltas=deltas, sums=sums)
        if sums and len(manifest) != ref.get("files"):
            raise StateError(f"the input manifest of {store.uri_for(base or deltas[0])} holds "
                             f"{len(manifest)} files, its commit record says {ref.get('files')}",
                             code="CHECKPOINT_CORRUPT")
        return manifest

    def stage(self, store: ObjectStore, staging_key: str, files: Iterable[FileEntry],
              version: int, compact_every: int = 16) -> dict[str, Any]:
        """Write this run's manifest file under ``staging_key``; return the record reference.

        ``files`` are the files the run consumed (``version`` is stamped on them). Writes a full
        snapshot instead of a delta once ``compact_every`` deltas have accumulated.
        """
        new = [replace(f, version=version) for f in files]
        total = dict(self._by_path)
        total.update((f.path, f) for f in new)
        if len(self.deltas) + 1 >= compact_every or (self.base is None and not self.deltas):
            key = f"{staging_key}/{FULL_NAME}"
            data = _encode(sorted(total.values(), key=lambda e: e.path))
            store.write_bytes(key, data)
            return {"base": key, "deltas": [], "files": len(total),
                    "sha256": {key: hashlib.sha256(data).hexdigest()}}
        key = f"{staging_key}/{DELTA_NAME}"
        data = _encode(new)
        store.write_bytes(key, data)
        sums = {k: v for k, v in self.sums.items() if k in (self.base, *self.deltas)}
        return {"base": self.base, "deltas": [*self.deltas, key], "files": len(total),
                "sha256": {**sums, key: hashlib.sha256(data).hexdigest()}}
