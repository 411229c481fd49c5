"""Arrow filesystems for data files: rebuilt inside Spark tasks, or opened on the driver.

Invariants:

- :class:`TaskFilesystem` is a small picklable description; :meth:`TaskFilesystem.open` builds
  the ``pyarrow.fs`` filesystem where it runs (``LocalFileSystem`` for ``file://``,
  ``S3Settings.arrow_filesystem()`` for ``s3://``). It imports neither pyspark nor boto3.
- Credentials: tasks build their filesystem from :class:`S3Settings` pickled without secrets, so
  executors use their own credential chain (environment, instance profile...). On a local
  master (same machine, same user) the driver's resolved credentials are forwarded inside the
  task closure, because the workers' environment was fixed when the JVM started;
  ``forward_credentials=`` overrides the choice. Credentials never appear in reprs or logs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from windowlib.state.s3config import S3Settings
from windowlib.state.uri import Uri

__all__ = ["TaskFilesystem", "arrow_filesystem", "task_filesystem"]


class _Secret:
    """Forwarded credentials (see the module docstring); never shown in reprs."""

    def __init__(self, creds: tuple[str, str, str | None]) -> None:
        self.creds = creds

    def __repr__(self) -> str:
        return "_Secret(***)"


@dataclass(frozen=True)
class TaskFilesystem:
    """Everything a task needs to rebuild the Arrow filesystem of a location (picklable)."""

    scheme: str
    settings: S3Settings | None = None
    secret: _Secret | None = field(default=None, repr=False, compare=False)

    def open(self) -> Any:
        """The ``pyarrow.fs`` filesystem (call it where it is used, e.g. inside the task)."""
        from pyarrow import fs as pafs

        if self.scheme == "file":
            return pafs.LocalFileSystem()
        settings = self.settings or S3Settings.resolve()
        if self.secret is not None:
            key, secret, token = self.secret.creds
            settings = dataclasses.replace(settings, access_key_id=key,
                                           secret_access_key=secret, session_token=token)
        return settings.arrow_filesystem()


def _is_local_master(spark: Any) -> bool:
    try:
        return str(spark.conf.get("spark.master", "")).startswith("local")
    except Exception:   # pragma: no cover - restricted Connect servers
        return False


def task_filesystem(spark: Any, loc: Uri, settings: S3Settings | None = None,
                    forward_credentials: bool | None = None) -> TaskFilesystem:
    """The picklable filesystem description for tasks of ``spark`` (a SparkSession, used only
    to ask whether the master is local) reading or writing ``loc``."""
    if loc.scheme == "file":
        return TaskFilesystem("file")
    resolved = settings if settings is not None else S3Settings.resolve()
    forward = _is_local_master(spark) if forward_credentials is None else forward_credentials
    creds = resolved.frozen_credentials() if forward else None
    return TaskFilesystem("s3", resolved.public(), _Secret(creds) if creds else None)


def arrow_filesystem(loc: Uri, settings: S3Settings | None = None) -> Any:
    """The Arrow filesystem of ``loc`` on the driver (footers, schemas: metadata only)."""
    if loc.scheme == "file":
        return TaskFilesystem("file").open()
    return (settings if settings is not None else S3Settings.resolve()).arrow_filesystem()
