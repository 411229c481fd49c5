"""The tail of a local service's log file, for the errors that report a service which exited
or never came up (Airflow services, the Spark Connect server, the standalone cluster).
Standard library only: the start-up modules import it before anything else is set up."""

from __future__ import annotations

import os
from pathlib import Path

TAIL_LINES = 40
_LINE_BYTES = 1024   # bytes read per wanted line: logs grow large, the tail is what matters


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``path``, read from its end (a line cut by the read is
    dropped); ``"(no log: …)"`` when the file cannot be read."""
    try:
        with open(path, "rb") as f:
            start = max(0, f.seek(0, os.SEEK_END) - _LINE_BYTES * lines)
            f.seek(start)
            text = f.read().decode(errors="replace").splitlines()
    except OSError as exc:
        return f"(no log: {exc})"
    return "\n".join(text[1 if start else 0:][-lines:])
