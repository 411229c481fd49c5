"""One key holding a million elements in one window (issue 16's memory criterion).

A ``ProcessWindowFunction`` buffers every element of its pane: the worst case for memory per
key. The run must either complete in the session's default memory (no memory setting: local
mode's 1 GiB JVM; the Python worker streams the key's rows in Arrow batches and holds only its
live window state), or stop with ``KEY_STATE_LIMIT`` naming the key as soon as the buffered
state passes ``max_key_state`` (default 5,000,000 elements), never with an out-of-memory trace.
"""

from __future__ import annotations

import sys

import pytest
from spark_session import ship_by_value

import windowlib as wl
from windowlib.engines.spark import run_dataframe

ship_by_value(sys.modules[__name__])
pytestmark = [pytest.mark.spark, pytest.mark.slow]

N = 1_000_000


class Span(wl.ProcessWindowFunction):
    result_schema = "n long, total long, first_ts long, last_ts long"

    def process(self, key, context, elements):
        yield {"n": len(elements), "total": sum(e["value"] for e in elements),
               "first_ts": elements[0]["ts"], "last_ts": elements[-1]["ts"]}


def hot_key(spark):
    """``N`` elements of the key ``hot`` in one tumbling window, in four bundles."""
    df = spark.range(N).selectExpr("'hot' AS key", "id AS ts", "id * 3 AS value",
                                   f"CAST(id DIV {N // 4} AS INT) AS arrival")
    p = (wl.Pipeline("hot", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.days(1))).process(Span()))
    return p, df


@pytest.mark.parametrize("path", ["general", "panes"])
def test_a_key_with_a_million_elements_in_one_window_fires_in_default_memory(spark, path):
    assert spark.sparkContext.getConf().get("spark.driver.memory", None) is None  # default
    p, df = hot_key(spark)
    result = run_dataframe(p, df, "arrival", finalize=True, order_by="ts", path=path)
    assert result.path == path
    rows = [r.asDict() for r in result.firings.select(
        "key", "timing", "pane_index", "n", "total", "first_ts", "last_ts").collect()]
    result.unpersist()
    assert rows == [{"key": "hot", "timing": "ON_TIME", "pane_index": 0, "n": N,
                     "total": 3 * N * (N - 1) // 2, "first_ts": 0, "last_ts": N - 1}]


def test_the_same_key_above_max_key_state_stops_with_key_state_limit(spark):
    p, df = hot_key(spark)
    with pytest.raises(wl.ExecutionError) as info:
        run_dataframe(p, df, "arrival", finalize=True, order_by="ts", path="general",
                      max_key_state=N // 5)
    assert info.value.code == "KEY_STATE_LIMIT"
    assert "'hot'" in str(info.value) and f"max_key_state={N // 5}" in str(info.value)


CAPPED = '''
import json, sys
import windowlib as wl
from windowlib.engines.spark import run_dataframe
from windowlib.engines.spark.session import get_or_create_session

class Span(wl.ProcessWindowFunction):
    result_schema = "n long"

    def process(self, key, context, elements):
        yield {"n": len(elements)}

spark = get_or_create_session(app_name="capped",
                              conf={"spark.executor.pyspark.memory": sys.argv[1]})
df = spark.range(int(sys.argv[2])).selectExpr("'hot' AS key", "id AS ts", "id AS value",
                                              "CAST(id DIV 250000 AS INT) AS arrival")
p = (wl.Pipeline("hot", timestamp="ts").key_by("key")
     .window(wl.TumblingEventTimeWindows.of(wl.Time.days(1))).process(Span()))
try:
    run_dataframe(p, df, "arrival", finalize=True, order_by="ts", path="general")
    print(json.dumps(["none", ""]))
except Exception as exc:
    print(json.dumps([getattr(exc, "code", type(exc).__name__), str(exc)]))
'''


def test_a_python_memory_cap_below_the_keys_state_is_a_coded_error(tmp_path):
    """``spark.executor.pyspark.memory`` (what YARN and Kubernetes deployments set: without
    it Python shares the executor's memory overhead) caps each worker's address space; the
    hot key outgrows 600 MiB and the run fails coded, naming the key, not with Python's
    ``MemoryError`` inside a ``PythonException``. A session of its own: the cap is set when
    the application starts, and workers keep it for life."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "capped.py"
    script.write_text(CAPPED)
    repo = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, str(script), "600m", str(N)], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": repo}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    code, message = json.loads(proc.stdout.strip().splitlines()[-1])
    assert code == "WORKER_MEMORY_EXCEEDED", message[:3000]
    # the key named where the memory ran out: by the walker buffering it (``key ('hot',)``)
    # or inside the function's call at the firing (``for key 'hot'``), by the allocation
    # that crossed the cap
    assert ("key ('hot',)" in message or "for key 'hot'" in message), message
    assert "spark.executor.pyspark.memory" in message
