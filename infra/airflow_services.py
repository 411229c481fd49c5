"""Local Airflow 3 services for windowlib: api-server, scheduler and dag-processor.

``start()`` migrates the metadata DB (SQLite in ``home``), starts the three services on
127.0.0.1, each in its own session (``setsid``), waits until ``/api/v2/monitor/health``
reports healthy and returns an :class:`AirflowServices`; ``stop()`` sends SIGTERM to every
process group of those sessions — the services and the task processes they started, which
Airflow moves into groups of their own — then SIGKILL after a grace period.
``infra/airflow_serving.py`` (``make airflow``) is the command line over it.

Invariants:

* Configuration is environment only (no edits to ``airflow.cfg``): DAGS_FOLDER is the repo's
  ``dags/``, no examples, DAGs are not paused at creation, ``PARALLELISM=4``, an idle
  scheduler loop sleeps 0.25 s (not 1 s: task-to-task latency), the simple auth
  manager with one ``admin`` user whose password is generated once into
  ``{home}/passwords.json`` (mode 0600) and reused; one JWT secret, also generated once into
  ``{home}/jwt_secret`` (0600), is shared by all services so task tokens verify.
* ``WINDOWLIB_ROOT`` defaults to ``file://<repo>/.local/lake``; an existing value is kept.
  The plugins folder is ``dags/plugins`` (report links). ``WINDOWLIB_DAG_START_DATE``
  defaults to three hours ago, so catchup creates only a few scheduled runs; older data is
  processed with backfills (UI or ``windowlib_backfill``).
* ``PYTHONPATH`` has ``infra/airflow_settings``: its ``airflow_local_settings`` makes the
  scheduler import the tasks' heavy modules once, so the task processes its LocalExecutor
  forks inherit them (``WINDOWLIB_PRELOAD=0`` switches it off).
* Secrets are never logged; the password is printed only by ``make airflow`` (its banner).
* Service logs go to ``{home}/logs/{service}.log``. ``AirflowServices.check_alive()`` is the
  one supervisor (start-up, ``make airflow``, the e2e tests' wait loops): it restarts a
  service that exited, up to ``MAX_RESTARTS`` times, and then raises :class:`ServiceExited`
  naming it, its exit code and its log's tail.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from infra.logs import TAIL_LINES, log_tail

REPO = Path(__file__).resolve().parent.parent
SETTINGS = REPO / "infra" / "airflow_settings"     # airflow_local_settings.py (preload)
SERVICES = ("api-server", "scheduler", "dag-processor")
USER = "admin"
MAX_RESTARTS = 3   # per service and start(): a crash loop fails, a one-off race does not


class ServiceExited(RuntimeError):
    """An Airflow service process exited and was not (or no longer) restarted."""


@dataclass(frozen=True)
class Restart:
    """One restart of a service that exited: which, its exit code, and the report (its log's
    tail, secrets masked) that would have been raised had its restarts been used up."""

    service: str
    exit_code: int
    report: str


@dataclass
class AirflowServices:
    """Running services: the URL, the login, the processes (one session each), the commands
    that (re)start them and the restarts so far; ``sessions`` holds every session ever started
    (a crashed service's task processes may outlive it, and ``stop()`` ends them too)."""

    home: Path
    port: int
    username: str
    password: str = field(repr=False)
    env: dict[str, str] = field(repr=False, default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict, repr=False)
    commands: dict[str, list[str]] = field(default_factory=dict, repr=False)
    max_restarts: int = MAX_RESTARTS
    restarts: list[Restart] = field(default_factory=list)
    sessions: set[int] = field(default_factory=set, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def token(self) -> str:
        """A bearer token for the REST API (``POST /auth/token``)."""
        body = json.dumps({"username": self.username, "password": self.password}).encode()
        req = urllib.request.Request(f"{self.url}/auth/token", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())["access_token"]

    def log_file(self, name: str) -> Path:
        return self.home / "logs" / f"{name}.log"

    def spawn(self, name: str) -> subprocess.Popen:
        """Start service ``name`` with its command in a session of its own, appending to its
        log; it replaces the service's earlier process."""
        with open(self.log_file(name), "ab") as log:
            proc = subprocess.Popen(self.commands[name], env=self.env or None, stdout=log,
                                    stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
        self.processes[name] = proc
        self.sessions.add(proc.pid)
        return proc

    def check_alive(self, lines: int = TAIL_LINES) -> None:
        """Supervise: restart every service that exited, as a production supervisor would
        (Airflow's scheduler exits on database races, e.g. a ``StaleDataError`` when the API
        server deleted a run it had loaded), recording each in ``restarts`` and in the
        service's log. Raise :class:`ServiceExited` for a service that exited after
        ``max_restarts`` restarts or has no command: its name, exit code and the last
        ``lines`` lines of its log (known secrets masked)."""
        failed = []
        for name, proc in list(self.processes.items()):
            if (code := proc.poll()) is None:
                continue
            tail = self._masked(log_tail(self.log_file(name), lines))
            report = (f"Airflow service {name!r} exited with code {code}; last {lines} "
                      f"lines of {self.log_file(name)}:\n{tail}")
            done = sum(r.service == name for r in self.restarts)
            if name not in self.commands or done >= self.max_restarts:
                failed.append(report if not done else f"{report}\n(after {done} restarts)")
                continue
            self.restarts.append(Restart(name, code, report))
            note = f"restarted by infra/airflow_services ({done + 1} of {self.max_restarts})"
            with open(self.log_file(name), "a") as log:
                log.write(f"--- exited with code {code}; {note} ---\n")
            print(f"Airflow service {name!r} exited with code {code}; {note}; see "
                  f"{self.log_file(name)}", file=sys.stderr, flush=True)
            self.spawn(name)
        if failed:
            raise ServiceExited("\n\n".join(failed))

    def _masked(self, text: str) -> str:
        jwt = self.env.get("AIRFLOW__API_AUTH__JWT_SECRET")
        for secret in filter(None, (self.password, jwt)):
            text = text.replace(secret, "***")
        return text

    def stop(self, grace: float = 30.0) -> None:
        stop(self, grace)


def _secret_file(path: Path, make: callable) -> str:
    if path.exists():
        return path.read_text().strip()
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value)
    return value


def credentials(home: Path) -> tuple[str, str, Path]:
    """``(username, password, passwords_file)``; the password is generated on first use."""
    file = home / "passwords.json"
    text = _secret_file(file, lambda: json.dumps({USER: secrets.token_urlsafe(12)}))
    return USER, json.loads(text)[USER], file


def airflow_env(home: Path, port: int = 8080, root: str | None = None,
                dags: Path | None = None, extra: dict[str, str] | None = None
                ) -> dict[str, str]:
    """The environment every service (and the ``airflow`` CLI) runs with."""
    home = home.resolve()
    _, _, passwords = credentials(home)
    jwt = _secret_file(home / "jwt_secret", lambda: secrets.token_urlsafe(32))
    venv_bin = str(Path(sys.executable).parent)
    env = dict(os.environ)
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str((dags or REPO / "dags").resolve()),
        # the windowlib_links plugin: run report and Data Docs one click from a DAG run
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "dags" / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAG_IGNORE_FILE_SYNTAX": "regexp",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",
        # an idle scheduler loop sleeps this long (Airflow's default 1 s) before it looks again
        # for finished tasks and their ready downstream tasks: each of a DAG run's four
        # task-to-task hand-overs waited up to that long (docs/performance.md, "Airflow tasks")
        "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.25",
        # OpenLineage (when configured) from a thread: a forked child shares Spark's py4j socket
        "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
        "AIRFLOW__CORE__AUTH_MANAGER":
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": jwt,
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__API__WORKERS": "1",
        # SQLite (local only; production uses PostgreSQL): wait up to 60 s for a lock instead
        # of the driver's 5 s — three services and the task supervisors write to one file,
        # and on a loaded machine a writer holds the lock for seconds ("database is locked")
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}?timeout=60",
        "WINDOWLIB_ROOT": root or os.environ.get("WINDOWLIB_ROOT")
        or (REPO / ".local" / "lake").as_uri(),
        # catchup=True: without a start, the scheduler would create a run per hour since
        # 2024-03-01; locally start three hours ago (override by setting the variable)
        "WINDOWLIB_DAG_START_DATE": os.environ.get("WINDOWLIB_DAG_START_DATE") or time.strftime(
            "%Y-%m-%dT%H:00:00+00:00", time.gmtime(time.time() - 3 * 3600)),
        "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
        # airflow_local_settings: the scheduler imports the tasks' heavy modules once, and
        # the task processes it forks inherit them (infra/airflow_settings)
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), str(SETTINGS),
                                                  os.environ.get("PYTHONPATH")) if p),
    })
    env.update(extra or {})
    return env


