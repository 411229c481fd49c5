"""The benchmark scripts run from a clean environment, as ``docs/performance.md`` tells a
reader to run them (``.venv/bin/python benchmarks/<script>.py``, no ``PYTHONPATH``), and print
their ratio lines. Three of them once failed only that way (their pipelines' functions live in
sibling modules the Python workers could not import), unnoticed until someone re-measured.

Tiny inputs; nothing here times anything (speed is never asserted: the scripts are the record).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
TINY = ["--events", "20000", "--keys", "400"]


def _run(script: str, *args: str, timeout_s: int = 600) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s,
                          check=False)
    assert done.returncode == 0, f"{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


def test_pane_stages_prints_every_stage_and_the_ratio(tmp_path: Path) -> None:
    out = _run("pane_stages.py", "--case", "python", "--repeat", "1", "--warmup", "0", *TINY,
               "--data", str(tmp_path / "clicks"))
    assert re.search(r"hand [\d.]+ s  run [\d.]+ s  tagged [\d.]+ s  late [\d.]+ s  "
                     r"rejects [\d.]+ s  total [\d.]+ s  ratio [\d.]+x hand SQL", out), out


def test_the_general_and_pane_paths_benchmark_prints_a_ratio_per_case(tmp_path: Path) -> None:
    out = _run("spark_general_path.py", "--cases", "native,python,python_panes", "--repeat", "1",
               "--warmup", "1",
               *TINY, "--data", str(tmp_path / "clicks"))
    for label in ("general path, ProcessWindowFunction", "pane path, the same "
                  "ProcessWindowFunction"):
        assert re.search(rf"^\s*{label}.* [\d,]+ events/s +[\d.]+x hand SQL$", out,
                         re.MULTILINE), out


def test_the_native_path_benchmark_prints_its_ratio(tmp_path: Path) -> None:
    out = _run("spark_native_path.py", "--cases", "tumbling", "--repeat", "1", "--warmup", "0",
               *TINY, "--data", str(tmp_path / "clicks"))
    assert re.search(r"tumbling 5 minutes .*\(read [\d.]+ s, planning [\d.]+ s; .*ratio\s+[\d.]+x",
                     out), out


def test_the_walker_replay_captures_and_replays(tmp_path: Path) -> None:
    capture = tmp_path / "walker"
    _run("walker_replay.py", "capture", "--case", "python", *TINY, "--data",
         str(tmp_path / "clicks"), "--out", str(capture))
    out = _run("walker_replay.py", "time", "--case", "python", "--repeat", "1", "--out",
               str(capture))
    assert re.search(r"^\d+ output rows in [\d.]+ s \([\d.]+ s CPU\)$", out, re.MULTILINE), out
    assert int(out.split()[0]) > 0
    out = _run("walker_replay.py", "sample", "--case", "python", "--interval", "0.2", "--out",
               str(capture))
    samples = int(re.search(r"^(\d+) samples over [\d.]+ s CPU", out, re.MULTILINE).group(1))
    shares = {m.group(2): float(m.group(1))
              for m in re.finditer(r"^ +([\d.]+) %  (.+)$", out, re.MULTILINE)}
    assert samples > 0 and 99.0 <= sum(shares.values()) <= 101.0, out     # fewer than --top
    # each sample is counted for windowlib's own code (or the pipeline's), found on the stack
    ours = {p.name for p in (REPO / "windowlib").rglob("*.py")} | {"spark_general_path.py"}
    files = {name.rsplit(":", 1)[0] for name in shares}
    assert files & ours, out
    assert all(f in ours or f.startswith("<windowlib ") or f == "(outside windowlib)"
               for f in files), out


def test_the_planning_costs_benchmark_counts_operations_rules_and_py4j_calls(
        tmp_path: Path) -> None:
    out = _run("planning_costs.py", "--events", "4000", "--keys", "100", "--hours", "3",
               "--warmup", "0", "--warm-hours", "1", "--top", "3",
               "--data", str(tmp_path / "clicks"))
    line = (r"^  {} +[\d.]+ s; py4j +(\d+) calls, +[\d.]+ s; DataFrame operations +(\d+), "
            r"+[\d.]+ s{}; rules +[\d.]+ s")
    hand = re.search(line.format("hand SQL", ""), out, re.MULTILINE)
    ours = re.search(line.format("native path planning", ""), out, re.MULTILINE)
    hourly = re.search(line.format(r"hourly run \S+", r" \(\+ its job [\d.]+ s\)"), out,
                       re.MULTILINE)
    assert hand and ours and hourly, out
    # the instruments saw the work: the hand-written frame is one aggregation, the native
    # plan many operations with their py4j calls, attributed to windowlib's own callers
    assert int(hand.group(2)) == 1
    assert int(ours.group(2)) > 1 and int(ours.group(1)) > int(hand.group(1))
    assert int(hourly.group(2)) > 1
    # then each one-shot frame's optimisation and physical planning, hand SQL's first
    planned = list(re.finditer(r"^    then, before a write's first stage: optimised in "
                               r"[\d.]+ ms, planned physically in [\d.]+ ms \(rules ([\d.]+) "
                               r"ms\)$", out, re.MULTILINE))
    assert len(planned) == 2, out
    assert hand.end() < planned[0].start() < ours.start() < planned[1].start(), out
    assert all(float(m.group(1)) > 0 for m in planned), out     # the rules were seen
    assert re.search(r"^ +[\d.]+ ms / +\d+  runs/routing\.py:\d+ write_routed collect$", out,
                     re.MULTILINE), out
    assert re.search(r"^    phases \(RunSummary\): tables [\d.]+, plan", out, re.MULTILINE), out
