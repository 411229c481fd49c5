"""Validation of user-given names, keys and URIs (no traversal, no escaping a configured root).

Invariant: every key an object store touches went through :func:`validate_key` (or
:func:`validate_prefix`), so ``..``, absolute keys, empty segments, backslashes and control
characters never reach a file system or a bucket.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from windowlib.core.errors import StateError

__all__ = ["join_key", "redact_uri", "split_uri", "validate_key", "validate_pipeline_name",
           "validate_prefix"]

_PIPELINE = re.compile(r"[a-z0-9_]{1,128}")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")
_MAX_KEY = 900


def validate_pipeline_name(name: object) -> str:
    """``name`` if it matches ``[a-z0-9_]+`` (at most 128 characters), else ``NAME_INVALID``."""
    if not isinstance(name, str) or not _PIPELINE.fullmatch(name):
        raise StateError(f"pipeline name {name!r} is invalid: use 1-128 characters of "
                         "[a-z0-9_]", code="NAME_INVALID")
    return name


def _check_segments(value: str, what: str) -> None:
    for seg in value.split("/"):
        if seg in ("", ".", ".."):
            raise StateError(f"{what} {value!r} is invalid: empty, '.' or '..' segments are not "
                             "allowed", code="KEY_INVALID")


def validate_key(key: object) -> str:
    """A relative object key: ``a/b/c.json``. Rejects traversal and absolute keys (KEY_INVALID)."""
    if not isinstance(key, str) or not key:
        raise StateError(f"object key {key!r} must be a non-empty string", code="KEY_INVALID")
    if key.startswith("/") or "\\" in key or len(key) > _MAX_KEY:
        raise StateError(f"object key {key!r} must be relative, use '/' and be at most "
                         f"{_MAX_KEY} characters", code="KEY_INVALID")
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise StateError(f"object key {key!r} contains control characters", code="KEY_INVALID")
    _check_segments(key, "object key")
    return key


def validate_prefix(prefix: object) -> str:
    """A key prefix: ``""`` (everything), ``"a/"`` or ``"a/b"`` (string prefix of keys)."""
    if prefix == "":
        return ""
    if not isinstance(prefix, str):
        raise StateError(f"key prefix {prefix!r} must be a string", code="KEY_INVALID")
    validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
    return prefix


def join_key(*parts: str) -> str:
    """Join validated parts with ``/`` (each part may itself contain ``/``)."""
    key = "/".join(p.strip("/") for p in parts if p.strip("/"))
    return validate_key(key)


def redact_uri(uri: str) -> str:
    """``uri`` without user info and query (which could hold credentials), for messages."""
    if "://" not in uri:
        return uri
    parts = urlsplit(uri)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = "?…" if parts.query else ""
    return f"{parts.scheme}://{'…@' if '@' in parts.netloc else ''}{host}{parts.path}{query}"


def split_uri(uri: str) -> tuple[str, str, str]:
    """``(scheme, location, path)``: ``("s3", bucket, prefix)`` or ``("file", "", abs_path)``.

    Plain paths are ``file``. Accepted schemes: ``file``, ``s3``, ``s3a``. Raises URI_INVALID.
    """
    if not isinstance(uri, str) or not uri:
        raise StateError(f"location {uri!r} must be a non-empty string", code="URI_INVALID")
    if "://" not in uri:
        return "file", "", uri
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    shown = redact_uri(uri)
    if parts.query or parts.fragment:
        raise StateError(f"location {shown!r} must not have a query or fragment (credentials "
                         "and options go in the environment or settings)", code="URI_INVALID")
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise StateError(f"file URI {shown!r} must be file:///absolute/path",
                             code="URI_INVALID")
        return "file", "", parts.path
    if scheme in ("s3", "s3a"):
        bucket = parts.netloc
        if "@" in bucket or ":" in bucket:
            raise StateError(f"S3 URI {shown!r} must not carry credentials or ports; use "
                             "AWS_ENDPOINT_URL_S3 / settings", code="URI_INVALID")
        if not _BUCKET.fullmatch(bucket) or ".." in bucket:
            raise StateError(f"S3 bucket name {bucket!r} in {shown!r} is invalid",
                             code="URI_INVALID")
        prefix = parts.path.strip("/")
        if prefix:
            validate_key(prefix)
        return "s3", bucket, prefix
    raise StateError(f"location {shown!r} has unsupported scheme {parts.scheme!r}; use file:// or "
                     "s3://", code="URI_UNSUPPORTED")
