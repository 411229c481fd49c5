"""S3 connection settings shared by boto3 (small objects) and Arrow (data files in Spark tasks).

Invariants:

- Resolution follows boto3's standard configuration: explicit keyword arguments win, then the
  environment (``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, ``AWS_REGION`` /
  ``AWS_DEFAULT_REGION``, ``AWS_PROFILE``), then the shared config files and the credential chain.
- Secrets never appear in ``repr``, ``str``, logs or pickles. Pickling an ``S3Settings`` drops the
  explicit credentials: an unpickled copy (e.g. inside a Spark task) resolves credentials from
  its own environment through the standard chain. :meth:`S3Settings.public` gives that copy
  explicitly.
- Both clients retry throttling and 5xx responses with exponential backoff, up to
  ``max_attempts`` attempts in total.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from windowlib.core.errors import StateError

__all__ = ["S3Settings"]

_RETRY_MODES = ("standard", "adaptive")
_FS_TTL_S = 300.0  # cached Arrow filesystems are rebuilt after this (credentials may rotate)
_FS_CACHE: dict[S3Settings, tuple[float, Any]] = {}
_FS_LOCK = threading.Lock()
_CLIENT_CACHE: dict[tuple[int, S3Settings], Any] = {}   # clients are thread-safe; per process
_CLIENT_LOCK = threading.Lock()


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


@dataclass(frozen=True)
class S3Settings:
    """Where and how to reach S3. Build with :meth:`resolve`; all fields are optional.

    ``endpoint_url`` is a full URL (``http://127.0.0.1:8333``) for S3-compatible servers;
    ``None`` means AWS itself. ``max_attempts`` counts the first try.
    """

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    max_attempts: int = 5
    retry_mode: str = "standard"
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.endpoint_url is not None:
            parts = urlsplit(self.endpoint_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise StateError(
                    f"S3 endpoint {self.endpoint_url!r} must look like http(s)://host[:port]",
                    code="S3_ENDPOINT_INVALID")
            if parts.username or parts.password:
                raise StateError("S3 endpoint URLs must not carry credentials; use the AWS_* "
                                 "environment variables or explicit settings",
                                 code="S3_ENDPOINT_INVALID")
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise StateError("give both access_key_id and secret_access_key, or neither",
                             code="S3_CREDENTIALS_INVALID")
        if self.max_attempts < 1:
            raise StateError("max_attempts must be >= 1", code="S3_SETTINGS_INVALID")
        if self.retry_mode not in _RETRY_MODES:
            raise StateError(f"retry_mode must be one of {_RETRY_MODES}",
                             code="S3_SETTINGS_INVALID")

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def resolve(cls, **overrides: Any) -> S3Settings:
        """Settings from explicit ``overrides`` (any field), falling back to the environment.

        Unknown keywords raise ``StateError(S3_SETTINGS_INVALID)``; ``None`` values are ignored.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise StateError(f"unknown S3 setting(s): {', '.join(unknown)}",
                             code="S3_SETTINGS_INVALID")
        given = {k: v for k, v in overrides.items() if v is not None}
        given.setdefault("endpoint_url", _env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"))
        given.setdefault("region", _env("AWS_REGION", "AWS_DEFAULT_REGION"))
        given.setdefault("profile", _env("AWS_PROFILE"))
        if "max_attempts" not in given and _env("AWS_MAX_ATTEMPTS"):
            given["max_attempts"] = int(_env("AWS_MAX_ATTEMPTS") or 5)
        if "retry_mode" not in given and _env("AWS_RETRY_MODE") in _RETRY_MODES:
            given["retry_mode"] = _env("AWS_RETRY_MODE")
        return cls(**{k: v for k, v in given.items() if v is not None})

    def public(self) -> S3Settings:
        """A copy without explicit credentials (safe to pickle into Spark tasks)."""
        return dataclasses.replace(self, access_key_id=None, secret_access_key=None,
                                   session_token=None)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles (Spark closures, multiprocessing) never carry secrets.
        pub = self.public()
        return (S3Settings, tuple(getattr(pub, f.name) for f in dataclasses.fields(pub)))

    @property
    def has_explicit_credentials(self) -> bool:
        return self.access_key_id is not None

    # -- clients ----------------------------------------------------------------------------

    def session(self) -> Any:
        """A ``boto3.session.Session`` honouring profile, region and explicit credentials."""
        import boto3
        import botocore.exceptions

        try:
            return boto3.session.Session(
                aws_access_key_id=self.access_key_id,
                aws_secret_access_key=self.secret_access_key,
                aws_session_token=self.session_token,
                region_name=self.region,
                profile_name=self.profile,
            )
        except botocore.exceptions.ProfileNotFound as exc:
            raise StateError(f"AWS profile {self.profile!r} not found in the shared config "
                             "files", code="S3_PROFILE_NOT_FOUND") from exc

    def client(self) -> Any:
        """A boto3 S3 client with retries (``retry_mode``, ``max_attempts``) and timeouts.

        With explicit credentials the client is shared per process and settings (building one
        costs 0.1-1 s); otherwise a new one resolves the current environment/profile."""
        if not self.has_explicit_credentials:
            return self._new_client()
        key = (os.getpid(), self)
        with _CLIENT_LOCK:
            client = _CLIENT_CACHE.get(key)
            if client is None:
                client = _CLIENT_CACHE[key] = self._new_client()
        return client

    def _new_client(self) -> Any:
        from botocore.config import Config

        config = Config(
            retries={"mode": self.retry_mode, "total_max_attempts": self.max_attempts},
            connect_timeout=self.connect_timeout_s,
            read_timeout=self.read_timeout_s,
            s3={"addressing_style": "path"} if self.endpoint_url else None,
        )
        return self.session().client("s3", endpoint_url=self.endpoint_url,
                                     region_name=self.region, config=config)

    def credential_source(self) -> str | None:
        """Where the resolved chain found credentials (botocore's method name: ``explicit``,
        ``env``, ``shared-credentials-file``, ``iam-role``...), or None if it found none."""
        creds = self.session().get_credentials()
        return None if creds is None else str(getattr(creds, "method", None) or "unknown")

    def frozen_credentials(self) -> tuple[str, str, str | None] | None:
        """``(access_key, secret_key, token)`` from the resolved chain, or None if none found."""
        creds = self.session().get_credentials()
        if creds is None:
            return None
        frozen = creds.get_frozen_credentials()
        return frozen.access_key, frozen.secret_key, frozen.token

    def arrow_filesystem(self, *, cached: bool = True) -> Any:
        """A ``pyarrow.fs.S3FileSystem`` for these settings.

        Credentials come from the resolved boto3 session (explicit ones, env, profile, ...);
        when the chain finds none, Arrow's own default chain applies. Callable inside Spark
        tasks on an unpickled copy: it then reads the task's environment. With ``cached``, one
        filesystem per settings and process is reused for up to 5 minutes.
        """
        if not cached:
            return self._new_arrow_filesystem()
        now = time.monotonic()
        with _FS_LOCK:
            hit = _FS_CACHE.get(self)
            if hit is not None and now - hit[0] < _FS_TTL_S:
                return hit[1]
        fs = self._new_arrow_filesystem()
        with _FS_LOCK:
            _FS_CACHE[self] = (now, fs)
        return fs

    def _new_arrow_filesystem(self) -> Any:
        from pyarrow import fs as pafs

        kwargs: dict[str, Any] = {
            "region": self.region or "us-east-1",
            "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=self.max_attempts),
            "connect_timeout": self.connect_timeout_s,
            "request_timeout": self.read_timeout_s,
        }
        if self.endpoint_url:
            parts = urlsplit(self.endpoint_url)
            kwargs["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
            kwargs["scheme"] = parts.scheme
        creds = self.frozen_credentials()
        if creds is not None:
            kwargs["access_key"], kwargs["secret_key"], token = creds
            if token:
                kwargs["session_token"] = token
        return pafs.S3FileSystem(**kwargs)

    def describe(self) -> dict[str, Any]:
        """A loggable summary (never secrets)."""
        return {"endpoint_url": self.endpoint_url, "region": self.region,
                "profile": self.profile, "explicit_credentials": self.has_explicit_credentials,
                "max_attempts": self.max_attempts, "retry_mode": self.retry_mode}
