"""A SparkSession configured the way windowlib expects (see ``../shared/NOTES.md``).

``get_or_create_session()`` returns, in this order:

1. a **Spark Connect** session when ``remote=`` is given or ``SPARK_REMOTE`` is set
   (``sc://host:port``, e.g. from ``connect.start_connect_server()`` or
   ``infra/spark-connect.sh``); one client session per URL is reused while it is open;
2. the active classic session (a cluster job or a notebook keeps its own configuration);
3. a new local one: ``local[2]``, no UI and no console progress bars, 4 shuffle partitions,
   adaptive execution on, UTC, Arrow on, PySpark's per-call DataFrame debugging (call-site
   capture) off, Python workers on Unix domain sockets through windowlib's worker daemon
   where the workers' interpreter imports it (``python_worker_conf``).

In every case the session time zone is forced to UTC, because windowlib reads and writes
timestamps as UTC. On a cluster master (anything but ``local[...]``, also behind Connect)
windowlib itself is shipped to the executors (``shipping.ship_code``); a pipeline's own modules
are shipped by the caller (``ship_code(spark, ["mypackage"])``; the CLI, ``jobs/run_pipeline.py``
and the DAG tasks ship the registry's package). New classic sessions on a ``local`` master bind
the driver to 127.0.0.1; on a cluster the driver's address is Spark's choice
(``SPARK_LOCAL_IP``, ``spark.driver.host``).

``connect_url(url, session_id)`` names one server-side session in a Connect URL, so that
several client processes (the tasks of one DAG run) share its state and its Python workers.

``statement_threads()`` runs independent work of one caller together (a run's output
tables: their Delta commits, then their names in the catalog): a process-wide pool, because
a PySpark thread pins a JVM thread and a py4j connection, so threads are reused, never made
per call.

``stop_remote_sessions()`` closes the Connect sessions this module opened and clears PySpark's
process-wide Connect flag, so classic sessions work again afterwards (PySpark routes
``pyspark.sql.functions`` to Connect while ``SPARK_CONNECT_MODE_ENABLED`` is set).

Python workers must run the same interpreter as the driver: set ``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON`` to the virtualenv's python before the first local session starts
(``get_or_create_session`` sets them to ``sys.executable`` when they are unset). For Connect,
the server's environment decides (``start_connect_server(python=...)``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.outputs import OUTPUTS

LOCAL_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.bindAddress": "127.0.0.1",
    # Spark's console progress bars write over the CLI's spinner (and fill task logs): the CLI
    # shows its own progress
    "spark.ui.showConsoleProgress": "false",
    # PySpark 4 records the Python call site of every DataFrame/Column call for error messages
    # (several JVM round trips each: ~3,500 of a warm incremental run's ~7,300); planning a run
    # builds hundreds of expressions, so local sessions turn it off.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # windowlib caches only run-scoped frames read two or three times (the source of an
    # incremental run, the walkers' output, the sessions' marked rows): compressing their
    # columns costs more than it saves (1M marked session rows: 3.35 s -> 2.41 s uncompressed)
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    # Spark caches compiled classes by their source text (a native run's plan generates the
    # same code from run to run: native_parts), but an hourly run with early firings uses
    # ~100 classes, and Spark's cache of 100 is four LRU segments of 25: when a run's classes
    # put more than 25 into one segment, that segment misses every one of them on every run
    # (a CI run recompiled 28 classes per warm run; with 60 entries, 43). Static: takes effect
    # when the session is created; test JVMs reserve a production-sized code cache for it.
    "spark.sql.codegen.cache.maxEntries": "400",
}

# Python workers on a Unix domain socket, forked by windowlib's daemon (worker_daemon.py):
# over TCP on loopback every Python task waited ~40 ms for its first input batch (the JVM's
# small writes held until the worker's delayed acknowledgement), on the critical path of every
# hourly run; PySpark's own daemon on these sockets prints a traceback for every idle worker
# Spark stops. Static settings; ``python_worker_conf`` adds them where the daemon imports.
WORKER_DAEMON = "windowlib.engines.spark.worker_daemon"
UNIX_SOCKET_WORKERS: dict[str, str] = {
    "spark.python.unix.domain.socket.enabled": "true",
    "spark.python.daemon.module": WORKER_DAEMON,
}

OWN_SETTINGS = "spark.windowlib."    # the prefix of windowlib's settings; Spark has none

_REMOTE_SESSIONS: dict[str, Any] = {}
_SCOPE_LOCK = threading.Lock()
_SCOPES: dict[int, list[Any]] = {}     # id(session) -> [holders, the values to restore]


def get_or_create_session(master: str = "local[2]", app_name: str = "windowlib",
                          conf: dict[str, str] | None = None, *,
                          remote: str | None = None) -> Any:
    """A Spark Connect session for ``remote`` (or ``$SPARK_REMOTE``), else the active classic
    session, else a new local one with windowlib's settings. ``conf`` applies to new sessions
    (for Connect: session-level SQL settings)."""
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    if remote is not None:
        return _remote_session(remote, conf)
    from pyspark.sql import SparkSession

    from windowlib.engines.spark.jvm_lookups import remember_jvm_lookups
    from windowlib.engines.spark.shipping import ship_code

    active = SparkSession.getActiveSession()
    if active is not None:
        if active.conf.get("spark.sql.session.timeZone") != "UTC":
            active.conf.set("spark.sql.session.timeZone", "UTC")
        remember_jvm_lookups(active)
        ship_code(active)
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {**LOCAL_CONF, **python_worker_conf(master, os.environ["PYSPARK_PYTHON"]),
                **(conf or {})}
    if not master.startswith("local") and "spark.driver.bindAddress" not in (conf or {}):
        settings.pop("spark.driver.bindAddress")
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    remember_jvm_lookups(session)
    _quiet_task_failures(session)
    ship_code(session)
    return session


def python_worker_conf(master: str, python: str, cwd: str | os.PathLike[str] | None = None,
                       env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``UNIX_SOCKET_WORKERS`` when ``master``'s Python workers run on this machine
    (``local[...]``) and their interpreter ``python``, started in ``cwd`` with ``env``
    (default: this process's), imports windowlib's worker daemon; otherwise nothing (Spark's
    TCP workers and PySpark's daemon: on a cluster the daemon starts before shipped code is on
    its path). Checked once per interpreter, directory and ``PYTHONPATH`` (one short Python
    start)."""
    if not master.startswith("local") or not hasattr(socket, "AF_UNIX"):
        return {}
    env = os.environ if env is None else env
    cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
    if not _imports(python, WORKER_DAEMON, cwd, env.get("PYTHONPATH", ""), env.get("PATH", "")):
        return {}
    return dict(UNIX_SOCKET_WORKERS)


