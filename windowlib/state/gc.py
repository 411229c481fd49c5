"""Garbage collection of checkpoints: uncommitted leftovers and snapshots beyond retention.

Rules (never touches a commit record of the main line, never touches what a reader can see):

1. **Leftover staging prefixes** (``v=<version>-<token>/`` not named by any commit record of
   their line) are deleted when their version is already taken by a commit (that run can never
   publish) or when their newest object is older than the grace period (a crashed run; a live
   concurrent run keeps writing and stays younger than the grace period).
2. **Retention**: of the current generation's commits, the newest ``retain_versions`` keep
   everything; older ones lose their *ephemeral* prefixes (state snapshots). Outputs (firings,
   late, rejects) and manifest files of the current generation are kept: readers need them.
3. **Superseded generations**: commits of an older generation that are beyond the retention
   window lose all their staged data (readers only see the current generation), and their
   published rebuild lines are removed. Unpublished rebuild lines idle for longer than the
   grace period are removed. (Older versions of the output tables that name those files can
   no longer be read: time travel reaches back as far as retention keeps files.)

A run's files are everything under ``layout.run_prefixes`` of its staging key (outputs are
staged below their table's root); a line's under ``layout.line_prefixes``.

``_gc.json`` per line records up to which version retention already ran, so a GC costs LIST
calls proportional to new versions, not to history.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from windowlib.state import layout as L

if TYPE_CHECKING:
    from windowlib.state.checkpoint import CheckpointStore, Commit

__all__ = ["GcReport", "collect"]

_GC_HINT = "_gc.json"


@dataclass
class GcReport:
    removed_stagings: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    removed_generations: list[int] = field(default_factory=list)
    removed_objects: int = 0


def _line_of(cs: CheckpointStore, line: str, generation: int, fp: str) -> CheckpointStore:
    return cs._for_line(line, generation, fp)


def _leftovers(cs: CheckpointStore, line: str, referenced: set[str], line_latest: int,
               cutoff: datetime, report: GcReport) -> None:
    """Staging prefixes of ``line`` that no commit names, under every prefix of a run
    (``layout.run_prefixes``): judged once per run, by its newest object anywhere."""
    store = cs.pipeline_store
    groups: dict[str, list] = defaultdict(list)
    for base in ("", *(f"{L.table_prefix(n)}/" for n in L.TABLE_OUTPUTS)):
        root = f"{base}{line}/" if line else base
        for info in store.list(f"{root}v="):
            groups[info.key[len(root):].split("/", 1)[0]].append(info)
    for name, objs in sorted(groups.items()):
        parsed = L.parse_staging_prefix(name)
        skey = f"{line}/{name}" if line else name
        if parsed is None or skey in referenced:
            continue
        newest = max(o.last_modified for o in objs)
        if parsed[0] <= line_latest or newest < cutoff:
            store.delete([o.key for o in objs])
            report.removed_stagings.append(skey)
            report.removed_objects += len(objs)


def _retention(cs: CheckpointStore, line: str, commits: list[Commit], keep: int,
               current_gen: int, report: GcReport) -> None:
    """Prune commits of ``line`` (oldest first) beyond the newest ``keep``."""
    store = cs.pipeline_store
    hint_key = f"{line}/{_GC_HINT}" if line else _GC_HINT
    raw = store.read_bytes(hint_key)
    try:
        done = int(json.loads(raw)["pruned_through"]) if raw else 0
    except (ValueError, KeyError, TypeError):
        done = 0
    old = commits[:-keep] if keep else commits
    for c in old:
        if c.version <= done and c.generation == current_gen:
            continue
        if c.generation == current_gen:
            names = [n for n in c.record.get("ephemeral", []) if n in c.record["prefixes"]]
            targets = [c.record["prefixes"][n] + "/" for n in names]
        else:
            targets = L.run_prefixes(str(c.record["staging"]))
        for t in targets:
            n = store.delete_prefix(t)
            if n:
                report.pruned.append(t.rstrip("/"))
                report.removed_objects += n
    current_old = [c.version for c in old if c.generation == current_gen]
    if current_old and max(current_old) > done:
        store.write_bytes(hint_key, json.dumps({"pruned_through": max(current_old)}).encode())


def collect(cs: CheckpointStore, *, grace_seconds: float = 3600.0,
            now: datetime | None = None) -> GcReport:
    """Run the rules above for ``cs``'s pipeline. Raises like ``latest()`` on a damaged head."""
    report = GcReport()
    store = cs.pipeline_store
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=grace_seconds)
    head = cs.latest(check_fingerprint=False)
    main = list(reversed(cs.history()))  # oldest first
    current_gen = head.generation if head else 0
    referenced = {str(c.record["staging"]) for c in main}
    published = {str(c.record["line"]): c for c in main if c.kind == "generation"}

    line_commits: dict[str, list[Commit]] = {}
    for g in cs.generation_numbers():
        line = L.generation_prefix(g)
        fp = published[line].fingerprint if line in published else cs.fingerprint
        commits = list(reversed(_line_of(cs, line, g, fp).history()))
        line_commits[line] = commits
        referenced |= {str(c.record["staging"]) for c in commits}

    _leftovers(cs, "", referenced, head.version if head else 0, cutoff, report)
    keep = cs.retain_versions
    for line, commits in line_commits.items():
        g = int(line.rsplit("=", 1)[1])
        pub = published.get(line)
        if pub is None:
            newest = max((o.last_modified for o in store.list(f"{line}/")), default=None)
            if newest is not None and newest < cutoff:
                report.removed_objects += sum(store.delete_prefix(p)
                                              for p in L.line_prefixes(line))
                report.removed_generations.append(g)
                continue
            _leftovers(cs, line, referenced, commits[-1].version if commits else 0, cutoff,
                       report)
            continue
        superseded = g != current_gen
        beyond = [c.version for c in main[:-keep]] if keep else [c.version for c in main]
        if superseded and pub.version in beyond:
            report.removed_objects += sum(store.delete_prefix(p) for p in L.line_prefixes(line))
            report.removed_generations.append(g)
            continue
        _leftovers(cs, line, referenced, commits[-1].version if commits else 0, cutoff, report)
        # Within a published line only its last commit is the live snapshot.
        _retention(cs, line, commits, 1, g, report)
    _retention(cs, "", main, keep, current_gen, report)
    return report
