"""A local Spark Connect server, started and stopped from Python (tests, local development).

PySpark 4.3 ships the server: ``pyspark/jars/spark-connect_*.jar`` holds
``org.apache.spark.sql.connect.service.SparkConnectServer``, which ``pyspark/bin/spark-submit``
starts (``spark-submit`` knows it needs no application jar). ``start_connect_server()`` runs
it as a child process in its own process group, bound to ``127.0.0.1`` on a free port, and
returns once the gRPC port accepts connections (the server binds it only after its
SparkContext is up). The returned ``ConnectServer`` gives the ``sc://127.0.0.1:PORT`` URL;
``stop()`` terminates the whole process group (SIGTERM, then SIGKILL after a grace period).

Invariants:
- The server only listens on the loopback interface.
- Every session it serves starts with ``spark.sql.session.timeZone=UTC``, small shuffle
  partitions, no UI, and is closed after 3 h without a request; its Python workers run
  ``python`` (default: this interpreter), so they import the same windowlib as the client,
  and on a local master they are forked by windowlib's worker daemon on Unix domain sockets
  (``session.python_worker_conf``).
- Its working directory and log live in a private temporary directory (``log_path``), removed
  by ``stop()`` unless ``keep_logs=True``; nothing is written into the caller's directory.

``infra/spark-connect.sh`` starts the same server in the foreground for long-lived local use;
clients connect with ``get_or_create_session(remote=url)`` or ``SPARK_REMOTE=url``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.logs import log_tail
from infra.ports import HOST, accepts_connections, free_port
from windowlib.core.errors import ExecutionError, InputError
from windowlib.engines.spark.session import LOCAL_CONF, python_worker_conf

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

# windowlib's local session settings (their one owner, with the reasons: engines/spark/
# session.py), on loopback, with the server's own shuffle partition count
SERVER_CONF: dict[str, str] = {
    **LOCAL_CONF,
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.bindAddress": HOST,
    "spark.driver.host": HOST,
    # a pipeline DAG's runs hand one server session on from run to run (dags/_windowlib_tasks,
    # _chained_session); an hourly run finds it idle for almost an hour, so the idle timeout
    # (60 min by default) must outlast the longest schedule interval served
    "spark.connect.session.manager.defaultSessionTimeout": "3h",
}


def spark_home() -> Path:
    """The Spark distribution inside the installed ``pyspark`` package (or ``$SPARK_HOME``)."""
    env = os.environ.get("SPARK_HOME")
    if env:
        return Path(env)
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def server_command(port: int, master: str = "local[2]",
                   conf: dict[str, str] | None = None) -> list[str]:
    """The ``spark-submit`` command line that runs a Connect server on ``127.0.0.1:port``."""
    if not 0 < int(port) < 65536:
        raise InputError(f"port {port!r} is not a TCP port", code="CONNECT_PORT_INVALID")
    submit = spark_home() / "bin" / "spark-submit"
    merged = {**SERVER_CONF, **(conf or {}),
              "spark.connect.grpc.binding.address": HOST,
              "spark.connect.grpc.binding.port": str(int(port))}
    cmd = [str(submit), "--class", SERVER_CLASS, "--name", "windowlib Spark Connect server",
           "--master", master]
    for key, value in merged.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd


@dataclass
class ConnectServer:
    """A running local Spark Connect server (see ``start_connect_server``)."""

    port: int
    process: subprocess.Popen
    workdir: Path
    keep_logs: bool = False
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        """The client URL, ``sc://127.0.0.1:PORT``."""
        return f"sc://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        """The server's combined stdout/stderr."""
        return self.workdir / "server.log"

    def running(self) -> bool:
        """Whether the server process is still alive."""
        return self.process.poll() is None

    def stop(self, grace_s: float = 20.0) -> None:
        """Terminate the server's process group (SIGTERM, SIGKILL after ``grace_s``). Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self.process.poll() is None:
            _signal_group(self.process, signal.SIGTERM)
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(self.process, signal.SIGKILL)
                self.process.wait(timeout=10)
        if not self.keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ConnectServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)   # the server runs in its own session: pgid == pid


def start_connect_server(port: int | None = None, *, master: str = "local[2]",
                         conf: dict[str, str] | None = None, python: str | None = None,
                         timeout_s: float = 180.0, keep_logs: bool = False) -> ConnectServer:
    """Start a Spark Connect server on ``127.0.0.1`` and wait until it accepts connections.

    ``port``: default a free port. ``conf``: extra ``--conf`` settings (override
    ``SERVER_CONF``). ``python``: the interpreter of the server's Python workers (default this
    one). Raises ``ExecutionError(CONNECT_SERVER_FAILED)`` with the log's tail when the process
    exits or is not healthy within ``timeout_s``. Call ``stop()`` (or use ``with``) when done.
    """
    port = free_port() if port is None else int(port)
    python = python or sys.executable
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
           "SPARK_LOCAL_IP": HOST, "SPARK_CONNECT_MODE": "0"}
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
        env.pop(name, None)
    workdir = Path(tempfile.mkdtemp(prefix="windowlib-connect-"))
    cmd = server_command(port, master=master,
                         conf={**python_worker_conf(master, python, workdir, env), **(conf or {})})
    if not Path(cmd[0]).exists():
        shutil.rmtree(workdir, ignore_errors=True)
        raise ExecutionError(f"spark-submit not found at {cmd[0]}; is pyspark installed?",
                             code="CONNECT_SERVER_FAILED")
    with open(workdir / "server.log", "wb") as log:
        process = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    server = ConnectServer(port=port, process=process, workdir=workdir, keep_logs=keep_logs)
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            tail = log_tail(server.log_path)
            server.stop()
            raise ExecutionError(f"the Spark Connect server exited with code "
                                 f"{process.returncode}:\n{tail}", code="CONNECT_SERVER_FAILED")
        if accepts_connections(port):
            return server
        if time.monotonic() > deadline:
            tail = log_tail(server.log_path)
            server.stop()
            raise ExecutionError(f"the Spark Connect server on port {port} was not healthy "
                                 f"after {timeout_s:.0f} s:\n{tail}",
                                 code="CONNECT_SERVER_FAILED")
        time.sleep(0.25)


def main(argv: list[str] | None = None) -> None:
    """``python -m infra.spark_connect [--port N] [--master M] [--conf k=v]...``:
    run the server in the foreground (replaces this process; stop it with Ctrl-C/SIGTERM)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m infra.spark_connect",
                                     description="Run a local Spark Connect server on "
                                                 f"{HOST} in the foreground.")
    parser.add_argument("--port", type=int, default=15002, help="gRPC port (default 15002)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting; repeatable")
    parser.add_argument("--workdir", default=None,
                        help="working directory (warehouse, logs); default a new temp dir")
    args = parser.parse_args(argv)
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("spark."):
            parser.error(f"--conf expects spark.KEY=VALUE, got {item!r}")
        conf[key] = value
    workdir = Path(args.workdir) if args.workdir else Path(
        tempfile.mkdtemp(prefix="windowlib-connect-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_LOCAL_IP": HOST, "SPARK_CONNECT_MODE": "0"}
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
        env.pop(name, None)
    cmd = server_command(args.port, master=args.master, conf={
        **python_worker_conf(args.master, env["PYSPARK_PYTHON"], workdir, env), **conf})
    print(f"Spark Connect server: sc://{HOST}:{args.port} (workdir {workdir})", flush=True)
    os.chdir(workdir)
    os.execve(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
