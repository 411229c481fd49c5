"""Small-object stores over ``file://`` and ``s3://``: commit records, manifests, and the
listing of data files (checkpoints, outputs, source partitions).

Contract shared by every store (tested on file://, moto and SeaweedFS with the same tests):

- A store is opened for a :class:`~windowlib.state.uri.Uri` (:func:`windowlib.state.stores.
  open_store`). Keys are relative, ``/``-separated and validated
  (:mod:`windowlib.state.paths`): a store never reads or writes outside its root.
- ``write_bytes`` replaces an object atomically: readers see the old or the new bytes, never a
  mix. ``create_exclusive`` writes only if the key does not exist yet and says whether this call
  created it; among concurrent callers exactly one gets ``True``. A caller that gets ``True``
  is guaranteed its own bytes were stored.
- ``list(prefix)`` yields every object whose key starts with ``prefix`` (string prefix, like
  S3; recursive), in key order, as :class:`ObjectInfo`: key, absolute ``uri``, size, ETag
  (``None`` on files), last-modified time (UTC) and ``version`` — the S3 ETag without quotes,
  or exactly ``mtime_ns:<st_mtime_ns>`` for files (input manifests committed in checkpoints
  store this string: it must never change form). ``list(prefix, hidden=False)`` leaves out
  hidden objects (:func:`is_hidden` of the key). In-flight temporary files and S3 directory
  markers (keys ending in ``/``) are never listed.
- Errors are ``StateError`` with a stable code (``S3_BUCKET_NOT_FOUND``, ``S3_ACCESS_DENIED``,
  ``OBJECT_KEY_INVALID``...). Missing objects are not errors: ``read_bytes`` returns ``None`` and a
  missing location lists empty.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from windowlib.core.errors import InputError, StateError
from windowlib.state.paths import join_key, validate_key, validate_prefix
from windowlib.state.uri import Uri

__all__ = ["FileStore", "ObjectInfo", "ObjectStore", "is_hidden"]

_TMP_MARK = ".wltmp-"


@dataclass(frozen=True)
class ObjectInfo:
    """One stored object: ``key`` relative to the store's root, its absolute ``uri``, and
    ``version`` (see the module docstring: identifies the content together with ``size``)."""

    key: str
    uri: str
    size: int
    etag: str | None
    last_modified: datetime
    version: str


def is_hidden(key: str) -> bool:
    """Spark's and Hadoop's rule plus temp files: a segment starting with ``_`` or ``.``
    (``_SUCCESS``, ``_temporary/``, ``.crc``), or a name ending in ``.tmp``/``~``/``.crc``."""
    parts = key.split("/")
    name = parts[-1]
    return (any(p.startswith(("_", ".")) for p in parts) or name.endswith((".tmp", "~", ".crc"))
            or not name)


class ObjectStore(abc.ABC):
    """A root location holding small objects addressed by relative keys."""

    @property
    @abc.abstractmethod
    def root_uri(self) -> str:
        """URI of the root in :class:`~windowlib.state.uri.Uri` normal form (``file:///...``,
        ``s3://bucket/prefix``)."""

    @abc.abstractmethod
    def read_bytes(self, key: str) -> bytes | None:
        """The object's bytes, or ``None`` if it does not exist."""

    @abc.abstractmethod
    def write_bytes(self, key: str, data: bytes) -> None:
        """Create or atomically replace the object."""

    @abc.abstractmethod
    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Write only if absent; ``True`` iff this call created the object."""

    @abc.abstractmethod
    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object whose key starts with the validated ``prefix``, in key order."""

    def list(self, prefix: str = "", *, hidden: bool = True) -> Iterator[ObjectInfo]:
        """Objects whose key starts with ``prefix``, in key order (recursive); without hidden
        ones (:func:`is_hidden`) when ``hidden`` is false."""
        for info in self._list(validate_prefix(prefix)):
            if hidden or not is_hidden(info.key):
                yield info

    @abc.abstractmethod
    def stat(self, key: str) -> ObjectInfo | None:
        """Metadata of one object, or ``None``."""

    @abc.abstractmethod
    def delete(self, keys: Iterable[str]) -> None:
        """Delete the objects (missing ones are ignored)."""

    @abc.abstractmethod
    def child(self, prefix: str) -> ObjectStore:
        """A store rooted at ``prefix`` under this root."""

    def exists(self, key: str) -> bool:
        return self.stat(key) is not None

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under ``prefix`` (must be non-empty); returns how many."""
        prefix = validate_prefix(prefix)
        if not prefix:
            raise StateError("refusing to delete the whole store root", code="OBJECT_KEY_INVALID")
        keys = [info.key for info in self.list(prefix)]
        self.delete(keys)
        return len(keys)

    def join(self, *parts: str) -> str:
        """A validated key from parts."""
        return join_key(*parts)

    def uri_for(self, key: str) -> str:
        """Absolute URI of ``key`` (or of a prefix like ``v=00000001/state``)."""
        return self._uri_of(validate_prefix(key).rstrip("/"))

    def _uri_of(self, key: str) -> str:
        """``uri_for`` without validation (for keys just listed)."""
        root = self.root_uri
        if not key:
            return root
        return root + key if root.endswith("/") else f"{root}/{key}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.root_uri!r})"


class FileStore(ObjectStore):
    """Objects as files under a directory. Atomic replace = temp file + ``os.replace``;
    exclusive create = temp file + ``os.link`` (falls back to ``O_CREAT|O_EXCL``)."""

    def __init__(self, root: str | os.PathLike[str] | Uri) -> None:
        uri = root if isinstance(root, Uri) else Uri.from_path(root)
        if uri.scheme != "file":
            raise InputError(f"a FileStore needs a file:// location, got {uri}",
                             code="URI_INVALID")
        self._uri = uri
        self._root = Path(uri.arrow_path)

    @property
    def root(self) -> Path:
        return self._root

    @property
    def root_uri(self) -> str:
        return self._uri.uri

    def _path(self, key: str) -> Path:
        path = self._root.joinpath(*validate_key(key).split("/"))
        # Symlinks inside the root must not lead outside it either.
        real_root = os.path.realpath(self._root)
        if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
            raise StateError(f"object key {key!r} escapes the store root",
                             code="OBJECT_KEY_INVALID")
        return path

    def read_bytes(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except IsADirectoryError:
            return None
        except PermissionError as exc:
            raise StateError(f"permission denied reading {self.uri_for(key)}",
                             code="ACCESS_DENIED") from exc

    def _write_temp(self, path: Path, data: bytes) -> Path:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise StateError(f"cannot create a directory for {path}: a file is in the way",
                             code="OBJECT_KEY_INVALID") from exc
        except PermissionError as exc:
            raise StateError(f"permission denied creating {path.parent}",
                             code="ACCESS_DENIED") from exc
        tmp = path.parent / f"{_TMP_MARK}{path.name}-{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return tmp

    @staticmethod
    def _fsync_dir(path: Path) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def write_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        tmp = self._write_temp(path, data)
        try:
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self._fsync_dir(path.parent)

    def create_exclusive(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        tmp = self._write_temp(path, data)
        try:
            os.link(tmp, path)
            created = True
        except FileExistsError:
            created = False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            created = self._create_excl_fallback(path, data)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if created:
            self._fsync_dir(path.parent)
        return created

    @staticmethod
    def _create_excl_fallback(path: Path, data: bytes) -> bool:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return True

    def _info(self, key: str, path: Path) -> ObjectInfo | None:
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not path.is_file():
            return None
        return ObjectInfo(key, self._uri_of(key), st.st_size, None,
                          datetime.fromtimestamp(st.st_mtime, UTC), f"mtime_ns:{st.st_mtime_ns}")

    def stat(self, key: str) -> ObjectInfo | None:
        return self._info(key, self._path(key))

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        base = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self._path(base) if base else self._root
        if not start.is_dir():
            return
        found: list[tuple[str, Path]] = []
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, self._root)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
            for name in filenames:
                if name.startswith(_TMP_MARK):
                    continue
                key = f"{rel_dir}/{name}" if rel_dir else name
                if key.startswith(prefix):
                    found.append((key, Path(dirpath, name)))
        for key, path in sorted(found):
            info = self._info(key, path)
            if info is not None:
                yield info

    def delete(self, keys: Iterable[str]) -> None:
        parents: set[Path] = set()
        for key in keys:
            path = self._path(key)
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                path.unlink()
                parents.add(path.parent)
        for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
            self._prune(parent)

    def _prune(self, directory: Path) -> None:
        """Remove empty directories from ``directory`` up to (not including) the root."""
        while directory != self._root and self._root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def child(self, prefix: str) -> FileStore:
        return FileStore(self._path(join_key(prefix)))
