"""Fixed costs of the Airflow DAGs (issue 5): DAG file parse time and per-run overhead.

    .venv/bin/python benchmarks/dag_overhead.py [--parse-only | --runs-only] [--repeat N]

**Parse**: each DAG file of ``dags/`` is imported in a fresh interpreter, after
``import airflow.sdk`` (which every DAG file pays once per DAG-processor process and is
reported apart). Printed per file: the median import time of the file itself and the
project modules it pulled in (the budget of issue 5 is 2 s per file).

**Per run**: the fixed cost of one ``windowlib_clickstream_demo`` run over tiny data (one new
hourly file of 20 events, then a run with nothing new), in three set-ups:

* ``dag.test()`` in one process whose SparkSession is already warm (the best case);
* one fresh process per task (what a LocalExecutor/Celery worker does: every task process
  imports Airflow's SDK and windowlib and starts its own JVM and SparkSession);
* one fresh process per task as a thin Spark Connect client (``SPARK_REMOTE``) of a
  long-lived local Spark Connect server started once (``infra/spark-connect.sh``);
* ``services``: the real Airflow services (``infra/airflow_services.py``: scheduler with its
  LocalExecutor, api-server, dag-processor), tasks as Spark Connect clients, scheduled runs
  over ``--services-runs`` hourly files (default 8) — once with the scheduler preloading the
  tasks' modules (``infra/airflow_settings``, the default) and once without
  (``WINDOWLIB_PRELOAD=0``); per run and per task the times Airflow recorded, and the ratio.
  Medians are printed over runs 2-N and, apart, over the second half of the runs: an hourly
  DAG on a long-lived Connect server runs in that steady state (its session chain and the
  server's JIT are warm), while its second and third runs still warm up. "Between tasks" is
  a run's wall time outside its tasks.

Figures are seconds on this machine (wall clock; for parsing also CPU time, which a busy
shared machine distorts less), printed, never asserted. Everything runs on
127.0.0.1 in a temporary directory that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DAGS = REPO / "dags"
PY = sys.executable

_PARSE_PROBE = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import airflow.sdk
t1, c1 = time.perf_counter(), time.process_time()
before = set(sys.modules)
import importlib
importlib.import_module(sys.argv[1])
t2, c2 = time.perf_counter(), time.process_time()
new = sorted({m.split('.')[0] for m in set(sys.modules) - before})
print(json.dumps({"sdk": t1 - t0, "file": t2 - t1, "sdk_cpu": c1 - c0, "file_cpu": c2 - c1,
                  "new_top_level": new}))
"""

# One task of the pipeline DAG in its own interpreter: the task bodies of the factory, with
# the small JSON a real run passes through XCom read from / written to files.
_TASK_PROBE = """
import json, sys, time
from datetime import datetime, timezone
from types import SimpleNamespace
t0 = time.perf_counter()
import _windowlib_factory as f
task, name, hour, xin, xout = sys.argv[1:6]
payload = json.loads(open(xin).read()) if xin != "-" else None
end = datetime(2024, 3, 1, int(hour), tzinfo=timezone.utc)
if task == "plan":
    ctx = {"dag": SimpleNamespace(dag_id="windowlib_" + name),
           "dag_run": SimpleNamespace(run_id=f"bench__{hour}__{time.time_ns()}", run_after=end),
           "data_interval_start": end.replace(hour=int(hour) - 1), "data_interval_end": end,
           "params": {"root": sys.argv[6]}}
    out = f.do_plan(name, ctx)
elif task == "run":
    out = f.do_run(name, payload)
elif task == "audit":
    out = f.do_audit(name, payload)
elif task == "publish":
    out = f.do_publish(name, payload)
else:
    out = f.do_report(name, payload["root"])
open(xout, "w").write(json.dumps(out, default=str))
"""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"PYSPARK_PYTHON": PY, "PYSPARK_DRIVER_PYTHON": PY,
                "SPARK_LOCAL_IP": "127.0.0.1",
                "PYTHONPATH": os.pathsep.join([str(DAGS), str(REPO)]),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAG_IGNORE_FILE_SYNTAX": "regexp"})
    for name in ("SPARK_REMOTE", "WINDOWLIB_SPARK_CONN_ID", "WINDOWLIB_SPARK_CONNECT_CONN_ID",
                 "WINDOWLIB_REGISTRY"):
        env.pop(name, None)
    env.update(extra)
    return env


