"""Validation of user-given names, keys and path segments (no traversal, no escaping a root).

Invariant: every key an object store touches went through :func:`validate_key` (or
:func:`validate_prefix`), and every segment of a :class:`~windowlib.state.uri.Uri` through
:func:`segment_problem`, so ``..``, absolute keys, empty segments, backslashes and control
characters never reach a file system or a bucket — not even percent-encoded (``%2e%2e``,
``%2f``, ``%5c``, ``%00``), in case any reader decodes them. Percent signs are otherwise
literal characters (Spark's escaping of Hive partition values, ``hour=05%3A30``).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from windowlib.core.errors import DefinitionError, StateError

__all__ = ["join_key", "segment_problem", "validate_key", "validate_pipeline_name",
           "validate_prefix"]

_PIPELINE = re.compile(r"[a-z0-9_]{1,128}")
MAX_KEY = 900


def validate_pipeline_name(name: object) -> str:
    """``name`` if it matches ``[a-z0-9_]+`` (at most 128 characters), else ``NAME_INVALID``."""
    if not isinstance(name, str) or not _PIPELINE.fullmatch(name):
        raise DefinitionError(f"pipeline name {name!r} is invalid: use 1-128 characters of "
                              "[a-z0-9_]", code="NAME_INVALID")
    return name


def _unsafe_chars(text: str) -> bool:
    return "/" in text or "\\" in text or any(ord(c) < 32 or ord(c) == 127 for c in text)


def segment_problem(segment: str) -> str | None:
    """Why ``segment`` (one ``/``-free part of a key or path) is unsafe, or ``None``.

    Unsafe: empty, ``.``, ``..``, a backslash or control character, or any of these (or ``/``)
    after percent-decoding once or repeatedly (each decoding shortens the text, so this ends).
    """
    if segment in ("", ".", ".."):
        return "empty, '.' or '..' segments are not allowed"
    if _unsafe_chars(segment):
        return "backslashes and control characters are not allowed"
    decoded = segment
    while (nxt := unquote(decoded)) != decoded:
        decoded = nxt
        if decoded in (".", "..") or _unsafe_chars(decoded):
            return ("percent-encoded '.', '..', separators and control characters are not "
                    "allowed")
    return None


def validate_key(key: object) -> str:
    """A relative object key: ``a/b/c.json``. Rejects traversal and absolute keys
    (``OBJECT_KEY_INVALID``)."""
    if not isinstance(key, str) or not key:
        raise StateError(f"object key {key!r} must be a non-empty string",
                         code="OBJECT_KEY_INVALID")
    if key.startswith("/") or "\\" in key or len(key) > MAX_KEY:
        raise StateError(f"object key {key!r} must be relative, use '/' and be at most "
                         f"{MAX_KEY} characters", code="OBJECT_KEY_INVALID")
    for seg in key.split("/"):
        problem = segment_problem(seg)
        if problem:
            raise StateError(f"object key {key!r} is invalid: {problem}", code="OBJECT_KEY_INVALID")
    return key


def validate_prefix(prefix: object) -> str:
    """A key prefix: ``""`` (everything), ``"a/"`` or ``"a/b"`` (string prefix of keys)."""
    if prefix == "":
        return ""
    if not isinstance(prefix, str):
        raise StateError(f"key prefix {prefix!r} must be a string", code="OBJECT_KEY_INVALID")
    validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
    return prefix


def join_key(*parts: str) -> str:
    """Join validated parts with ``/`` (each part may itself contain ``/``)."""
    key = "/".join(p.strip("/") for p in parts if p.strip("/"))
    return validate_key(key)
