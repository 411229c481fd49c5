"""windowlib's Python worker daemon (``worker_daemon.py``) and the choice of it
(``session.python_worker_conf``), without a JVM: PySpark's own ``worker`` function on a real
socket whose JVM end is closed, as Spark leaves an idle worker it stops."""

from __future__ import annotations

import os
import shutil
import socket
import sys

import pytest

from windowlib.engines.spark import worker_daemon
from windowlib.engines.spark.session import UNIX_SOCKET_WORKERS, WORKER_DAEMON, python_worker_conf

pytestmark = pytest.mark.unit


@pytest.fixture
def closed_by_the_jvm(monkeypatch):
    """A worker's socket whose peer is gone, in the environment Spark gives its daemon."""
    monkeypatch.setenv("PYTHON_DAEMON_KILL_WORKER_ON_FLUSH_FAILURE", "true")
    worker_end, jvm_end = socket.socketpair(socket.AF_UNIX)
    jvm_end.close()
    yield worker_end
    worker_end.close()


def test_pysparks_worker_raises_broken_pipe_when_the_jvm_closed_the_socket(closed_by_the_jvm):
    """The traceback windowlib's daemon exists for: PySpark's daemon prints this exception
    for every idle worker Spark stops (if this stops raising, the wrapper can go)."""
    from pyspark import daemon

    with pytest.raises(BrokenPipeError):
        daemon.worker(closed_by_the_jvm, True)


def test_the_worker_ends_quietly_when_the_jvm_closed_the_socket(closed_by_the_jvm, capfd):
    from pyspark import daemon

    quiet = worker_daemon._closed_by_peer_is_quiet(daemon.worker)
    assert quiet(closed_by_the_jvm, True) == 1        # ends the daemon child's reuse loop
    assert "Traceback" not in capfd.readouterr().err


def test_other_failures_of_the_worker_still_raise():
    def failing(sock, authenticated):
        raise ValueError("not a closed socket")

    with pytest.raises(ValueError, match="not a closed socket"):
        worker_daemon._closed_by_peer_is_quiet(failing)(None, True)


def test_the_daemon_imports_nothing_that_starts_threads_before_forking():
    """PySpark forks workers from the daemon: pyarrow, pandas and numpy start threads on
    import, so neither windowlib's module nor the packages above it may import them."""
    import subprocess

    probe = (f"import sys, threading, {WORKER_DAEMON}; "
             "print(threading.active_count(), "
             "sorted({'pyarrow', 'pandas', 'numpy', 'pyspark'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.split(None, 1)
    assert out == ["1", "[]\n"]


def test_workers_use_the_daemon_where_their_interpreter_imports_it(tmp_path):
    assert python_worker_conf("local[2]", sys.executable, cwd=tmp_path) == UNIX_SOCKET_WORKERS
    assert UNIX_SOCKET_WORKERS["spark.python.daemon.module"] == WORKER_DAEMON


def test_workers_stay_on_tcp_where_their_interpreter_cannot_import_it(tmp_path):
    """A worker interpreter without windowlib (another virtualenv, a bare system python)
    keeps Spark's defaults rather than failing every Python task."""
    without_windowlib = {**os.environ, "PYTHONPATH": str(tmp_path)}
    system = shutil.which("python3", path="/usr/bin")
    if system:                              # windowlib is installed in the venv only
        assert python_worker_conf("local[2]", system, cwd=tmp_path, env=without_windowlib) == {}
    assert python_worker_conf("local[2]", str(tmp_path / "missing-python"), cwd=tmp_path) == {}
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\nexit 1\n")
    failing.chmod(0o755)
    assert python_worker_conf("local[2]", str(failing), cwd=tmp_path) == {}


def test_workers_of_a_cluster_master_stay_on_tcp(tmp_path):
    """A cluster's workers run elsewhere: the daemon may not be importable there."""
    assert python_worker_conf("spark://127.0.0.1:7077", sys.executable, cwd=tmp_path) == {}