def measure_parse(repeat: int, home: Path) -> dict[str, dict]:
    """Median seconds to import each DAG file after ``airflow.sdk`` (fresh interpreter)."""
    out = {}
    for file in sorted(DAGS.glob("windowlib_*.py")):
        runs = []
        for _ in range(repeat):
            done = subprocess.run([PY, "-c", _PARSE_PROBE, file.stem], capture_output=True,
                                  text=True, env=_env(AIRFLOW_HOME=str(home)), cwd=REPO,
                                  check=True)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        out[file.name] = {"sdk_s": statistics.median(r["sdk"] for r in runs),
                          "file_s": statistics.median(r["file"] for r in runs),
                          "sdk_cpu_s": statistics.median(r["sdk_cpu"] for r in runs),
                          "file_cpu_s": statistics.median(r["file_cpu"] for r in runs),
                          "new_top_level": runs[-1]["new_top_level"]}
    return out


def _land_hour(lake: Path, hour: int) -> None:
    """Copy the ``hour``-th hourly partition (20 events) of a small synthetic data set into
    ``lake``'s clickstream folder (files of earlier hours stay untouched)."""
    from jobs.synthetic import DATA_PATH, write_synthetic

    source = lake.parent / "synthetic"
    info = write_synthetic(source, hours=24, events_per_hour=20, late_fraction=0.0,
                           very_late_fraction=0.0, bad_rows=0)
    part = f"arrival_hour={info.partitions[hour - 1]}"
    shutil.copytree(source / part, lake / DATA_PATH / part)