@functools.lru_cache(maxsize=16)
def _imports(python: str, module: str, cwd: str, pythonpath: str, path: str) -> bool:
    env = {**os.environ, "PYTHONPATH": pythonpath, "PATH": path}
    try:
        done = subprocess.run([python, "-c", f"import {module}"], cwd=cwd, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _quiet_task_failures(session: Any) -> None:
    """A failing user function is reported once: as the windowlib error the driver raises
    (``errors.reraise``). On a local master the executor's own report of it — a Python
    traceback logged by ``Executor`` and ``TaskSetManager`` — would land on the console too,
    so those two loggers are silenced, and the block manager's warnings (which repeat it for
    a cached partition) are raised to errors (a cluster keeps them in its executor logs)."""
    with contextlib.suppress(Exception):      # no log4j 2 API: leave logging as it is
        jvm = session.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level
        configure = jvm.org.apache.logging.log4j.core.config.Configurator.setLevel
        for name in ("org.apache.spark.executor.Executor",
                     "org.apache.spark.scheduler.TaskSetManager"):
            configure(name, level.OFF)
        configure("org.apache.spark.storage.BlockManager", level.ERROR)


def _remote_session(url: str, conf: dict[str, str] | None) -> Any:
    if not url.startswith("sc://"):
        raise InputError(f"a Spark Connect URL starts with sc:// (got {url!r})",
                         code="CONNECT_URL_INVALID")
    session = _REMOTE_SESSIONS.get(url)
    if session is not None and not session.is_stopped:
        return session
    # pyspark's classic builder returns the classic session while a SparkContext is alive, so
    # build the Connect session directly; the flag is what pyspark's own builder sets
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    session = RemoteSparkSession.builder.remote(url).create()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    for key, value in (conf or {}).items():
        session.conf.set(key, value)
    _REMOTE_SESSIONS[url] = session
    from windowlib.engines.spark.shipping import ship_code

    ship_code(session)
    return session


def connect_url(url: str, session_id: str | None) -> str:
    """``url`` (``sc://host:port[/;key=value...]``) with ``;session_id=<session_id>`` (a UUID
    string), so that every client of the URL attaches to that one server session; ``url``
    unchanged when ``session_id`` is ``None`` or the URL already names a session."""
    if session_id is None or "session_id=" in url:
        return url
    head, _, params = url.partition(";")
    return f"{head.rstrip('/')}/;session_id={session_id}" + (f";{params}" if params else "")


def stop_remote_sessions() -> None:
    """Close the Connect sessions opened here and leave PySpark's Connect mode."""
    while _REMOTE_SESSIONS:
        _, session = _REMOTE_SESSIONS.popitem()
        with contextlib.suppress(Exception):   # the server may already be gone
            session.stop()
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


@contextlib.contextmanager
def scoped_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[bool]:
    """Run the block with session SQL ``settings`` that change how queries execute, never what
    they return (e.g. ``spark.sql.adaptive.enabled``); yields whether they were applied.

    SQL settings are session-wide: a query another thread runs on the same session meanwhile
    sees them too. Nested and concurrent blocks on one session share one scope (the first
    sets, the last restores; a block arriving while another holds the scope runs with the
    holder's settings). A session that refuses a setting (a restricted Connect server) runs
    the block unchanged."""
    key = id(spark)
    with _SCOPE_LOCK:
        scope = _SCOPES.get(key)
        if scope is None:
            try:
                saved = {name: conf_value(spark, name) for name in settings}
                for name, value in settings.items():
                    spark.conf.set(name, value)
            except Exception:       # not settable here: leave the session as it was
                with contextlib.suppress(Exception):
                    _restore(spark, saved)
                scope = None
            else:
                scope = _SCOPES[key] = [0, saved]
        if scope is not None:
            scope[0] += 1
    try:
        yield scope is not None
    finally:
        if scope is not None:
            with _SCOPE_LOCK:
                scope[0] -= 1
                if scope[0] == 0:
                    del _SCOPES[key]
                    with contextlib.suppress(Exception):   # a stopped session
                        _restore(spark, scope[1])


def large_var_types(spark: Any) -> bool:
    """Whether ``spark`` hands Arrow data to Python with 64-bit offsets
    (``spark.sql.execution.arrow.useLargeVarTypes``): the Arrow types the walkers and the
    reader tasks must produce. False when the conf cannot be read (restricted Connect
    servers)."""
    return str(conf_value(spark, "spark.sql.execution.arrow.useLargeVarTypes")).lower() \
        == "true"


def shuffle_partitions(spark: Any) -> int | None:
    """``spark.sql.shuffle.partitions`` as a number; ``None`` when it is not one ("auto" on
    some platforms) or cannot be read (a restricted Connect server)."""
    value = conf_value(spark, "spark.sql.shuffle.partitions")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def conf_value(spark: Any, name: str) -> str | None:
    """The session's setting ``name``; ``None`` when it is unset or cannot be read (a
    restricted Connect server). Every optional windowlib setting is read through here.

    One of windowlib's own settings is read with the default ``None``: read without one,
    an unset name raises in the JVM, and PySpark's conversion of that exception costs about
    20 ms of round trips. Spark's settings are read without a default, so an unset one
    gives Spark's built-in default (a default argument would replace it)."""
    try:
        if name.startswith(OWN_SETTINGS):
            return spark.conf.get(name, None)
        return spark.conf.get(name)
    except Exception:
        return None


def _restore(spark: Any, saved: Mapping[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            spark.conf.unset(name)
        else:
            spark.conf.set(name, value)


STATEMENT_THREADS = len(OUTPUTS)    # one per output table of a run
_POOLS: list[ThreadPoolExecutor] = []
_POOLS_LOCK = threading.Lock()


def _forget_threads_after_fork() -> None:
    """A forked child has none of its parent's threads: it starts its own."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_threads_after_fork)


def run_together(calls: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> list[Any]:
    """Each ``(fn, args)`` on the statement threads; their results in order once all ended
    (the first failure in order raises then, never while another call still runs)."""
    futures = [statement_threads().submit(fn, *args) for fn, args in calls]
    wait(futures)
    return [f.result() for f in futures]


def statement_threads() -> ThreadPoolExecutor:
    """The process's threads for a caller's independent work (Spark statements, table
    commits); a task must not wait on another task of this pool."""
    with _POOLS_LOCK:
        if not _POOLS:
            _POOLS.append(ThreadPoolExecutor(STATEMENT_THREADS,
                                             thread_name_prefix="windowlib-statements"))
        return _POOLS[0]
