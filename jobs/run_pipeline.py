"""Run one registered pipeline incrementally: the ``spark-submit``-able entry point.

    python jobs/run_pipeline.py --pipeline NAME [--root URI] [--first P --last P]
                                [--run-id KEY] [--publish-on-failure] [--no-validate]
                                [--rebuild] [--dry-run] [--json] [--master URL]
    spark-submit --master spark://... jobs/run_pipeline.py --pipeline NAME --root s3://...
    python jobs/run_pipeline.py --master spark://127.0.0.1:7077 --pipeline NAME --root s3://...

It looks the job up in the registry (``jobs.registry``, or the module named by
``WINDOWLIB_REGISTRY``), gets a SparkSession (the one ``spark-submit`` configured, a Spark
Connect session when ``SPARK_REMOTE`` is set, else a new one on ``--master``, default
``local[2]``), ships windowlib and the registry's package to the executors when the master is
a cluster (``windowlib.engines.spark.shipping``) and runs the job through
``windowlib.runs.operations`` (an incremental run with the job's GX gate, or ``--rebuild``: a new
state generation over ``--first..--last``, or over every partition without them) with the
job's source, checkpoint and output locations under ``--root`` (default ``$WINDOWLIB_ROOT`` or
``file://<repo>/.local/lake``).

``--run-id`` is the idempotency key (the DAGs pass ``{dag_id}:{run_id}@v{parent version}``):
a retry of a run whose commit already succeeded publishes nothing and exits 0.

Exit codes, as the CLI's (``windowlib.core.errors.exit_code``; ``docs/errors.md``): 0 success
(also "nothing new"); 1 the run failed, or its validation failed and nothing was published (the
message names the failed expectations and the Data Docs; rerun with ``--publish-on-failure`` to
publish anyway, recorded in the commit), or it could not be validated (``QUALITY_UNAVAILABLE``;
``--no-validate`` turns the gate off explicitly); 2 a user error (bad arguments, unknown
pipeline, invalid definition or input, a checkpoint that needs ``--rebuild``). Errors print
``[CODE] message`` on stderr; tracebacks only for unexpected failures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (spark-submit jobs/run_pipeline.py)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from windowlib.core.errors import EXIT_FAILED, EXIT_OK, DefinitionError, WindowlibError, exit_code


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="run_pipeline.py",
        description="Run one registered windowlib pipeline incrementally (new files only).")
    parser.add_argument("--pipeline", required=True, help="registered pipeline name")
    parser.add_argument("--root", default=None,
                        help="lake root URI (file:///... or s3://bucket/prefix); default "
                             "$WINDOWLIB_ROOT or file://<repo>/.local/lake")
    parser.add_argument("--first", default=None, help="first partition value to scan")
    parser.add_argument("--last", default=None, help="last partition value to scan")
    parser.add_argument("--run-id", default=None,
                        help="idempotency key of the run (a retry after a successful commit "
                             "is a no-op)")
    parser.add_argument("--publish-on-failure", nargs="?", const="true", default="false",
                        choices=("true", "false"),
                        help="publish even when the expectations fail (recorded in the "
                             "commit); a bare flag means true")
    parser.add_argument("--no-validate", action="store_true",
                        help="turn the job's GX gate off (recorded as validation: off); "
                             "without it a run that cannot be validated publishes nothing")
    parser.add_argument("--rebuild", action="store_true",
                        help="start a new state generation over the range, or over every "
                             "partition without --first/--last (published when complete)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would run; start no Spark session")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--master", default=None,
                        help="Spark master of a new session (local[N], spark://host:port, "
                             "yarn, k8s://...); default local[2]. Ignored under spark-submit "
                             "(its --master wins) and with SPARK_REMOTE")
    return parser.parse_args(argv)


def _partitions(job: Any, first: str | None, last: str | None) -> tuple[str, str] | None:
    if first is None and last is None:
        return None
    if first is None or last is None:
        raise DefinitionError("--first and --last go together", code="ARGUMENT_INVALID")
    from windowlib.runs.operations import check_job_range

    check_job_range(job, first, last)     # the one partition-range rule (no Spark needed)
    return first, last


def plan(args: argparse.Namespace) -> dict[str, Any]:
    """Validate the arguments and resolve everything a run needs (no Spark)."""
    from jobs import registry
    from windowlib.runs.operations import get_job

    job = get_job(args.pipeline)     # honours WINDOWLIB_REGISTRY, like the DAGs
    root = registry.validate_root(args.root) if args.root else registry.default_root()
    checkpoint, output = job.locations(root)
    return {"job": job, "root": root, "source_uri": job.source.uri(root),
            "checkpoint": checkpoint, "output": output,
            "partitions": _partitions(job, args.first, args.last), "rebuild": args.rebuild,
            "run_id": args.run_id, "publish_on_failure": args.publish_on_failure == "true",
            "validate": not args.no_validate, "master": _master(args.master)}


def _master(master: str | None) -> str | None:
    """``--master`` checked for form (Spark itself rejects unknown masters later)."""
    if master is None:
        return None
    if not re.fullmatch(r"(local(\[(\d+|\*)(,\d+)?\])?|yarn|(spark|k8s|mesos)://\S+)", master):
        raise DefinitionError(f"--master {master!r} is not local[N], yarn, spark://host:port or "
                              "k8s://...", code="ARGUMENT_INVALID")
    return master


def _session(master: str | None = None) -> Any:
    from windowlib.engines.spark.session import get_or_create_session

    if os.environ.get("PYSPARK_GATEWAY_PORT") and not os.environ.get("SPARK_REMOTE"):
        # launched by spark-submit: keep its master and configuration
        from pyspark.sql import SparkSession

        SparkSession.builder.getOrCreate()
    return get_or_create_session(master or "local[2]", app_name="windowlib-run-pipeline")


def run(resolved: dict[str, Any]) -> Any:
    """One incremental run (or a rebuild over the range) of the resolved job; its summary."""
    from windowlib.runs.operations import backfill_job, run_job

    job, root, parts = resolved["job"], resolved["root"], resolved["partitions"]
    run_id, validate = resolved.get("run_id"), resolved.get("validate", True)
    spark = _session(resolved.get("master"))
    if resolved["rebuild"]:
        first, last = parts or (None, None)
        return backfill_job(job, root, first, last, rebuild=True, spark=spark, run_id=run_id,
                            validate=validate)
    return run_job(job, root, partitions=parts, spark=spark, run_id=run_id, validate=validate,
                   publish_on_failure=bool(resolved.get("publish_on_failure")))


def summary_dict(summary: Any) -> dict[str, Any]:
    """A JSON-able dict of a run summary (dataclass, ``to_dict()`` or plain object)."""
    if hasattr(summary, "to_dict"):
        return dict(summary.to_dict())
    if dataclasses.is_dataclass(summary) and not isinstance(summary, type):
        return dataclasses.asdict(summary)
    if isinstance(summary, dict):
        return dict(summary)
    return {k: v for k, v in vars(summary).items() if not k.startswith("_")}


def _describe_plan(resolved: dict[str, Any]) -> dict[str, Any]:
    job = resolved["job"]
    first_last = resolved["partitions"]
    return {"pipeline": job.name, "dry_run": True, "root": resolved["root"],
            "source": resolved["source_uri"], "partition": job.source.partition,
            "format": job.source.format, "checkpoint": resolved["checkpoint"],
            "output": resolved["output"],
            "partitions": None if first_last is None else list(first_last),
            "rebuild": resolved["rebuild"], "validate": resolved["validate"],
            "watermark": job.watermark.describe(),
            "fingerprint": job.pipeline.fingerprint, "schedule": job.schedule}


def _print(data: dict[str, Any], as_json: bool, title: str) -> None:
    if as_json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
        return
    print(title)
    for key, value in data.items():
        print(f"  {key:<18} {value}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        resolved = plan(args)
        if args.dry_run:
            _print(_describe_plan(resolved), args.json, f"dry run: {args.pipeline}")
            return EXIT_OK
        summary = summary_dict(run(resolved))
        _print(summary, args.json, f"run of {args.pipeline}")
        from windowlib.runs.operations import blocked_message, is_blocked

        if is_blocked(summary.get("status")):
            print(blocked_message(args.pipeline, summary.get("validation"),
                                  "rerun with --publish-on-failure"), file=sys.stderr)
            return EXIT_FAILED
        return EXIT_OK
    except WindowlibError as exc:
        print(str(exc), file=sys.stderr)  # "[CODE] message"
        from windowlib.runs.operations import rebuild_line

        hint = rebuild_line(exc, ["python", "jobs/run_pipeline.py"], args.pipeline, args.root)
        if hint:
            print(hint, file=sys.stderr)
        return exit_code(exc)


if __name__ == "__main__":
    sys.exit(main())