def healthy(url: str) -> bool:
    """Whether ``/api/v2/monitor/health`` reports the metadatabase and scheduler healthy."""
    try:
        with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as resp:
            data = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return all((data.get(k) or {}).get("status") == "healthy"
               for k in ("metadatabase", "scheduler"))


def start(home: Path | str | None = None, port: int = 8080, root: str | None = None, *,
          dags: Path | None = None, wait: bool = True, timeout: float = 300.0,
          extra_env: dict[str, str] | None = None) -> AirflowServices:
    """Migrate the DB and start the services; with ``wait``, block until healthy (raises
    ``TimeoutError`` after ``timeout`` s, ``ServiceExited`` when a service exits first,
    stopping what it started). ``extra_env`` overrides the environment of every service
    (tests: a registry, a DAG start date)."""
    home = Path(home or REPO / ".local" / "airflow").resolve()
    (home / "logs").mkdir(parents=True, exist_ok=True)
    env = airflow_env(home, port, root, dags, extra_env)
    user, password, _ = credentials(home)
    airflow = str(Path(sys.executable).parent / "airflow")
    with open(home / "logs" / "db-migrate.log", "w") as log:
        subprocess.run([airflow, "db", "migrate"], env=env, stdout=log,
                       stderr=subprocess.STDOUT, check=True, cwd=REPO)
    use_wal(home / "airflow.db")
    commands = {"api-server": [airflow, "api-server", "--host", "127.0.0.1", "--port",
                               str(port)],
                "scheduler": [airflow, "scheduler"], "dag-processor": [airflow, "dag-processor"]}
    services = AirflowServices(home, port, user, password, env, commands=commands)
    try:
        for name in SERVICES:
            services.spawn(name)
        if wait:
            deadline = time.monotonic() + timeout
            while not healthy(services.url):
                services.check_alive()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Airflow not healthy at {services.url} after "
                                       f"{timeout:.0f} s; see {home / 'logs'}")
                time.sleep(2)
    except BaseException:
        stop(services)
        raise
    return services


