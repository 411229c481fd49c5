"""``windowlib`` command line: ``run``, ``status``, ``backfill``, ``validate``, ``report``,
``verify``, ``gc``.

Pipelines are looked up in the registry (``jobs.registry``, or the module named by
``WINDOWLIB_REGISTRY``); locations derive from ``--root`` (default: the registry's
``default_root()``, i.e. ``WINDOWLIB_ROOT`` or ``file://<project>/.local/lake``).

Exit codes: 0 success (also "nothing new"; a missing source folder is not nothing new but
``SOURCE_NOT_FOUND``, 2); for an error, ``windowlib.core.errors.exit_code``
decides (the registry, ``docs/errors.md``): 2 a user error (bad arguments, unknown pipeline,
changed definition...), 1 a failure — also a run blocked by validation, or one that cannot be
validated (``QUALITY_UNAVAILABLE``; ``--no-validate`` turns the gate off explicitly). Errors
print ``[CODE] message`` — never a traceback for a user mistake. ``--version`` prints the
installed distribution's version. Output: rich tables on stdout, at full width when stdout is
not a terminal (nothing cut at 80 columns); progress on stderr (a spinner on a terminal).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from windowlib.core.errors import (
    EXIT_FAILED,
    EXIT_OK,
    REGISTRY,
    WindowlibError,
    exit_code,
)
from windowlib.state.uri import Uri


def plain(text: str) -> str:
    """``text`` without RST inline markup (double backticks), for help texts."""
    return re.sub(r"``([^`]+)``", r"\1", text)


def version() -> str:
    """The installed distribution's version (package metadata), ``unknown`` when windowlib
    runs from a source tree that is not installed."""
    try:
        return importlib.metadata.version("windowlib")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="windowlib",
                                     description=plain(__doc__.split("\n\n")[0]))
    parser.add_argument("--version", action="version", version=f"windowlib {version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--pipeline", required=True, help="registered pipeline name")
        p.add_argument("--root", help="data/lake root URI (file:// or s3://)")
        p.add_argument("--json", action="store_true", help="print JSON instead of text")

    run = sub.add_parser("run", help="one incremental run (new files only)")
    common(run)
    run.add_argument("--first", help="first partition to scan (default: all)")
    run.add_argument("--last", help="last partition to scan")
    run.add_argument("--run-id", help="idempotency key (a retry of a committed run is a no-op)")
    run.add_argument("--no-validate", action="store_true",
                     help="turn the GX gate off (recorded as validation: off)")
    run.add_argument("--publish-on-failure", action="store_true",
                     help="publish even if validation fails (recorded in the commit)")
    run.add_argument("--dry-run", action="store_true", help="plan only: list new files")

    status = sub.add_parser("status", help="watermark, versions, state size, consumed files")
    common(status)

    backfill = sub.add_parser("backfill", help="process a range of partitions, or rebuild")
    common(backfill)
    backfill.add_argument("--first", help="first partition (with --last; neither: all)")
    backfill.add_argument("--last", help="last partition")
    backfill.add_argument("--rebuild", action="store_true",
                          help="new state generation from scratch, published when complete")
    backfill.add_argument("--dry-run", action="store_true",
                          help="plan only: list the partitions and files it would process")
    backfill.add_argument("--no-validate", action="store_true",
                          help="turn the GX gate off (recorded as validation: off)")

    validate = sub.add_parser("validate", help="validate the committed firings with GX")
    common(validate)

    report = sub.add_parser("report", help="write the HTML run report")
    common(report)
    report.add_argument("--out", help="output HTML path (default: under the root)")

    verify = sub.add_parser("verify", help="check the whole checkpoint and the published "
                            "outputs: commit chain, every file's size and checksum")
    common(verify)

    gc = sub.add_parser("gc", help="remove uncommitted leftovers and state snapshots beyond "
                        "retention from the checkpoint")
    common(gc)
    gc.add_argument("--grace-hours", type=float, default=None,
                    help="keep uncommitted stagings younger than this (default 6: a run in "
                    "progress, or staged and awaiting its audit)")
    gc.add_argument("--retain", type=int, default=None,
                    help="versions that keep their state snapshots (default: the job's "
                    "retain_versions)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except WindowlibError as exc:
        print(f"windowlib {args.command}: {exc}", file=sys.stderr)
        from windowlib.runs.operations import rebuild_line

        hint = rebuild_line(exc, ["windowlib", "backfill"], args.pipeline, args.root)
        if hint:
            print(hint, file=sys.stderr)
        return exit_code(exc)


def _dispatch(args: argparse.Namespace) -> int:
    from windowlib.runs import operations as ops
    from windowlib.runs.status import job_status

    job = ops.get_job(args.pipeline)
    root = str(Uri.parse(args.root)) if args.root else ops.default_root()
    if args.command == "status":
        status = job_status(job, root)
        shown = _emit(args, status)
        if "error_code" in status:     # a damaged or unreachable checkpoint is not "fine"
            print(f"windowlib status: {status['error']}", file=sys.stderr)
            entry = REGISTRY.get(status["error_code"])
            return entry.exit_code if entry is not None else EXIT_FAILED
        return shown
    if args.command == "report":
        return _report(args, job, root)
    if args.command == "validate":
        return _validate(args, job, root)
    if args.command == "verify":
        return _verify(args, ops.verify_job(job, root))
    if args.command == "gc":
        grace = ops.GC_GRACE_HOURS if args.grace_hours is None else args.grace_hours
        return _gc(args, ops.gc_job(job, root, grace_hours=grace, retain_versions=args.retain))
    with _progress(args) as say:
        if args.command == "run":
            parts = (args.first, args.last) if args.first or args.last else None
            summary = ops.run_job(job, root, partitions=parts, run_id=args.run_id,
                                  validate=not args.no_validate, dry_run=args.dry_run,
                                  publish_on_failure=args.publish_on_failure, progress=say)
        else:
            if (args.first is None) != (args.last is None):
                from windowlib.core.errors import DefinitionError

                raise DefinitionError("--first and --last go together (neither: every "
                                      "partition)", code="ARGUMENT_INVALID")
            summary = ops.backfill_job(job, root, args.first, args.last, rebuild=args.rebuild,
                                       validate=not args.no_validate, dry_run=args.dry_run,
                                       progress=say)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2, default=str))
    else:
        _print_summary(summary)
    if ops.is_blocked(summary.status):
        override = ("run again with --publish-on-failure" if args.command == "run"
                    else "fix the range's data (a rebuild publishes only what validates)")
        print(ops.blocked_message(job.name, summary.validation, override), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


class _progress:
    """A rich spinner with the current step (plain lines when not a terminal or --json)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.status: Any = None

    def __enter__(self) -> Any:
        if self.args.json or not sys.stderr.isatty():
            return lambda message: print(f"windowlib: {message}", file=sys.stderr)
        from rich.console import Console

        self.status = Console(stderr=True).status("starting")
        self.status.__enter__()
        return lambda message: self.status.update(message)

    def __exit__(self, *exc: Any) -> None:
        if self.status is not None:
            self.status.__exit__(*exc)


