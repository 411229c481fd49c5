"""Checksummed data files: every file a run stages is recorded with its size and SHA-256, and
every read checks them, so a missing, truncated, zeroed, flipped or swapped file is refused
(``CHECKPOINT_CORRUPT`` naming the object) instead of being read as something else.

- ``HashingSink`` wraps an output stream inside a writer task: it hashes the bytes as they are
  written (no second read).
- ``verified_bytes`` reads a whole file inside a reader task and checks size and checksum before
  anything parses it.
- ``check_sizes`` is the driver-side check a reader makes before it returns a DataFrame: one
  listing per location, every expected object present with its recorded size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from windowlib.core.errors import StateError

__all__ = ["HashingSink", "check_sizes", "corrupt", "verified_bytes"]


def corrupt(uri: str, problem: str) -> StateError:
    return StateError(f"{uri} {problem}: the checkpoint or output is damaged; restore the "
                      "object (versioning, backup), or rebuild the pipeline's state",
                      code="CHECKPOINT_CORRUPT")


class HashingSink:
    """A write-only file object over ``stream`` that counts and hashes what passes through."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.size = 0
        self._hash = hashlib.sha256()

    def write(self, data: Any) -> int:
        data = bytes(data)
        self._hash.update(data)
        self.size += len(data)
        self.stream.write(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.stream.flush()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return bool(self.stream.closed)

    def close(self) -> None:
        self.stream.close()

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def verified_bytes(filesystem: Any, arrow_path: str, uri: str, size: int | None,
                   sha256: str | None) -> bytes:
    """The bytes of one file, after checking them against the recorded ``size`` and
    ``sha256`` (either may be ``None``: not recorded)."""
    try:
        with filesystem.open_input_file(arrow_path) as handle:
            data = handle.read()
    except FileNotFoundError:
        raise corrupt(uri, "is missing") from None
    except OSError as exc:
        if "not found" in str(exc).lower() or "no such" in str(exc).lower():
            raise corrupt(uri, "is missing") from None
        raise
    if size is not None and len(data) != size:
        raise corrupt(uri, f"has {len(data)} bytes, {size} were written")
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise corrupt(uri, "does not match the checksum written with it")
    return data


def check_sizes(expected: Iterable[tuple[str, int]], listing: dict[str, int]) -> None:
    """Raise ``CHECKPOINT_CORRUPT`` for the first expected ``(uri, size)`` that ``listing``
    (uri -> size, one listing of the locations) does not hold with that size."""
    for uri, size in expected:
        found = listing.get(uri)
        if found is None:
            raise corrupt(uri, "is missing")
        if found != size:
            raise corrupt(uri, f"has {found} bytes, {size} were written")
