"""One location type for every layer: ``file:///abs/path`` and ``s3://bucket/key``.

Invariants:

- A :class:`Uri` is valid by construction (``parse``, ``from_path``, ``child`` and the
  constructor all validate): scheme ``file`` or ``s3``; every segment passes
  :func:`~windowlib.state.paths.segment_problem` (no ``.``/``..``, backslash, NUL or control
  character, also not percent-encoded as ``%2e%2e``, ``%2f``, ``%00``...); no ``?`` or ``#``
  (query, fragment), no user-info, no port; S3 bucket names follow S3's naming rules; S3 keys
  are at most 900 characters.
- Percent signs are otherwise literal and never decoded: Spark escapes Hive partition values
  (``hour=05%3A30``), and a listed object's URI must name exactly that object. So
  ``str(Uri.parse(s))`` round-trips. Build file URIs with :meth:`Uri.from_path`, not
  ``Path.as_uri()`` (which percent-encodes). Consequence: a partition value that Spark escapes
  to ``%2F``, ``%5C`` or a control character cannot be addressed.
- Normal form: ``s3a://`` is ``s3://``, schemes are lower case, no trailing ``/``,
  ``file://localhost/`` is ``file:///``. Repeated ``/`` in a file path collapse (POSIX: the
  same file); an empty segment in an S3 key is an error (``a//b`` is another key than ``a/b``).
- Errors are ``InputError(URI_INVALID)`` and show the input only through :func:`redact`:
  user-info, query and fragment (where credentials hide) never appear in a message.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from windowlib.core.errors import InputError
from windowlib.state.paths import MAX_KEY, segment_problem

__all__ = ["Uri", "redact"]

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_SCHEMES = {"file": "file", "s3": "s3", "s3a": "s3"}
_USE = "use file:///absolute/path or s3://bucket/prefix"


def redact(text: str) -> str:
    """``text`` fit for a message: everything between the scheme and the last ``@`` (user-info,
    possibly credentials) becomes ``***``, a query or fragment becomes ``?…``."""
    head, sep, rest = text.partition("://")
    if sep and _SCHEME.fullmatch(head):
        head += sep
    else:
        head, rest = "", text
    if "@" in rest:
        rest = "***" + rest[rest.rindex("@"):]
    cuts = [i for i in (rest.find("?"), rest.find("#")) if i >= 0]
    if cuts:
        rest = rest[:min(cuts)] + "?…"
    return head + rest


def _invalid(text: str, why: str) -> InputError:
    return InputError(f"location {redact(text)!r} is invalid: {why}", code="URI_INVALID")


def _problem(scheme: str, bucket: str, key: str) -> str | None:
    """Why ``(scheme, bucket, key)`` is not a valid :class:`Uri`, or ``None``."""
    if scheme == "file":
        if bucket:
            return "file URIs have no bucket"
    elif scheme == "s3":
        if not _BUCKET.fullmatch(bucket) or ".." in bucket:
            return ("invalid S3 bucket name (3-63 characters of a-z, 0-9, '.' and '-'; no "
                    "credentials or ports)")
        if len(key) > MAX_KEY:
            return f"S3 keys are at most {MAX_KEY} characters"
    else:
        return f"unsupported scheme; {_USE}"
    if "?" in key or "#" in key:
        return ("'?' and '#' are not allowed (no query or fragment: credentials and options go "
                "in the AWS_* environment or S3Settings)")
    if key:
        for segment in key.split("/"):
            problem = segment_problem(segment)
            if problem:
                return problem
    return None


def _normal_key(scheme: str, path: str) -> str:
    """File paths: repeated and outer ``/`` dropped. S3 keys: trailing ``/`` dropped."""
    if scheme == "file":
        return "/".join(p for p in path.split("/") if p)
    return path.rstrip("/")


@dataclass(frozen=True)
class Uri:
    """A validated location. ``bucket`` is ``""`` for files; ``key`` has no leading or trailing
    ``/`` (for files: the absolute path without its leading ``/``; ``""`` is the root)."""

    scheme: str
    bucket: str
    key: str

    def __post_init__(self) -> None:
        problem = _problem(self.scheme, self.bucket, self.key)
        if problem:
            raise _invalid(f"{self.scheme}://{self.bucket}/{self.key}", problem)

    @classmethod
    def parse(cls, value: object, *, paths: bool = False) -> Uri:
        """Parse and validate ``value`` (a ``Uri`` is returned as is). ``paths=True`` also
        accepts plain local paths; relative ones are taken from the current directory."""
        if isinstance(value, Uri):
            return value
        if not isinstance(value, str) or not value:
            got = "an empty string" if value == "" else type(value).__name__
            raise InputError(f"a location must be a non-empty URI string, got {got}; {_USE}",
                             code="URI_INVALID")
        head, sep, rest = value.partition("://")
        if not sep:
            if not paths or re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", value):
                raise _invalid(value, _USE)
            return cls._from_posix(value, value)
        scheme = _SCHEMES.get(head.lower())
        if scheme is None:
            raise _invalid(value, f"unsupported scheme; {_USE}")
        if "?" in rest or "#" in rest:
            raise _invalid(value, "a query or fragment is not allowed (credentials and options "
                           "go in the AWS_* environment or S3Settings)")
        authority, slash, path = rest.partition("/")
        if "@" in authority:
            raise _invalid(value, "user-info (credentials) is not allowed in a URI; use the "
                           "AWS_* environment or S3Settings")
        if scheme == "file":
            if authority not in ("", "localhost") or not slash:
                raise _invalid(value, "file URIs must be file:///absolute/path")
            return cls._from_posix("/" + path, value)
        key = _normal_key(scheme, path)
        problem = _problem(scheme, authority, key)
        if problem:
            raise _invalid(value, problem)
        return cls(scheme, authority, key)

    @classmethod
    def _from_posix(cls, path: str, text: str) -> Uri:
        for part in path.split("/"):
            problem = segment_problem(part) if part else None
            if problem:
                raise _invalid(text, problem)
        if not path.startswith("/"):
            path = f"{os.getcwd()}/{path}"
        key = _normal_key("file", path)
        problem = _problem("file", "", key)
        if problem:
            raise _invalid(text, problem)
        return cls("file", "", key)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Uri:
        """The ``file`` URI of a local path (relative: from the current directory)."""
        return cls.parse(os.fspath(path), paths=True)

    @classmethod
    def from_arrow_path(cls, scheme: str, path: str) -> Uri:
        """The inverse of :attr:`arrow_path` (e.g. a file a Spark task wrote)."""
        return cls.parse(("file://" if scheme == "file" else f"{scheme}://") + path)

    @property
    def uri(self) -> str:
        """The normal form, e.g. ``s3://bucket/a/b`` or ``file:///tmp/x``."""
        if self.scheme == "file":
            return f"file:///{self.key}"
        return f"s3://{self.bucket}/{self.key}" if self.key else f"s3://{self.bucket}"

    def __str__(self) -> str:
        return self.uri

    @property
    def arrow_path(self) -> str:
        """The path as pyarrow's filesystems spell it (``/tmp/x``, ``bucket/a/b``)."""
        if self.scheme == "file":
            return f"/{self.key}"
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    @property
    def spark_path(self) -> str:
        """The path as Spark's (Hadoop's) readers spell it: ``s3://`` becomes ``s3a://``."""
        return self.uri if self.scheme == "file" else "s3a" + self.uri[2:]

    @property
    def name(self) -> str:
        """The last segment (``""`` for a root)."""
        return self.key.rpartition("/")[2]

    @property
    def parent(self) -> Uri | None:
        """The location one segment up; ``None`` for a bucket or the file-system root."""
        if not self.key:
            return None
        return Uri(self.scheme, self.bucket, self.key.rpartition("/")[0])

    def child(self, relative: str) -> Uri:
        """A location below this one; ``relative`` (``a/b``) is validated like a parse."""
        if not isinstance(relative, str):
            raise InputError(f"a child path must be a string, got {type(relative).__name__}",
                             code="URI_INVALID")
        if not relative:
            return self
        shown = f"{self.uri}/{relative}"
        if relative.startswith("/"):
            raise _invalid(shown, "a child path must be relative")
        key = _normal_key(self.scheme, f"{self.key}/{relative}" if self.key else relative)
        problem = _problem(self.scheme, self.bucket, key)
        if problem:
            raise _invalid(shown, problem)
        return Uri(self.scheme, self.bucket, key)
