"""Helper process for ``test_incremental_concurrency.py``: the real ``windowlib run`` CLI, with
the commit protocol's ``before_commit`` point turned into a rendezvous.

``python incr_race_worker.py BARRIER_DIR NAME -- <windowlib run arguments>``: when the run
reaches ``before_commit`` (everything staged, the commit record not yet written) it creates
``BARRIER_DIR/ready-NAME`` and waits until ``BARRIER_DIR/go`` exists, so that two processes
started together really hold staged runs at the same time and then race for the commit.
Every other fault point behaves as usual. Exit code and output are the CLI's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> int:
    barrier, name = Path(sys.argv[1]), sys.argv[2]
    args = sys.argv[sys.argv.index("--") + 1:]

    import windowlib.state.checkpoint as checkpoint
    from windowlib.cli import main as cli_main

    real = checkpoint.fault_point

    def rendezvous(point: str) -> None:
        if point == "before_commit":
            (barrier / f"ready-{name}").touch()
            deadline = time.monotonic() + 900
            while not (barrier / "go").exists():
                if time.monotonic() > deadline:
                    raise SystemExit(f"{name}: no go signal")
                time.sleep(0.05)
        real(point)

    checkpoint.fault_point = rendezvous
    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
