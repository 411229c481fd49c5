"""The checkpoint layout (format version 1) and the commit-record codec.

Layout of one pipeline under the checkpoint root (``{root}/{pipeline}/``)::

    commits/00000001.json          commit records of the published line (immutable, created
    commits/00000002.json          exclusively; the highest version is the current checkpoint)
    _latest.json                   a hint (lower bound) of the highest version; never trusted alone
    v=00000002-<token>/            everything one run staged: data prefixes handed out by
        _staging.json                Staging.uri(name) (state/, firings/, late/, rejects/ ...),
        state/ firings/ ...          written by Spark tasks, plus small metadata (manifest files)
        _manifest/delta.jsonl.gz
    generations/g=000002/          a rebuild in progress: the same layout (commits/, v=.../),
                                   invisible to readers until ``commit_generation`` publishes it
                                   with one record in the main ``commits/`` line
    tables/firings/                the Delta table of one output (``TABLE_OUTPUTS``): its log
        _delta_log/                  (``windowlib.state.tables``) and, below the table root, the
        v=00000002-<token>/          output files each run staged (``Staging.uri("firings")``),
        generations/g=000002/v=.../  rebuild lines' too: Delta names files relative to its root

A run's files therefore live under :func:`run_prefixes` of its staging key (the staging prefix
itself and one per table output); a line's under :func:`line_prefixes`.

Invariants: a staged prefix is visible only once a commit record naming it exists; records are
never rewritten; every record carries ``format_version``, the definition fingerprint and a
SHA-256 ``checksum`` of its canonical JSON body, so truncation or corruption is detected
(``CHECKPOINT_CORRUPT``) rather than misread. Records form a chain: each names its
predecessor's checksum (``parent_checksum``; records written before chains existed have none),
and versions of a line are contiguous from 1, so a deleted or swapped record is detected too.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from windowlib.core.errors import StateError, rebuild_hint
from windowlib.core.outputs import OUTPUTS

__all__ = [
    "FORMAT_VERSION", "TABLE_OUTPUTS", "commit_key", "decode_record", "encode_record",
    "generation_prefix", "line_prefixes", "parse_commit_key", "record_checksum", "run_prefixes",
    "staging_prefix", "table_prefix",
]

FORMAT_VERSION = 1
SUPPORTED_FORMAT_VERSIONS = frozenset({1})
COMMITS = "commits/"
LATEST_HINT = "_latest.json"
GENERATIONS = "generations/"
STAGING_MARKER = "_staging.json"
TABLES = "tables/"
TABLE_OUTPUTS = OUTPUTS      # staged below their table's root (see the module docstring)

_COMMIT_RE = re.compile(r"commits/(\d{8})\.json")
_STAGING_RE = re.compile(r"v=(\d{8})-([0-9a-f]{12,32})")
_REQUIRED = ("format_version", "pipeline", "version", "generation", "fingerprint", "run_id",
             "staging", "prefixes", "created_at")


def commit_key(version: int) -> str:
    return f"{COMMITS}{version:08d}.json"


def parse_commit_key(key: str) -> int | None:
    m = _COMMIT_RE.fullmatch(key)
    return int(m.group(1)) if m else None


def staging_prefix(version: int, token: str) -> str:
    return f"v={version:08d}-{token}"


def parse_staging_prefix(name: str) -> tuple[int, str] | None:
    m = _STAGING_RE.fullmatch(name)
    return (int(m.group(1)), m.group(2)) if m else None


def generation_prefix(generation: int) -> str:
    return f"{GENERATIONS}g={generation:06d}"


def table_prefix(name: str) -> str:
    """The root of output ``name``'s table, relative to the pipeline root (no slash)."""
    return f"{TABLES}{name}"


def run_prefixes(staging_key: str) -> list[str]:
    """Every prefix (with its slash) that holds files of the run staged at ``staging_key``."""
    return [f"{staging_key}/", *(f"{table_prefix(n)}/{staging_key}/" for n in TABLE_OUTPUTS)]


def line_prefixes(line: str) -> list[str]:
    """Every prefix (with its slash) that holds files of the rebuild line ``line``."""
    return [f"{line}/", *(f"{table_prefix(n)}/{line}/" for n in TABLE_OUTPUTS)]


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode()


def encode_record(body: dict[str, Any]) -> bytes:
    """JSON bytes of a commit record with its checksum added (``body`` is not mutated)."""
    if "checksum" in body:
        raise StateError("commit record bodies must not carry 'checksum'", code="STATE_INVALID")
    try:
        digest = hashlib.sha256(_canonical(body)).hexdigest()
    except (TypeError, ValueError) as exc:
        raise StateError(f"commit record is not JSON-serialisable: {exc}",
                         code="STATE_INVALID") from None
    full = dict(body, checksum=f"sha256:{digest}")
    return json.dumps(full, sort_keys=True, indent=1, allow_nan=False).encode() + b"\n"


def decode_record(data: bytes, where: str, pipeline: str | None = None) -> dict[str, Any]:
    """Parse and verify a record of ``pipeline``: CHECKPOINT_CORRUPT or
    CHECKPOINT_FORMAT_UNSUPPORTED on error."""
    hint = ("the checkpoint is left untouched; restore the object from a backup, or "
            + rebuild_hint(pipeline))
    try:
        full = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise StateError(f"commit record {where} is truncated or not valid JSON; {hint}",
                         code="CHECKPOINT_CORRUPT") from None
    if not isinstance(full, dict):
        raise StateError(f"commit record {where} is not a JSON object; {hint}",
                         code="CHECKPOINT_CORRUPT")
    fv = full.get("format_version")
    if isinstance(fv, int) and fv not in SUPPORTED_FORMAT_VERSIONS:
        raise StateError(f"commit record {where} has format_version {fv}, this windowlib "
                         f"reads {sorted(SUPPORTED_FORMAT_VERSIONS)}: a newer windowlib wrote "
                         "it; upgrade windowlib", code="CHECKPOINT_FORMAT_UNSUPPORTED")
    checksum = full.pop("checksum", None)
    if not isinstance(checksum, str) or not checksum.startswith("sha256:"):
        raise StateError(f"commit record {where} has no checksum; {hint}",
                         code="CHECKPOINT_CORRUPT")
    try:
        actual = hashlib.sha256(_canonical(full)).hexdigest()
    except (TypeError, ValueError):
        actual = ""
    if actual != checksum[len("sha256:"):]:
        raise StateError(f"commit record {where} fails its checksum (modified or damaged); "
                         f"{hint}", code="CHECKPOINT_CORRUPT")
    missing = [k for k in _REQUIRED if k not in full]
    if missing:
        raise StateError(f"commit record {where} lacks {missing}; {hint}",
                         code="CHECKPOINT_CORRUPT")
    return full


def record_checksum(data: bytes) -> str:
    """The ``checksum`` of a record already verified by ``decode_record`` (what the next
    record's ``parent_checksum`` names)."""
    return str(json.loads(data.decode("utf-8"))["checksum"])
