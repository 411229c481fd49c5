"""Fault injection for crash tests: ``fault_point(name)`` kills this process with SIGKILL when
the environment variable ``WINDOWLIB_FAULT`` equals ``name`` (comma-separated names allowed).

Invariant: without ``WINDOWLIB_FAULT`` set, a fault point does nothing. Names used by the commit
protocol and the runs layer, in order: ``after_begin``, ``after_stage_state``,
``after_stage_outputs``, ``after_stage_manifest``, ``before_commit``, ``after_commit``.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["FAULT_POINTS", "fault_point"]

FAULT_POINTS = ("after_begin", "after_stage_state", "after_stage_outputs",
                "after_stage_manifest", "before_commit", "after_commit")


def fault_point(name: str) -> None:
    """SIGKILL the current process if ``WINDOWLIB_FAULT`` names this point."""
    wanted = os.environ.get("WINDOWLIB_FAULT")
    if wanted and name in {w.strip() for w in wanted.split(",")}:
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