def _fresh_process_run(root: str, hour: int, work: Path, env: dict[str, str]
                       ) -> tuple[float, dict[str, float]]:
    """One DAG run, every task in its own interpreter: (wall seconds, seconds per task)."""
    t = time.perf_counter()
    xin, first, per_task = "-", "-", {}
    for task in ("plan", "run", "audit", "publish", "report"):
        xout = work / f"{task}-{hour}-{time.time_ns()}.json"
        t_task = time.perf_counter()
        subprocess.run([PY, "-c", _TASK_PROBE, task, "clickstream_demo", str(hour), xin,
                        str(xout), root], env=env, cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        per_task[task] = time.perf_counter() - t_task
        if task == "plan":
            if json.loads(xout.read_text()) is None:  # nothing new: the rest is skipped
                break
            xin = first = str(xout)
        elif task in ("run", "audit"):
            xin = str(xout)
        elif task == "publish":
            xin = first
    return time.perf_counter() - t, per_task


def _show(setup: str, little: float, nothing: float, detail: str = "") -> None:
    print(f"  {setup:46s} little new {little:6.1f} s   nothing new {nothing:6.1f} s"
          + (f"\n    {detail}" if detail else ""), flush=True)


def _fresh_setup(label: str, work: Path, env: dict[str, str], lake: Path) -> None:
    _land_hour(lake, 1)
    _fresh_process_run(lake.as_uri(), 1, work, env)            # state exists afterwards
    _land_hour(lake, 2)
    little, tasks = _fresh_process_run(lake.as_uri(), 2, work, env)
    nothing, _ = _fresh_process_run(lake.as_uri(), 2, work, env)
    _show(label, little, nothing,
          "per task: " + ", ".join(f"{k} {v:.1f} s" for k, v in tasks.items()))


def measure_runs(work: Path, setups: list[str], services_order: str = "on,off",
                 services_runs: int = 8) -> None:
    """Print per-run wall seconds: a run with one new tiny file, and one with nothing new."""
    sys.path[:0] = [str(DAGS), str(REPO)]
    home = work / "airflow"
    env = _env(AIRFLOW_HOME=str(home), AIRFLOW__CORE__DAGS_FOLDER=str(DAGS),
               AIRFLOW__CORE__UNIT_TEST_MODE="False")
    os.environ.update({k: env[k] for k in ("AIRFLOW_HOME", "AIRFLOW__CORE__DAGS_FOLDER",
                                           "AIRFLOW__CORE__LOAD_EXAMPLES", "PYSPARK_PYTHON",
                                           "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP",
                                           "AIRFLOW__CORE__UNIT_TEST_MODE")})
    for name in ("SPARK_REMOTE", "WINDOWLIB_SPARK_CONN_ID", "WINDOWLIB_SPARK_CONNECT_CONN_ID"):
        os.environ.pop(name, None)
    subprocess.run([str(Path(PY).parent / "airflow"), "db", "migrate"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    if "dagtest" in setups:   # dag.test() in this process with a warm SparkSession
        from datetime import UTC, datetime

        import windowlib_pipelines

        dag = windowlib_pipelines.windowlib_clickstream_demo
        lake = work / "lake-dagtest"

        def one(hour: int) -> float:
            at = datetime(2024, 3, 1, hour, tzinfo=UTC)
            t = time.perf_counter()
            dr = dag.test(logical_date=at, run_after=at, run_conf={"root": lake.as_uri()})
            if str(dr.state) != "success":
                raise RuntimeError(f"dag.test() run ended {dr.state}")
            return time.perf_counter() - t

        _land_hour(lake, 1)
        one(1)                                                # starts the SparkSession
        _land_hour(lake, 2)
        _show("dag.test() in-process, warm SparkSession", one(2), one(2))
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()

    if "connect" in setups:   # fresh process per task, thin clients of one Connect server
        from infra.spark_connect import start_connect_server

        t = time.perf_counter()
        server = start_connect_server()
        print(f"  (Spark Connect server started once in {time.perf_counter() - t:.1f} s)",
              flush=True)
        try:
            _fresh_setup("fresh process per task, Spark Connect client", work,
                         {**env, "SPARK_REMOTE": server.url}, work / "lake-connect")
        finally:
            server.stop()

    if "fresh" in setups:     # fresh process per task, a local SparkSession in each
        _fresh_setup("fresh process per task, local Spark", work, env, work / "lake-fresh")

    if "services" in setups:  # the real services: the scheduler forks the task processes
        measure_services(work, services_order, services_runs)


def _services_runs(work: Path, preload: bool, remote: str, count: int
                   ) -> tuple[list[float], list[dict[str, float]]]:
    """``count`` scheduled runs of ``windowlib_clickstream_demo`` in real services, one hourly
    file each: (seconds per run, seconds per task of each run), as Airflow recorded them."""
    from datetime import datetime

    from infra import airflow_services as svc

    lake = work / f"lake-services-{'on' if preload else 'off'}"
    for hour in range(1, count + 1):
        _land_hour(lake, hour)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    services = svc.start(work / f"home-services-{'on' if preload else 'off'}", port,
                         lake.as_uri(), timeout=900, extra_env={
                             "WINDOWLIB_PRELOAD": "1" if preload else "0",
                             "SPARK_REMOTE": remote,
                             "WINDOWLIB_DAG_START_DATE": "2024-03-01T00:00:00+00:00",
                             "WINDOWLIB_DAG_END_DATE":
                                 f"2024-03-01T{count - 1:02d}:00:00+00:00"})
    try:
        dag, deadline = "windowlib_clickstream_demo", time.monotonic() + 1800
        while True:
            runs = _rest(services, f"/dags/{dag}/dagRuns?order_by=logical_date")["dag_runs"]
            if len(runs) == count and all(r["state"] in ("success", "failed") for r in runs):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{dag}: runs not finished: {runs}")
            time.sleep(3)
        if any(r["state"] != "success" for r in runs):
            raise RuntimeError(f"{dag}: a run failed (logs under {services.home})")

        def seconds(x: dict) -> float:
            return (datetime.fromisoformat(x["end_date"])
                    - datetime.fromisoformat(x["start_date"])).total_seconds()

        per_task = []   # per run: seconds per task, and between tasks
        for r in runs:
            tis = _rest(services, f"/dags/{dag}/dagRuns/{r['dag_run_id']}/taskInstances")
            tasks = {t["task_id"]: seconds(t) for t in tis["task_instances"]
                     if t.get("start_date") and t.get("end_date")}
            # between tasks: the run's wall time not spent inside a task (scheduling, start-up)
            tasks["(between tasks)"] = seconds(r) - sum(tasks.values())
            per_task.append(tasks)
        return [seconds(r) for r in runs], per_task
    finally:
        services.stop()


def _rest(services: object, path: str) -> dict:
    import urllib.request

    req = urllib.request.Request(f"{services.url}/api/v2{path}",
                                 headers={"Authorization": f"Bearer {services.token()}"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def _median_tasks(per_task: list[dict[str, float]]) -> str:
    return ", ".join(f"{k} {statistics.median(t.get(k, 0.0) for t in per_task):.1f} s"
                     for k in per_task[-1])


def measure_services(work: Path, order: str = "on,off", count: int = 8) -> None:
    """Per-run seconds in the real services, with and without the scheduler's preload, in
    ``order`` (alternate it between invocations: the load of a shared machine drifts), over
    ``count`` (3..24) scheduled runs: medians of runs 2-N and of the second half."""
    from infra.spark_connect import start_connect_server

    if not 3 <= count <= 24:
        raise SystemExit("--services-runs must be 3..24 (one synthetic day of hourly files)")
    half = count // 2      # runs half+1 .. count: the steady state
    server = start_connect_server()
    try:
        found = {}
        for preload in (x.strip() == "on" for x in order.split(",")):
            per_run, tasks = _services_runs(work, preload, server.url, count)
            found[preload] = statistics.median(per_run[1:])
            print(f"  real services, preload {'on' if preload else 'off'}: median of runs "
                  f"2-{count} {found[preload]:.1f} s, of runs {half + 1}-{count} "
                  f"{statistics.median(per_run[half:]):.1f} s (runs: "
                  + ", ".join(f"{x:.1f} s" for x in per_run) + ")"
                  + f"\n    runs 2-{count}, median per task: {_median_tasks(tasks[1:])}"
                  + f"\n    runs {half + 1}-{count}, median per task: "
                  + _median_tasks(tasks[half:]), flush=True)
        if len(found) == 2:
            print(f"  preload on / off per run: {found[True] / found[False]:.2f}", flush=True)
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parse-only", action="store_true")
    parser.add_argument("--runs-only", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="parse repetitions (median)")
    parser.add_argument("--setups", default="dagtest,connect,fresh",
                        help="per-run set-ups to measure (comma-separated; also: services)")
    parser.add_argument("--services-order", default="on,off",
                        help="services set-up: preload on/off order (alternate between runs)")
    parser.add_argument("--services-runs", type=int, default=8,
                        help="services set-up: scheduled runs per preload setting (3..24)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="wl-dag-overhead-"))
    try:
        if not args.runs_only:
            print("DAG file parse time (fresh interpreter, after `import airflow.sdk`):",
                  flush=True)
            for file, r in measure_parse(args.repeat, work / "parse-home").items():
                print(f"  {file:24s} {r['file_s']:6.2f} s wall, {r['file_cpu_s']:5.2f} s CPU"
                      f"   (airflow.sdk itself: {r['sdk_s']:.2f} s wall, "
                      f"{r['sdk_cpu_s']:.2f} s CPU)\n    new top-level modules: "
                      f"{', '.join(r['new_top_level'])}")
        if not args.parse_only:
            print("Per-run fixed cost, windowlib_clickstream_demo, 20 new events / nothing new:",
                  flush=True)
            measure_runs(work, args.setups.split(","), args.services_order,
                         args.services_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
