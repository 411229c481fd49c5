"""Fault injection for crash tests: ``fault_point(point)`` kills this process with SIGKILL when
the environment variable ``WINDOWLIB_FAULT`` names the point (comma-separated names allowed).

Invariant: without ``WINDOWLIB_FAULT`` set, a fault point does nothing. The points of the commit
protocol and the runs layer, in the order a run passes them, are the members of ``CrashPoint``.
"""

from __future__ import annotations

import os
import signal
import sys
from enum import StrEnum

__all__ = ["FAULT_POINTS", "CrashPoint", "fault_point"]


class CrashPoint(StrEnum):
    AFTER_BEGIN = "after_begin"                    # the staging prefix exists
    AFTER_STAGE = "after_stage"                    # outputs and pane state are staged
    AFTER_STAGE_MANIFEST = "after_stage_manifest"  # the manifest delta is staged
    BEFORE_COMMIT = "before_commit"                # about to write the commit record
    AFTER_COMMIT = "after_commit"                  # published, the latest hint not yet moved


FAULT_POINTS = tuple(p.value for p in CrashPoint)


def fault_point(point: CrashPoint) -> None:
    """SIGKILL the current process if ``WINDOWLIB_FAULT`` names this point."""
    wanted = os.environ.get("WINDOWLIB_FAULT")
    if wanted and point.value in {w.strip() for w in wanted.split(",")}:
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
