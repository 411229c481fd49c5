"""``s3://bucket/prefix`` object store over boto3 (see :mod:`windowlib.state.objectstore`).

Invariants: exclusive create is ``PutObject`` with ``If-None-Match: *`` (a 412 means the key
exists); a create whose first attempt succeeded but whose retry saw 412 is recognised by reading
the object back and comparing bytes, so a caller never loses a commit it actually won. AWS errors
are mapped to ``StateError`` codes; messages name bucket and key, never credentials.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from datetime import UTC
from typing import Any

from windowlib.core.errors import StateError
from windowlib.state.objectstore import ObjectInfo, ObjectStore
from windowlib.state.paths import join_key, validate_key, validate_prefix
from windowlib.state.s3config import S3Settings
from windowlib.state.uri import Uri

__all__ = ["S3Store"]

_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
_PRECONDITION = {"PreconditionFailed", "412"}
_CONFLICT = {"ConditionalRequestConflict", "409", "OperationAborted"}
_DENIED = {"AccessDenied", "403", "AllAccessDisabled", "Forbidden"}
_BAD_CREDS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
              "TokenRefreshRequired"}


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


class S3Store(ObjectStore):
    """Objects under ``s3://bucket/prefix`` (``prefix`` may be empty)."""

    page_size: int = 1000  # keys per LIST request (tests lower it to exercise pagination)

    def __init__(self, bucket: str, prefix: str = "", *, settings: S3Settings | None = None,
                 client: Any = None) -> None:
        self.prefix = validate_prefix(prefix).strip("/")
        self.location = Uri("s3", bucket, self.prefix)
        self.bucket = bucket
        self.settings = settings if settings is not None else S3Settings.resolve()
        self._client = client
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self.settings.client()
            return self._client

    @property
    def root_uri(self) -> str:
        return self.location.uri

    def _full(self, key: str) -> str:
        key = validate_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _rel(self, full: str) -> str:
        return full[len(self.prefix) + 1:] if self.prefix else full

    def _error(self, exc: Exception, action: str, key: str = "") -> StateError:
        """Map a botocore exception to a StateError with a stable code."""
        import botocore.exceptions as bex

        where = f"s3://{self.bucket}/{self._full(key)}" if key else self.root_uri
        if isinstance(exc, bex.NoCredentialsError | bex.PartialCredentialsError):
            return StateError(f"no AWS credentials found for {action} {where}: set "
                              "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, or explicit "
                              "settings", code="S3_CREDENTIALS_MISSING")
        if isinstance(exc, bex.EndpointConnectionError | bex.ConnectTimeoutError
                      | bex.ReadTimeoutError | bex.ConnectionClosedError):
            return StateError(f"cannot reach S3 endpoint "
                              f"{self.settings.endpoint_url or 'AWS'} for {action} {where} "
                              f"after {self.settings.max_attempts} attempts",
                              code="S3_UNREACHABLE")
        code = _code(exc)
        if code == "NoSuchBucket":
            return StateError(f"bucket {self.bucket!r} does not exist ({action} {where})",
                              code="S3_BUCKET_NOT_FOUND")
        if code in _DENIED:
            return StateError(f"access denied for {action} {where}; check the IAM policy "
                              "(infra/PRODUCTION.md)", code="S3_ACCESS_DENIED")
        if code in _BAD_CREDS:
            return StateError(f"S3 rejected the credentials ({code}) for {action} {where}",
                              code="S3_CREDENTIALS_INVALID")
        if code in ("SlowDown", "503", "500", "InternalError", "ServiceUnavailable"):
            return StateError(f"S3 kept failing ({code}) for {action} {where} after "
                              f"{self.settings.max_attempts} attempts", code="S3_UNAVAILABLE")
        return StateError(f"S3 request failed ({code or type(exc).__name__}) for {action} "
                          f"{where}", code="S3_REQUEST_FAILED")

    # -- reads ------------------------------------------------------------------------------

    def read_bytes(self, key: str) -> bytes | None:
        full = self._full(key)
        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=full)
            return resp["Body"].read()
        except Exception as exc:
            if _code(exc) in _NOT_FOUND:
                return None
            raise self._error(exc, "reading", key) from None

    def stat(self, key: str) -> ObjectInfo | None:
        full = self._full(key)
        try:
            resp = self.client.head_object(Bucket=self.bucket, Key=full)
        except Exception as exc:
            if _code(exc) in _NOT_FOUND:
                return None
            raise self._error(exc, "inspecting", key) from None
        etag = str(resp.get("ETag", "")).strip('"')
        return ObjectInfo(key, self._uri_of(key), int(resp["ContentLength"]), etag or None,
                          resp["LastModified"].astimezone(UTC), etag)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        full = f"{self.prefix}/{prefix}" if self.prefix else prefix
        if self.prefix and not prefix:
            full = f"{self.prefix}/"
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=full,
                PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                for obj in page.get("Contents", []):
                    key = self._rel(obj["Key"])
                    if not key or key.endswith("/"):    # directory markers are not objects
                        continue
                    etag = str(obj.get("ETag", "")).strip('"')
                    yield ObjectInfo(key, self._uri_of(key), int(obj["Size"]), etag or None,
                                     obj["LastModified"].astimezone(UTC), etag)
        except StateError:
            raise
        except Exception as exc:
            raise self._error(exc, "listing", "") from None

    # -- writes -----------------------------------------------------------------------------

    def write_bytes(self, key: str, data: bytes) -> None:
        full = self._full(key)
        try:
            self.client.put_object(Bucket=self.bucket, Key=full, Body=data)
        except Exception as exc:
            raise self._error(exc, "writing", key) from None

    def create_exclusive(self, key: str, data: bytes) -> bool:
        full = self._full(key)
        for attempt in range(self.settings.max_attempts + 3):
            try:
                self.client.put_object(Bucket=self.bucket, Key=full, Body=data, IfNoneMatch="*")
                return True
            except Exception as exc:
                code = _code(exc)
                if code in _PRECONDITION:
                    # Exists. It may be ours if an earlier attempt succeeded before a retry.
                    return self.read_bytes(key) == data
                if code in _CONFLICT:  # a concurrent conditional write is in flight
                    time.sleep(min(0.05 * 2 ** attempt, 1.0))
                    continue
                raise self._error(exc, "creating", key) from None
        return self.read_bytes(key) == data

    def delete(self, keys: Iterable[str]) -> None:
        fulls = [self._full(k) for k in keys]
        for i in range(0, len(fulls), 1000):
            batch = fulls[i:i + 1000]
            try:
                resp = self.client.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
            except Exception as exc:
                raise self._error(exc, "deleting under", "") from None
            errors = [e for e in resp.get("Errors", []) if e.get("Code") not in _NOT_FOUND]
            if errors:
                first = errors[0]
                raise StateError(f"could not delete {len(errors)} object(s), e.g. "
                                 f"s3://{self.bucket}/{first.get('Key')} ({first.get('Code')})",
                                 code="S3_ACCESS_DENIED" if first.get("Code") in _DENIED
                                 else "S3_REQUEST_FAILED")

    def child(self, prefix: str) -> S3Store:
        sub = join_key(self.prefix, prefix) if self.prefix else join_key(prefix)
        return S3Store(self.bucket, sub, settings=self.settings, client=self._client)
