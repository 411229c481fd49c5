"""``make airflow``: serve windowlib's DAGs in local Airflow 3 services.

    python -m infra.airflow_serving [--port 8080] [--home DIR] [--root URI] [--demo|--no-demo]

Serves the last ``make demo`` when there is one and no root was asked for — its lake and its
Airflow home (``choose_serving``) — and prints which lake it serves and how to switch; prints
the UI address and the login, supervises the services (``AirflowServices.check_alive``
restarts one that exited) and stops everything on Ctrl-C / SIGTERM. Starting, supervising and
stopping the services is ``infra/airflow_services.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from infra.airflow_services import REPO, ServiceExited, start, stop

DEMO_DIR = REPO / ".local" / "demo"


@dataclass(frozen=True)
class Serving:
    """What ``main()`` serves: the Airflow home, the lake root, extra environment and the line
    that tells the operator which lake this is and how to switch."""

    home: Path
    root: str | None
    env: dict[str, str]
    note: str


def choose_serving(root: str | None, home: str | None, demo: bool | None,
                   demo_dir: Path = DEMO_DIR) -> Serving:
    """An explicit ``--root`` (or ``$WINDOWLIB_ROOT``) wins; else, unless ``demo`` is False,
    the last ``make demo`` (its ``demo_summary.json``): its lake and its Airflow home, so its
    DAG runs, reports and Data Docs show; DAG start and end at the demo's last interval, so
    catch-up adds at most one run. Else ``.local/lake``. ``demo=True`` insists on the demo
    (``ValueError`` when there is none usable)."""
    default_home = Path(home) if home else REPO / ".local" / "airflow"
    explicit = root or os.environ.get("WINDOWLIB_ROOT")
    switch = ("switch with --root URI (or WINDOWLIB_ROOT), --demo / --no-demo; "
              "AIRFLOW_ARGS='...' for make airflow")
    if explicit and not demo:
        return Serving(default_home, explicit, {}, f"lake root: {explicit} (as asked; {switch})")
    summary_file = demo_dir / "demo_summary.json"
    found = None
    if demo is not False and summary_file.is_file() and (demo_dir / ".windowlib-demo").exists():
        found = json.loads(summary_file.read_text())
    usable = bool(found) and not found.get("s3") and Path(found.get("airflow_home", "")).is_dir()
    if usable:
        end = found["dag_end"]
        return Serving(Path(home) if home else Path(found["airflow_home"]), found["root"],
                       {"WINDOWLIB_DAG_START_DATE": end, "WINDOWLIB_DAG_END_DATE": end},
                       f"lake root: {found['root']} — the lake and DAG runs of the last "
                       f"`make demo` (Airflow home {found['airflow_home']}); {switch}")
    if demo:
        raise ValueError(f"no usable `make demo` under {demo_dir} (run `make demo` first; a "
                         "demo on S3 stops its server at the end and cannot be served)")
    lake = (REPO / ".local" / "lake").as_uri()
    why = " (the last `make demo` used S3, whose server is stopped)" if found else ""
    return Serving(default_home, None, {}, f"lake root: {lake} (the default{why}; {switch})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start Airflow 3 locally for windowlib.")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--home", default=None,
                        help="Airflow home (default .local/airflow, or the demo's)")
    parser.add_argument("--root", default=None,
                        help="WINDOWLIB_ROOT (default: the last `make demo`'s lake when there "
                             "is one, else .local/lake)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--demo", dest="demo", action="store_true", default=None,
                       help="serve the last `make demo` (its lake and DAG runs)")
    which.add_argument("--no-demo", dest="demo", action="store_false",
                       help="ignore the last `make demo`: serve .local/lake")
    args = parser.parse_args(argv)
    try:
        serving = choose_serving(args.root, args.home, args.demo)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("starting Airflow (api-server, scheduler, dag-processor); this takes ~1 min ...",
          flush=True)
    print(serving.note, flush=True)
    services = start(serving.home, args.port, serving.root, extra_env=serving.env)
    stopping = False

    def _stop(_sig: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    print(f"Airflow UI: {services.url}  login: {services.username} / {services.password}\n"
          f"lake root: {services.env['WINDOWLIB_ROOT']}  logs: {services.home / 'logs'}\n"
          "Ctrl-C stops all services.", flush=True)
    try:
        while not stopping:
            services.check_alive()
            time.sleep(1)
    except ServiceExited as exc:
        print(f"{exc}\nstopping the others", file=sys.stderr)
    finally:
        stop(services)
    return 0


if __name__ == "__main__":
    sys.exit(main())
