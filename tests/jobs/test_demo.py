"""`make demo` at a reduced scale (one pipeline, two hourly intervals) into a temporary folder:
real flights data, real Airflow ``dag.test()`` runs in the demo's own process (its Airflow home
must be configured before Airflow is imported), real Spark and GX. Asserts on what the demo
published, read back here with ``windowlib.read_firings``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.airflow, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
PIPELINE = "flights_departure_delay"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AIRFLOW") and k not in ("WINDOWLIB_ROOT", "WINDOWLIB_REGISTRY")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "jobs.demo", "--root", str(root), "--pipelines", PIPELINE,
           "--hours", "2"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    log = (root / "demo.log").read_text(errors="replace")[-3000:] \
        if (root / "demo.log").exists() else ""
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + log
    return root, done.stdout, json.loads((root / "demo_summary.json").read_text())


def test_reruns_bring_late_firings_that_continue_the_pane_sequence(spark, demo):
    from pyspark.sql import functions as F

    import windowlib as wl

    _root, stdout, summary = demo
    output = summary["pipelines"][0]["output"]
    firings = wl.read_firings(output)
    reruns = summary["reruns"][PIPELINE]
    assert len(reruns) == 2                       # both reruns consumed corrections
    window = ["origin", "window_start", "window_end"]
    late = firings.filter((F.col("timing") == "LATE") & F.col("run_id").isin(reruns))
    on_time = firings.filter(F.col("timing") == "ON_TIME").select(
        *window, F.col("pane_index").alias("on_time_pane"))
    pairs = late.join(on_time, window).select("pane_index", "on_time_pane").collect()
    assert pairs, "no LATE firing of a window that had fired ON_TIME"
    assert all(r["pane_index"] > r["on_time_pane"] for r in pairs)
    # per window, the pane indices are 0..n-1 without gaps across scheduled runs and reruns
    gaps = (firings.groupBy(*window)
            .agg(F.count("*").alias("n"), F.max("pane_index").alias("top"),
                 F.countDistinct("pane_index").alias("distinct"))
            .filter((F.col("top") != F.col("n") - 1) | (F.col("distinct") != F.col("n"))))
    assert gaps.count() == 0
    assert "LATE firings" in stdout and "pane indices continue" in stdout


def test_summary_numbers_equal_the_committed_outputs(spark, demo):
    from pyspark.sql import functions as F

    import windowlib as wl

    _root, stdout, summary = demo
    numbers = summary["pipelines"][0]
    assert numbers["pipeline"] == PIPELINE and numbers["dag_runs"] == 4   # 2 runs + 2 reruns
    firings = wl.read_firings(numbers["output"])
    counts = {r["timing"]: r["count"] for r in firings.groupBy("timing").count().collect()}
    for timing in ("EARLY", "ON_TIME", "LATE"):
        assert numbers[timing] == counts.get(timing, 0) > 0, timing
    assert numbers["late"] == wl.read_late(numbers["output"]).count()
    assert numbers["rejects"] == wl.read_rejects(numbers["output"]).count()
    assert numbers["commits"] == 4
    assert set(summary["reruns"][PIPELINE]) <= {
        r["run_id"] for r in firings.select("run_id").distinct().collect()}
    assert numbers["validation"] == "passed 4/4"
    # the table printed at the end shows the same numbers
    row = next(line for line in stdout.splitlines() if PIPELINE in line and "passed" in line)
    cells = [c.strip() for c in re.split(r"[│┃|]", row) if c.strip()]
    assert cells[0] == PIPELINE
    assert [int(c) for c in cells[3:6]] == [counts["EARLY"], counts["ON_TIME"], counts["LATE"]]
    assert firings.filter(F.col("run_id").isNull()).count() == 0


def test_report_html_is_self_contained_with_inline_svg_charts(demo):
    _root, stdout, summary = demo
    report = Path(summary["reports"][PIPELINE])
    assert str(report) in stdout
    page = report.read_text()
    assert page.count("<svg") >= 4
    assert not re.search(r"https?://", page)
    docs = Path(summary["data_docs"][PIPELINE])
    assert docs.is_file() and f"{PIPELINE}.firings" in docs.read_text()
