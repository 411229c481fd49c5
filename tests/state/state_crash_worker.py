"""A minimal incremental run used by the crash tests (run as a subprocess).

usage: state_crash_worker.py ROOT_URI RUN_ID FILE_SPEC...   (FILE_SPEC = path:size)

State = running total of consumed sizes; output = one "firing" object per run. Fault points as
the runs layer places them; S3 settings come from the AWS_* environment.
"""

from __future__ import annotations

import json
import sys

from windowlib.state.checkpoint import CheckpointStore, RunRecord
from windowlib.state.faults import CrashPoint, fault_point
from windowlib.state.manifest import FileEntry
from windowlib.state.stores import open_store


def main(root: str, run_id: str, specs: list[str]) -> None:
    cs = CheckpointStore(root, "crashy", "fp-crash")
    if cs.find_run(run_id) is not None:
        print("noop: already committed")
        return
    files = [FileEntry(p, int(s), mtime_ms=1) for p, s in (x.rsplit(":", 1) for x in specs)]
    parent = cs.latest()
    new = cs.manifest(parent).consumed(files)
    if not new:
        print("noop: nothing new")
        return
    total = 0
    if parent is not None:
        total = json.loads(open_store(parent.uri("state")).read_bytes("total.json"))["total"]
    total += sum(f.size for f in new)
    staging = cs.begin(run_id, parent=parent)
    open_store(staging.uri("state")).write_bytes("total.json", json.dumps({"total": total})
                                                 .encode())
    open_store(staging.uri("firings")).write_bytes(
        "part-0.json", json.dumps(sorted(f.path for f in new)).encode())
    fault_point(CrashPoint.AFTER_STAGE)
    commit = cs.commit(staging, RunRecord(watermark_ms=total, consumed=new))
    print(f"committed {commit.version}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
