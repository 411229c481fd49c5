"""A local Spark standalone cluster (one master, N workers), started and stopped from Python.

    .venv/bin/python -m infra.spark_cluster [--workers 2] [--cores 1] [--memory 1g]

The PySpark wheel has ``bin/spark-class`` but no ``sbin/`` scripts, so ``start_cluster()`` runs
``spark-class org.apache.spark.deploy.master.Master`` and, per worker,
``spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:PORT`` as child processes,
each in its own process group, and returns once the master reports every worker ``ALIVE``
(its JSON status page). ``SparkCluster.master_url`` is what ``--master`` takes.

Invariants:
- Everything listens on 127.0.0.1 only, on ports the OS picked (master RPC and web UI,
  worker RPC and web UIs).
- Each worker has its own work directory (executors' working directories, shipped files and
  their logs) and its own local directory (shuffle and spill files) under the cluster's private
  temporary directory: nothing is shared between workers by accident. ``file://`` data paths
  still work here only because all workers are on this machine; see docs/operations.md.
- Workers start with a scrubbed environment: no ``AWS_*`` variables (but
  ``AWS_EC2_METADATA_DISABLED``: there is no instance metadata service), no ``PYTHONPATH``, no
  ``SPARK_REMOTE``. Whatever executors need (code, S3 endpoint and credentials) must come from
  the application, as on a real cluster.
- ``stop()`` terminates every process group (SIGTERM, SIGKILL after a grace period) and removes
  the temporary directory unless ``keep_logs=True``; executors die with their worker's group.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.logs import log_tail
from infra.ports import HOST, free_port
from infra.spark_connect import spark_home
from windowlib.core.errors import ExecutionError, InputError

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# variables a worker (and so every executor it launches) must not inherit from this process
_SCRUBBED_PREFIXES = ("AWS_", "PYSPARK_", "SPARK_", "PYTHON", "WINDOWLIB_", "AIRFLOW")


def _worker_env(local_dir: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": HOST,
                "SPARK_NO_DAEMONIZE": "1",
                # no instance metadata service on this machine: fail fast instead of waiting
                "AWS_EC2_METADATA_DISABLED": "true"})
    if local_dir is not None:
        env["SPARK_LOCAL_DIRS"] = str(local_dir)
    return env


@dataclass
class SparkCluster:
    """A running local standalone cluster (see ``start_cluster``)."""

    port: int
    webui_port: int
    workdir: Path
    processes: list[subprocess.Popen] = field(default_factory=list, repr=False)
    workers: int = 0
    cores_per_worker: int = 1
    keep_logs: bool = False
    owns_workdir: bool = True
    _stopped: bool = field(default=False, repr=False)

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT``, the value of ``--master``."""
        return f"spark://{HOST}:{self.port}"

    @property
    def cores(self) -> int:
        """Total executor cores of the cluster."""
        return self.workers * self.cores_per_worker

    def worker_dir(self, index: int) -> Path:
        """The private directory of worker ``index`` (``work/``, ``local/``, ``worker.log``)."""
        return self.workdir / f"worker-{index}"

    def status(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications)."""
        url = f"http://{HOST}:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.loads(resp.read().decode())

    def alive_workers(self) -> int:
        """How many workers the master sees alive (0 when it does not answer yet, or answers
        with its HTML page while its JSON endpoint is not attached yet)."""
        try:
            workers = self.status().get("workers", [])
        except (OSError, ValueError):
            return 0
        return sum(1 for w in workers if w.get("state") == "ALIVE")

    def log_files(self) -> list[Path]:
        """Every log the cluster wrote: master, workers, and executors' stdout/stderr."""
        return sorted(p for p in self.workdir.rglob("*")
                      if p.is_file() and (p.suffix == ".log" or p.name in ("stdout", "stderr")))

    def running(self) -> bool:
        """Whether the master and every worker process are alive."""
        return bool(self.processes) and all(p.poll() is None for p in self.processes)

    def stop(self, grace_s: float = 20.0) -> None:
        """Terminate every process group (workers first). Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        for process in reversed(self.processes):
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for process in reversed(self.processes):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=10)
            _signal_group(process, signal.SIGKILL)   # executors left in the group, if any
        if not self.keep_logs and self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> SparkCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)   # each process runs in its own session: pgid == pid


def _spawn(cmd: list[str], log_path: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    with open(log_path, "wb") as log:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def start_cluster(workers: int = 2, *, cores: int = 1, memory: str = "1g",
                  timeout_s: float = 120.0, keep_logs: bool = False,
                  workdir: Path | None = None) -> SparkCluster:
    """Start a master and ``workers`` workers (``cores`` cores, ``memory`` each) on 127.0.0.1.

    Returns once every worker is registered and alive. ``workdir``: default a new temporary
    directory, removed by ``stop()`` (a given one is kept). Raises
    ``InputError(CLUSTER_ARGUMENT_INVALID)`` for bad sizes and
    ``ExecutionError(CLUSTER_START_FAILED)`` with the log's tail when a process exits or the
    workers are not alive within ``timeout_s``. Call ``stop()`` (or use ``with``) when done.
    """
    if not 1 <= workers <= 16 or not 1 <= cores <= 64:
        raise InputError(f"a local cluster has 1-16 workers of 1-64 cores (got {workers} x "
                         f"{cores})", code="CLUSTER_ARGUMENT_INVALID")
    if not memory[:-1].isdigit() or memory[-1].lower() not in "mg":
        raise InputError(f"worker memory is like 1g or 512m (got {memory!r})",
                         code="CLUSTER_ARGUMENT_INVALID")
    spark_class = spark_home() / "bin" / "spark-class"
    if not spark_class.exists():
        raise ExecutionError(f"spark-class not found at {spark_class}; is pyspark installed?",
                             code="CLUSTER_START_FAILED")
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="windowlib-cluster-"))
    root.mkdir(parents=True, exist_ok=True)
    cluster = SparkCluster(port=free_port(), webui_port=free_port(), workdir=root,
                           workers=workers, cores_per_worker=cores, keep_logs=keep_logs,
                           owns_workdir=workdir is None)
    master_log = root / "master.log"
    props = root / "master.properties"
    props.write_text("spark.master.rest.enabled false\n")   # its fixed port 6066 would clash
    cluster.processes.append(_spawn(
        [str(spark_class), MASTER_CLASS, "--host", HOST, "--port", str(cluster.port),
         "--webui-port", str(cluster.webui_port), "--properties-file", str(props)],
        master_log, _worker_env(), root))
    logs = [master_log]
    for index in range(1, workers + 1):
        wdir = cluster.worker_dir(index)
        (wdir / "work").mkdir(parents=True, exist_ok=True)
        (wdir / "local").mkdir(exist_ok=True)
        logs.append(wdir / "worker.log")
        cluster.processes.append(_spawn(
            [str(spark_class), WORKER_CLASS, cluster.master_url, "--host", HOST,
             "--port", str(free_port()), "--webui-port", str(free_port()),
             "--cores", str(cores), "--memory", memory, "--work-dir", str(wdir / "work")],
            logs[-1], _worker_env(wdir / "local"), wdir))
    deadline = time.monotonic() + timeout_s
    while cluster.alive_workers() < workers:
        dead = [(p, log) for p, log in zip(cluster.processes, logs, strict=True)
                if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            process, log = dead[0] if dead else (None, logs[-1])
            what = (f"{log.stem} exited with code {process.returncode}" if process
                    else f"only {cluster.alive_workers()} of {workers} workers alive after "
                         f"{timeout_s:.0f} s")
            tail = log_tail(log)
            cluster.stop()
            raise ExecutionError(f"the local Spark cluster did not start: {what}:\n{tail}",
                                 code="CLUSTER_START_FAILED")
        time.sleep(0.5)
    return cluster


def main(argv: list[str] | None = None) -> int:
    """``python -m infra.spark_cluster``: run a cluster in the foreground until Ctrl-C."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m infra.spark_cluster",
                                     description=f"Run a Spark standalone cluster on {HOST}.")
    parser.add_argument("--workers", type=int, default=2, help="workers (default 2)")
    parser.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    parser.add_argument("--memory", default="1g", help="memory per worker (default 1g)")
    parser.add_argument("--keep-logs", action="store_true",
                        help="keep the work directory (logs, executor output) after stopping")
    args = parser.parse_args(argv)
    try:
        cluster = start_cluster(args.workers, cores=args.cores, memory=args.memory,
                                keep_logs=args.keep_logs)
    except (InputError, ExecutionError) as exc:
        print(exc, file=sys.stderr)
        return 2 if isinstance(exc, InputError) else 1
    print(f"Spark master {cluster.master_url} ({cluster.workers} workers x "
          f"{cluster.cores_per_worker} core(s); UI http://{HOST}:{cluster.webui_port}; "
          f"work dir {cluster.workdir})\n\n"
          f"  python jobs/run_pipeline.py --master {cluster.master_url} --pipeline NAME ...\n\n"
          "Ctrl-C stops it.", flush=True)

    def _stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    try:
        while cluster.running():
            time.sleep(1)
        print("a cluster process exited; stopping", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopping ...")
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
