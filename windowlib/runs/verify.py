"""``windowlib verify``: check a pipeline's whole checkpoint and its published outputs.

What is checked, and how:

- the commit chain of the current line: every record present, intact (its checksum) and
  linked to the one before it (``CheckpointStore.history``);
- every file readers can read (firings, late, rejects, side outputs of the committed runs)
  and the pane state the next run continues from: present with its recorded size (one
  listing) and its recorded SHA-256 — hashed by Spark tasks, in parallel, never on the driver;
- the input manifest of the latest commit loads;
- every output table (``runs/tables.py``) shows the latest version, with the rows its commit
  records hold: a table that lags (a crash between the record and the table's commit, until
  the next run) or whose Delta log was damaged is reported.

Problems are collected, not raised one at a time, so one call reports every damaged object.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.errors import StateError

__all__ = ["VerifyReport", "verify_checkpoint"]


@dataclass
class VerifyReport:
    """``problems`` holds one line per damaged object (empty: all intact)."""

    pipeline: str
    versions: int = 0
    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "ok": self.ok, "versions": self.versions,
                "files": self.files, "bytes": self.bytes, "problems": list(self.problems)}


def verify_checkpoint(cs: Any, spark: Any, settings: Any = None) -> VerifyReport:
    """Verify the checkpoint store ``cs`` (a ``CheckpointStore``) and what it published."""
    from windowlib.core.outputs import OUTPUTS
    from windowlib.runs.frames import FrameInfo
    from windowlib.runs.protocol import CommitDetails

    report = VerifyReport(cs.pipeline)
    try:
        report.versions = len(cs.history())
        committed = cs.committed()
        head = cs.latest(check_fingerprint=False)
        if head is not None:
            cs.manifest(head)
    except StateError as exc:
        report.problems.append(str(exc))
        return report
    files = []
    for commit in committed:
        frames = CommitDetails.of(commit.extra).frames
        wanted = [*OUTPUTS, *(["state"] if head is not None
                              and commit.version == head.version else [])]
        for name in wanted:
            if name in frames:
                files.extend(FrameInfo.from_dict(frames[name]).files)
    report.files, report.bytes = len(files), sum(f.bytes for f in files)
    report.problems.extend(_hash_files(spark, files, cs.uri, settings))
    if head is not None:
        report.problems.extend(_table_problems(cs, committed, head, settings))
    return report


def _table_problems(cs: Any, committed: list[Any], head: Any, settings: Any) -> list[str]:
    """Problems of the output tables: each shows ``head``'s version and the committed rows."""
    from windowlib.core.outputs import OUTPUTS
    from windowlib.runs.protocol import CommitDetails
    from windowlib.state.tables import OutputTable

    problems = []
    for name in OUTPUTS:
        top = CommitDetails.of(head.extra).frames.get(name)
        if not top or not top.get("schema"):
            continue                 # an output this pipeline never writes: no table
        want = sum(int((CommitDetails.of(c.extra).frames.get(name) or {}).get("rows") or 0)
                   for c in committed)
        table = OutputTable(cs.pipeline_store, name, settings)
        try:
            dt = table.open()
            shown = None if dt is None else table.state(dt).checkpoint_version
            rows = 0 if dt is None else sum(f.rows for f in table.files(dt))
        except StateError as exc:
            problems.append(str(exc))
            continue
        if (shown, rows) != (head.version, want):
            problems.append(f"output table {table.uri} shows checkpoint version {shown} with "
                            f"{rows} rows, the checkpoint is at version {head.version} with "
                            f"{want}: the next run brings the table in step; if it does not, "
                            "its Delta log is damaged")
    return problems


def _hash_files(spark: Any, files: list[Any], root: str, settings: Any) -> list[str]:
    """Problems of ``files``: sizes from one listing of ``root``, checksums in Spark tasks."""
    from windowlib.runs.io_settings import io_parallelism
    from windowlib.state.checksums import check_sizes
    from windowlib.state.stores import open_store
    from windowlib.state.taskfs import task_filesystem
    from windowlib.state.uri import Uri

    if not files:
        return []
    listing = {o.uri: o.size for o in open_store(Uri.parse(root), settings).list(hidden=True)}
    problems = []
    present = []
    for f in files:
        try:
            check_sizes([(f.path, f.bytes)], listing)
            present.append(f)
        except StateError as exc:
            problems.append(str(exc))
    if not present:
        return problems
    items = [(Uri.parse(f.path).arrow_path, f.path, f.bytes, f.sha256) for f in present]
    fs = task_filesystem(spark, Uri.parse(present[0].path), settings)
    n = io_parallelism(spark, len(items))

    def check(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from windowlib.state.checksums import verified_bytes

        filesystem = fs.open()
        for batch in batches:
            out = []
            for i in batch.column(0).to_pylist():
                path, uri, size, sha256 = items[i]
                try:
                    verified_bytes(filesystem, path, uri, size, sha256)
                except StateError as exc:
                    out.append(str(exc))
            yield pa.RecordBatch.from_pylist([{"problem": p} for p in out],
                                             schema=pa.schema([("problem", pa.string())]))

    rows = spark.range(0, len(items), 1, n).mapInArrow(check, "problem string").collect()
    return problems + sorted(r["problem"] for r in rows)   # small: one row per damaged file
