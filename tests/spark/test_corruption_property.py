"""Randomized storage damage (hypothesis): one committed object of a checkpoint is truncated,
has a range zeroed, a byte flipped, is deleted, or is replaced by another version's object of
the same kind (a commit record by the other commit record, a state or output file by the other
run's, a Delta log entry by another entry; any other object where it has no counterpart) — and
then every reader and the next run either give exactly the results of the undamaged checkpoint,
or raise ``CHECKPOINT_CORRUPT``. A silent divergence fails the test.

``WINDOWLIB_CORRUPTION_TRIALS`` sets the number of trials (CI: 12; the figures in
``docs/operations.md`` come from a longer local run, printed by this test).
"""

from __future__ import annotations

import collections
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jobs.registry import get
from jobs.synthetic import DATA_PATH, write_synthetic
from windowlib.engines.spark.errors import windowlib_error
from windowlib.runs.operations import run_job
from windowlib.runs.outputs import read_firings, read_late, read_rejects

pytestmark = [pytest.mark.spark, pytest.mark.slow]
TRIALS = int(os.environ.get("WINDOWLIB_CORRUPTION_TRIALS", "12"))
H0, H1 = "2024-03-01T00", "2024-03-01T01"
MUTATIONS = ("truncate", "zero", "flip", "delete", "replace")
OUTCOMES: dict[str, int] = {"trials": 0, "same": 0, "corrupt": 0}
BY_MUTATION: collections.Counter = collections.Counter()   # (mutation, "corrupt"/"same")


def readers(spark, output: str) -> tuple:
    return tuple(sorted(tuple(r[c] for c in frame.columns if c != "run_id") for r in
                        frame.collect())
                 for frame in (read_firings(output, spark=spark),
                               read_late(output, spark=spark),
                               read_rejects(output, spark=spark)))


def next_run(spark, root: str) -> tuple:
    s = run_job(get("clickstream_demo"), root, spark=spark, validate=False)
    return (str(s.status), s.inputs, s.processed, s.late, s.rejects, s.firings,
            readers(spark, get("clickstream_demo").locations(root)[1]))


@pytest.fixture(scope="module")
def baseline(spark, tmp_path_factory):
    """A lake with two committed runs and a third hour still to consume; what its readers and
    its next run give undamaged."""
    base = tmp_path_factory.mktemp("corruption")
    lake = base / "lake"
    root = lake.as_uri()
    job = get("clickstream_demo")
    write_synthetic(lake / DATA_PATH, hours=3, events_per_hour=40, keys=4)
    for hour in (H0, H1):
        run_job(job, root, partitions=(hour, hour), spark=spark, validate=False)
    checkpoint, output = job.locations(root)
    store = Path(checkpoint[len("file://"):]) / "clickstream_demo"
    objects = sorted(str(p.relative_to(lake)) for p in store.rglob("*") if p.is_file())
    expected_read = readers(spark, output)
    pristine = base / "pristine"        # the lake's locations are absolute: trials restore
    shutil.copytree(lake, pristine)     # the lake in place from this copy
    expected_next = next_run(spark, root)
    return pristine, lake, objects, expected_read, expected_next


def object_kind(key: str) -> str:
    """``key`` without what tells versions apart (version numbers, run tokens, file names)."""
    key = re.sub(r"v=\d+-[0-9a-f]+", "v=*", key)
    key = re.sub(r"/(part-[^/]+|_manifest/[^/]+)$", "/*", key)
    return re.sub(r"/\d+\.json$", "/*.json", key)


def counterpart(target: str, objects: list[str], other: int) -> str:
    """The object that replaces ``target``: another version's object of the same kind when the
    checkpoint has one, else any other object."""
    same = [o for o in objects if o != target and object_kind(o) == object_kind(target)]
    pool = same or [o for o in objects if o != target]
    return pool[other % len(pool)]


def damage(path: Path, mutation: str, where: float, other: Path) -> None:
    data = bytearray(path.read_bytes())
    at = int(where * max(len(data) - 1, 0))
    if mutation == "truncate":
        path.write_bytes(bytes(data[:at]))
    elif mutation == "zero":
        data[at:at + 16] = bytes(len(data[at:at + 16]))
        path.write_bytes(bytes(data))
    elif mutation == "flip":
        if data:
            data[at] ^= 0x5A
        path.write_bytes(bytes(data))
    elif mutation == "delete":
        path.unlink()
    else:
        path.write_bytes(other.read_bytes())


def outcome(call) -> tuple[str, object]:
    try:
        return "value", call()
    except Exception as exc:      # which error it is, is the point
        err = windowlib_error(exc)
        if err is not None and err.code == "CHECKPOINT_CORRUPT":
            return "corrupt", None
        raise AssertionError(f"neither the undamaged result nor CHECKPOINT_CORRUPT: "
                             f"{type(exc).__name__}: {exc}"[:3000]) from exc


@settings(max_examples=TRIALS, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pick=st.integers(0, 10_000), mutation=st.sampled_from(MUTATIONS),
       where=st.floats(0, 1), other=st.integers(0, 10_000))
# always: the latest commit record replaced by the earlier one (objects are sorted:
# objects[2] is commits/00000002.json) — a well-formed record that would roll back silently
@example(pick=2, mutation="replace", where=0.0, other=0)
def test_damage_is_refused_or_harmless_never_silent(spark, baseline, pick, mutation, where,
                                                    other):
    pristine, lake, objects, expected_read, expected_next = baseline
    shutil.rmtree(lake)
    shutil.copytree(pristine, lake)
    target = objects[pick % len(objects)]
    replacement = counterpart(target, objects, other)
    damage(lake / target, mutation, where, lake / replacement)
    root = lake.as_uri()
    kind, got = outcome(lambda: readers(spark, get("clickstream_demo").locations(root)[1]))
    assert kind == "corrupt" or got == expected_read, (target, mutation)
    kind_next, got_next = outcome(lambda: next_run(spark, root))
    assert kind_next == "corrupt" or got_next == expected_next, (target, mutation)
    verdict = "corrupt" if "corrupt" in (kind, kind_next) else "same"
    OUTCOMES["trials"] += 1
    OUTCOMES[verdict] += 1
    BY_MUTATION[mutation, verdict] += 1


def test_report_the_trials():
    """Prints the figures (docs/operations.md quotes a long local run)."""
    print(f"corruption trials: {OUTCOMES['trials']} — {OUTCOMES['corrupt']} refused with "
          f"CHECKPOINT_CORRUPT, {OUTCOMES['same']} harmless, 0 silent divergences; "
          + ", ".join(f"{m} {BY_MUTATION[m, 'corrupt']}/{BY_MUTATION[m, 'same']}"
                      for m in MUTATIONS) + " (refused/harmless)")
    if OUTCOMES["trials"]:       # run with the property test (one module, one worker)
        assert OUTCOMES["trials"] <= TRIALS + 1           # + the explicit example
        assert OUTCOMES["trials"] == OUTCOMES["corrupt"] + OUTCOMES["same"]
        assert OUTCOMES["corrupt"] > 0, "no damage reached a check: the trials test nothing"