def use_wal(db: Path) -> None:
    """Switch the SQLite metadata DB to write-ahead logging (persistent in the file): readers
    (the UI, the REST API, the scheduler's queries) no longer block the writers."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(db, timeout=60)) as con:
        con.execute("PRAGMA journal_mode=WAL")


def _session_groups(sessions: set[int]) -> set[int]:
    """Process groups of every live process whose session is one of ``sessions``: the services
    run under ``setsid``, and Airflow's task supervisors move into process groups of their own
    (inside the same session), so killing the services' groups alone would orphan them."""
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        state, pgid, sid = fields[0], int(fields[2]), int(fields[3])
        # a zombie is already dead: it only waits for its parent (or, in a container whose
        # PID 1 does not reap, forever) and holds no resources
        if sid in sessions and state != "Z":
            groups.add(pgid)
    return groups


def _signal_groups(groups: set[int], sig: int) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)


def stop(services: AirflowServices, grace: float = 30.0) -> None:
    """SIGTERM the services' process groups and every process group of their sessions (task
    processes and their Spark JVMs), then SIGKILL what is left after ``grace`` s."""
    sessions = services.sessions | {p.pid for p in services.processes.values()}
    procs = [p for p in services.processes.values() if p.poll() is None]
    _signal_groups(_session_groups(sessions) | {p.pid for p in procs}, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
    # stragglers: task processes (own groups, same sessions) that outlived the grace period
    while (left := _session_groups(sessions)) and time.monotonic() < deadline:
        time.sleep(0.5)
    _signal_groups(left, signal.SIGKILL)
    # SIGKILL is asynchronous: return once the kernel has taken them down
    settle = time.monotonic() + 10
    while _session_groups(sessions) and time.monotonic() < settle:
        time.sleep(0.2)
