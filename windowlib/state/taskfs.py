"""Arrow filesystems for data files: rebuilt inside Spark tasks, or opened on the driver.

Invariants:

- :class:`TaskFilesystem` is a small picklable description; :meth:`TaskFilesystem.open` builds
  the ``pyarrow.fs`` filesystem where it runs (``LocalFileSystem`` for ``file://``,
  ``S3Settings.arrow_filesystem()`` for ``s3://``). It imports neither pyspark nor boto3.
- Endpoint, region and retry settings always travel with the task (``S3Settings.public()``).
- Credentials (:func:`forwards_credentials`, the one rule): the driver's resolved credentials
  are forwarded inside the pickled task closure — Spark's task serializer, never the Spark
  configuration, environment page, event log or a log line — on a local master, and on a
  cluster when the driver got them from its configuration (explicit settings, ``AWS_*``
  variables, profiles and shared files, SSO...). When the driver's credentials come from its
  host's role (``iam-role``, ``container-role``, ``assume-role-with-web-identity``), executors
  use their own credential chain (instance profile, IRSA) and nothing is forwarded. The Spark
  setting ``spark.windowlib.s3.forwardCredentials`` (``true``/``false``, default ``auto``) and
  ``forward_credentials=`` override the choice. Credentials never appear in reprs or logs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from windowlib.state.s3config import S3Settings
from windowlib.state.uri import Uri

__all__ = ["TaskFilesystem", "arrow_filesystem", "forwards_credentials", "task_filesystem"]


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


FORWARD_CONF = "spark.windowlib.s3.forwardCredentials"
# credentials an executor host provides for itself: never forwarded by default
HOST_CREDENTIAL_SOURCES = frozenset({"iam-role", "container-role",
                                     "assume-role-with-web-identity"})


def _conf(spark: Any, key: str, default: str) -> str:
    try:
        return str(spark.conf.get(key, default))
    except Exception:   # pragma: no cover - restricted Connect servers
        return default


def forwards_credentials(spark: Any, settings: S3Settings) -> bool:
    """Whether tasks of ``spark`` get the driver's credentials for ``settings`` (module
    docstring): the ``spark.windowlib.s3.forwardCredentials`` setting when ``true``/``false``,
    else yes on a local master, else yes unless the driver's credentials are its host's role."""
    choice = _conf(spark, FORWARD_CONF, "auto").strip().lower()
    if choice in ("true", "false"):
        return choice == "true"
    if _conf(spark, "spark.master", "").startswith("local"):
        return True
    return settings.credential_source() not in HOST_CREDENTIAL_SOURCES


def task_filesystem(spark: Any, loc: Uri, settings: S3Settings | None = None,
                    forward_credentials: bool | None = None) -> TaskFilesystem:
    """The picklable filesystem description for tasks of ``spark`` (a SparkSession, asked only
    for its master and ``spark.windowlib.s3.forwardCredentials``) reading or writing ``loc``."""
    if loc.scheme == "file":
        return TaskFilesystem("file")
    resolved = settings if settings is not None else S3Settings.resolve()
    forward = (forwards_credentials(spark, resolved) if forward_credentials is None
               else forward_credentials)
    creds = resolved.frozen_credentials() if forward else None
    return TaskFilesystem("s3", resolved.public(), _Secret(creds) if creds else None)


def arrow_filesystem(loc: Uri, settings: S3Settings | None = None) -> Any:
    """The Arrow filesystem of ``loc`` on the driver (footers, schemas: metadata only)."""
    if loc.scheme == "file":
        return TaskFilesystem("file").open()
    return (settings if settings is not None else S3Settings.resolve()).arrow_filesystem()
