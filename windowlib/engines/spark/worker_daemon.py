"""The Python worker daemon of windowlib's local sessions: PySpark's own, minus one false alarm.

Spark starts Python workers by forking them from a daemon (``spark.python.daemon.module``,
``pyspark.daemon`` by default). On a Unix domain socket (``spark.python.unix.domain.socket.
enabled``) a worker's first input batch arrives without TCP's ~40 ms small-write wait on
loopback, but PySpark 4.3's daemon then prints a ``BrokenPipeError`` traceback to stderr each
time the JVM closes an idle worker's socket (Spark stops workers idle for a minute, and all of
them when the session stops): the worker's final flush meets the closed socket. Over TCP the
same flush succeeds into the socket buffer and nothing is printed.

This module runs PySpark's daemon unchanged except that a worker whose JVM side has closed the
socket (``BrokenPipeError``, ``ConnectionResetError``) ends quietly, as it does over TCP.
Nothing else is caught: a user function's failure travels to the driver inside the task's
result as before (``errors.reraise``), and any other error in the daemon still prints.

Started by the JVM as ``python -m windowlib.engines.spark.worker_daemon``. Before forking it
imports only windowlib's core and what ``pyspark.daemon`` imports (no pyarrow or pandas:
nothing that starts a thread, which ``fork()`` would copy half-way).
``session.python_worker_conf`` selects it only where the workers' interpreter imports it.
"""

from __future__ import annotations

import socket
from typing import Any


def _closed_by_peer_is_quiet(worker: Any) -> Any:
    """``worker`` (``pyspark.daemon.worker``) returning 1 instead of raising when the JVM has
    closed the socket: the daemon's child then exits without a traceback (code 1 ends its
    reuse loop, as a failed authentication does)."""
    def quiet_worker(sock: socket.socket, authenticated: bool) -> int:
        try:
            return worker(sock, authenticated)
        except (BrokenPipeError, ConnectionResetError):
            return 1

    quiet_worker.__wrapped__ = worker      # type: ignore[attr-defined]
    return quiet_worker


def main() -> None:
    """Run PySpark's daemon with the quiet worker."""
    from pyspark import daemon

    daemon.worker = _closed_by_peer_is_quiet(daemon.worker)
    daemon.manager()


if __name__ == "__main__":
    main()