def _console() -> Any:
    """A rich console for stdout. Not a terminal (piped, redirected): no fixed 80-column
    width, so tables are as wide as their content and no cell is cut."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    return Console(width=_PIPED_WIDTH)


_PIPED_WIDTH = 10_000    # a bound, not a target: rich tables take only the width they need


def _print_summary(summary: Any) -> None:
    from rich.table import Table

    table = Table(title=f"{summary.pipeline} — {summary.status}", show_header=False)
    for line in summary.lines()[1:]:
        label, _, rest = line.strip().partition(" ")
        table.add_row(label, rest)
    _console().print(table)


def _emit(args: argparse.Namespace, data: dict[str, Any]) -> int:
    if args.json:
        print(json.dumps(data, indent=2, default=str))
        return 0
    from rich.table import Table

    console = _console()
    head = Table(title=f"{data['pipeline']}", show_header=False)
    for key, value in data.items():
        if key not in ("runs", "pipeline", "tables"):
            head.add_row(key, "\n".join(map(str, value)) if isinstance(value, list) else
                         str(value))
    console.print(head)
    for key, title in (("runs", "recent versions"), ("tables", "output tables")):
        if data.get(key):
            rows = Table(title=title)
            columns = list(dict.fromkeys(k for row in data[key] for k in row))
            for col in columns:
                rows.add_column(col)
            for row in data[key]:
                rows.add_row(*(str(row.get(c, "")) for c in columns))
            console.print(rows)
    return 0


def _verify(args: argparse.Namespace, report: Any) -> int:
    data = report.to_dict()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(f"{data['pipeline']}: {'intact' if report.ok else 'DAMAGED'} — "
              f"{data['versions']} version(s), {data['files']} file(s), {data['bytes']} bytes "
              "checked")
        for problem in data["problems"]:
            print(f"  - {problem}", file=sys.stderr)
    return EXIT_OK if report.ok else REGISTRY["CHECKPOINT_CORRUPT"].exit_code


def _gc(args: argparse.Namespace, done: dict[str, Any]) -> int:
    if args.json:
        print(json.dumps(done, indent=2))
        return 0
    print(f"{done['pipeline']}: removed {len(done['removed_stagings'])} uncommitted staging(s), "
          f"{len(done['pruned_snapshots'])} state snapshot(s) beyond the newest "
          f"{done['retain_versions']} version(s), {len(done['removed_generations'])} old "
          f"generation(s); {done['removed_objects']} object(s) deleted")
    return 0


def _validate(args: argparse.Namespace, job: Any, root: str) -> int:
    from windowlib.runs.operations import validator
    from windowlib.runs.outputs import read_firings
    from windowlib.runs.status import run_history

    _, output = job.locations(root)
    history = run_history(job, root)
    last = history[-1] if history else {}
    summary = {**last, "inputs": sum(r.get("inputs", 0) for r in history),
               "processed": sum(r.get("processed", 0) for r in history),
               "late": sum(r.get("late", 0) for r in history),
               "rejects": sum(r.get("rejects", 0) for r in history)}
    gate = validator(job)   # QUALITY_UNAVAILABLE (exit 1) when GX cannot run
    data = gate(read_firings(output), summary)
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        print("validation passed" if data["success"] else "validation FAILED")
        for line in data.get("failed", []):
            print(f"  - {line}")
    return EXIT_OK if data["success"] else EXIT_FAILED


def _report(args: argparse.Namespace, job: Any, root: str) -> int:
    from windowlib.quality import write_run_report
    from windowlib.runs.status import run_history

    out = args.out or _default_report_path(root, job.name)
    path = write_run_report(job.name, run_history(job, root), out)
    print(json.dumps({"report": str(path)}) if args.json else f"report: {path}")
    return 0


def _default_report_path(root: str, name: str) -> str:
    loc = Uri.parse(root)
    if loc.scheme != "file":
        from windowlib.core.errors import DefinitionError
        raise DefinitionError("for a non-local root pass --out PATH (a local file)",
                              code="ARGUMENT_INVALID")
    return loc.child(f"_windowlib/reports/{name}.html").arrow_path


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
