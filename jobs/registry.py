"""The pipeline registry: one module per pipeline in ``jobs/pipelines/``, each exporting ``JOB``.

A ``PipelineJob`` is frozen configuration: the windowlib ``Pipeline``, where its input lives
(``SourceSpec``, relative to a data root), its watermark strategy, its schedule (any cron
expression Airflow's ``CronDataIntervalTimetable`` accepts, presets and ``MON-FRI`` included, or
a positive ``timedelta`` as ``DeltaDataIntervalTimetable`` takes it: ``schedule_problem``), how
a data interval maps to partition values, how many earlier partitions a run re-scans for late
files (``lookback``), its expectations (GX Core 1.x objects, built lazily) and documentation
fields.

Invariants:

* Job names are ``[a-z0-9_]+`` and equal the pipeline's name and the module's name, so the
  checkpoint namespace, the output folder, the DAG id and the file name never disagree.
* Locations are derived, never configured per job: ``{root}/_windowlib/checkpoints`` and
  ``{root}/windows/{name}``; sources live under ``{root}/{source.path}``. Roots are ``file://``
  or ``s3://`` URIs checked by ``windowlib.state.uri.Uri``; relative paths in specs may not
  escape the root (no ``..``, no leading ``/``).
* Importing this module is cheap: Spark, GX and the flights data load only when used.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pendulum

from windowlib.core.errors import DefinitionError, InputError
from windowlib.core.pipeline import Pipeline
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.state.uri import Uri  # light: the DAG files parse with the registry

__all__ = ["PipelineJob", "SourceSpec", "default_root", "get", "registry", "validate_root"]

REPO = Path(__file__).resolve().parent.parent
_NAME = re.compile(r"[a-z0-9_]+")
# job names become DAG ids ``windowlib_<name>``: these would collide with the shared DAGs
RESERVED_NAMES = frozenset({"backfill", "maintenance"})
_SEGMENT = re.compile(r"[A-Za-z0-9_.=-]+")
_FORMATS = ("parquet", "csv", "json")
# partition value format (pendulum tokens, UTC) -> the time one partition covers
_PARTITION_FORMATS = {"YYYY-MM-DDTHH": "hour", "YYYY-MM-DD": "day"}


def _relative_path(path: object, what: str) -> str:
    """A ``/``-separated path inside a root: no ``..``, no empty or absolute parts."""
    if not isinstance(path, str) or not path or path.startswith("/"):
        raise DefinitionError(f"{what} must be a relative path inside the data root, got "
                              f"{path!r}", code="ARGUMENT_INVALID")
    for part in path.split("/"):
        if part in ("", ".", "..") or not _SEGMENT.fullmatch(part):
            raise DefinitionError(f"{what} {path!r}: invalid path segment {part!r} (letters, "
                                  "digits, '_', '-', '.', '='; no '..')", code="ARGUMENT_INVALID")
    return path


def schedule_problem(schedule: object) -> str | None:
    """Why Airflow would refuse ``schedule`` as the cron expression of a
    ``CronDataIntervalTimetable`` (``None``: it accepts it — presets such as ``@hourly``, names
    and ranges such as ``MON-FRI``, ``L``, 6-field expressions...), or a ``timedelta`` as the
    interval of a ``DeltaDataIntervalTimetable`` (positive).

    Airflow decides: its timetable resolves its presets and validates with ``croniter``. An
    expression ``croniter`` accepts as given is accepted by Airflow as well, so Airflow itself
    (slow to import outside a DAG process) is asked only about the others (``@quarterly``) —
    or about every expression when it is loaded already. Without Airflow installed, a schedule
    ``croniter`` cannot check is accepted (no DAG is built there)."""
    if isinstance(schedule, timedelta):
        return None if schedule > timedelta(0) else \
            f"a timedelta schedule must be positive, not {schedule}"
    if not isinstance(schedule, str) or not schedule.strip():
        return "a cron expression string or a timedelta is required"
    if schedule.strip() in ("@once", "@continuous"):
        return "it has no data intervals"
    if "airflow" not in sys.modules:
        try:
            from croniter import croniter
        except ImportError:
            croniter = None
        if croniter is not None:
            try:
                croniter(schedule)
                return None
            except (ValueError, KeyError, TypeError):
                pass   # perhaps an Airflow preset: Airflow decides below
    try:
        from airflow.sdk import CronDataIntervalTimetable
    except ImportError:
        return None
    try:
        CronDataIntervalTimetable(schedule, timezone="UTC").validate()
    except Exception as exc:   # AirflowTimetableInvalid and what croniter raises
        return str(exc) or type(exc).__name__
    return None


def validate_root(uri: object) -> str:
    """A root URI in normal form: ``file:///absolute/path`` or ``s3://bucket[/prefix]``
    (``s3a://`` accepted), without a trailing slash — parsed by the one URI type,
    :class:`windowlib.state.uri.Uri`.

    Raises ``InputError(URI_INVALID)`` for anything else (plain paths, other schemes, ``..``
    segments also when percent-encoded, credentials or query strings — never echoed) and for
    the file-system root ``file:///``."""
    root = Uri.parse(uri)
    if root.scheme == "file" and not root.key:
        raise InputError("root file:/// (the file system root) is not allowed",
                         code="URI_INVALID")
    return str(root)


def default_root() -> str:
    """``$WINDOWLIB_ROOT`` when set, else ``file://<repo>/.local/lake`` (validated)."""
    env = os.environ.get("WINDOWLIB_ROOT")
    return validate_root(env if env else str(Uri.from_path(REPO / ".local" / "lake")))


@dataclass(frozen=True)
class SourceSpec:
    """Where a job's input lives, relative to the data root: ``{root}/{path}``, partitioned by
    ``partition`` (hive style ``partition=value`` folders), in ``format``; ``order_by`` names
    the arrival-order columns inside a partition (e.g. an ingestion sequence number)."""

    path: str
    partition: str
    format: str = "parquet"
    order_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _relative_path(self.path, "source path")
        if not isinstance(self.partition, str) or not re.fullmatch(r"[A-Za-z_]\w*",
                                                                   self.partition):
            raise DefinitionError(f"partition column must be a column name, got "
                                  f"{self.partition!r}", code="ARGUMENT_INVALID")
        if self.format not in _FORMATS:
            raise DefinitionError(f"source format must be one of {', '.join(_FORMATS)}, got "
                                  f"{self.format!r}", code="ARGUMENT_INVALID")
        object.__setattr__(self, "order_by", tuple(self.order_by))

    def uri(self, data_root: str) -> str:
        return f"{validate_root(data_root)}/{self.path}"

    def source_for(self, data_root: str) -> Any:
        """The ``windowlib.PartitionedSource`` of this spec under ``data_root``."""
        try:
            from windowlib.runs.source import PartitionedSource
        except ImportError:  # exported at top level once windowlib.runs lands
            import windowlib

            PartitionedSource = windowlib.PartitionedSource
        kwargs: dict[str, Any] = {"partition": self.partition, "format": self.format}
        if self.order_by:
            params = inspect.signature(PartitionedSource).parameters
            if "order_by" in params:
                kwargs["order_by"] = self.order_by
        return PartitionedSource(self.uri(data_root), **kwargs)


@dataclass(frozen=True)
class PipelineJob:
    """One registered pipeline and everything needed to schedule, run and audit it."""

    name: str
    pipeline: Pipeline
    source: SourceSpec
    watermark: WatermarkStrategy
    schedule: str | timedelta = "0 * * * *"   # cron (presets included) or a timedelta
    partition_format: str = "YYYY-MM-DDTHH"
    lookback: int = 0
    expectations: Callable[[], Sequence[Any]] | None = None
    result_schema: str | None = None
    description: str = ""
    tags: tuple[str, ...] = ()
    owner: str = "windowlib"
    retain_versions: int = 3
    run_deadline: timedelta | None = None   # Airflow deadline alert; None: 2 h after queued

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise DefinitionError(f"job name must match [a-z0-9_]+, got {self.name!r}",
                                  code="NAME_INVALID")
        if not isinstance(self.pipeline, Pipeline):
            raise DefinitionError(f"job {self.name!r}: pipeline must be a windowlib Pipeline",
                                  code="ARGUMENT_INVALID")
        if self.name in RESERVED_NAMES:
            raise DefinitionError(f"job name {self.name!r} is reserved (the DAG "
                                  f"windowlib_{self.name} exists); choose another",
                                  code="NAME_INVALID")
        if self.pipeline.name != self.name:
            raise DefinitionError(f"job {self.name!r} wraps pipeline {self.pipeline.name!r}; "
                                  "the names must be equal", code="NAME_INVALID")
        self.pipeline.compile()  # a registered pipeline must be complete (window + function)
        if not isinstance(self.source, SourceSpec):
            raise DefinitionError(f"job {self.name!r}: source must be a SourceSpec",
                                  code="ARGUMENT_INVALID")
        if not isinstance(self.watermark, WatermarkStrategy):
            raise DefinitionError(f"job {self.name!r}: watermark must be a windowlib watermark "
                                  "strategy", code="ARGUMENT_INVALID")
        problem = schedule_problem(self.schedule)
        if problem is not None:
            raise DefinitionError(f"job {self.name!r}: schedule {self.schedule!r} is not a "
                                  f"schedule with data intervals Airflow accepts ({problem}); "
                                  "e.g. '0 * * * *', '@hourly', '0 9 * * MON-FRI', "
                                  "timedelta(minutes=30)", code="ARGUMENT_INVALID")
        if self.partition_format not in _PARTITION_FORMATS:
            raise DefinitionError(f"job {self.name!r}: partition_format must be one of "
                                  f"{', '.join(_PARTITION_FORMATS)}, got "
                                  f"{self.partition_format!r}", code="ARGUMENT_INVALID")
        if isinstance(self.lookback, bool) or not isinstance(self.lookback, int) \
                or self.lookback < 0:
            raise DefinitionError(f"job {self.name!r}: lookback must be an int >= 0",
                                  code="ARGUMENT_INVALID")
        if self.expectations is not None and not callable(self.expectations):
            raise DefinitionError(f"job {self.name!r}: expectations must be a callable "
                                  "returning GX expectations", code="ARGUMENT_INVALID")
        if self.result_schema is not None and (not isinstance(self.result_schema, str)
                                               or not self.result_schema.strip()):
            raise DefinitionError(f"job {self.name!r}: result_schema must be a DDL string",
                                  code="ARGUMENT_INVALID")
        if isinstance(self.retain_versions, bool) or not isinstance(self.retain_versions, int) \
                or self.retain_versions < 1:
            raise DefinitionError(f"job {self.name!r}: retain_versions must be an int >= 1 "
                                  "(how many recent versions keep their state snapshots)",
                                  code="ARGUMENT_INVALID")
        if self.run_deadline is not None and (not isinstance(self.run_deadline, timedelta)
                                              or self.run_deadline <= timedelta(0)):
            raise DefinitionError(f"job {self.name!r}: run_deadline must be a positive "
                                  "datetime.timedelta (or None)", code="ARGUMENT_INVALID")
        object.__setattr__(self, "tags", tuple(self.tags))

    # --- locations ------------------------------------------------------------------------
    def locations(self, root_uri: str) -> tuple[str, str]:
        """``(checkpoint_uri, output_uri)`` under ``root_uri``."""
        root = validate_root(root_uri)
        return f"{root}/_windowlib/checkpoints", f"{root}/windows/{self.name}"

    def source_for(self, root_uri: str) -> Any:
        """The job's ``PartitionedSource`` under ``root_uri``."""
        return self.source.source_for(root_uri)

    # --- partitions -----------------------------------------------------------------------
    @property
    def partition_step(self) -> str:
        """``hour`` or ``day``: the time one partition covers."""
        return _PARTITION_FORMATS[self.partition_format]

    def partition_value(self, instant: Any) -> str:
        """The partition value (UTC) of the partition containing ``instant``."""
        return pendulum.instance(_utc(instant)).in_timezone("UTC").format(self.partition_format)

    def partition_range(self, start: Any, end: Any, lookback: int | None = None
                        ) -> tuple[str, str]:
        """``(first, last)`` partition values a run for the data interval ``[start, end)`` scans:
        the partitions of the interval, extended ``lookback`` (default: the job's) partitions
        back for files that landed late."""
        s, e = pendulum.instance(_utc(start)), pendulum.instance(_utc(end))
        if e <= s:
            raise DefinitionError(f"empty data interval [{s}, {e})", code="ARGUMENT_INVALID")
        back = self.lookback if lookback is None else lookback
        if isinstance(back, bool) or not isinstance(back, int) or back < 0:
            raise DefinitionError(f"lookback must be an int >= 0, got {back!r}",
                                  code="ARGUMENT_INVALID")
        first = s.subtract(**{self.partition_step + "s": back})
        last = e.subtract(microseconds=1)
        return self.partition_value(first), self.partition_value(last)

    def describe(self) -> dict[str, Any]:
        """Small JSON-able summary (for DAG docs and ``--dry-run``)."""
        return {
            "name": self.name, "description": self.description, "owner": self.owner,
            "tags": list(self.tags), "schedule": str(self.schedule),
            "source": {"path": self.source.path, "partition": self.source.partition,
                       "format": self.source.format, "order_by": list(self.source.order_by)},
            "partition_format": self.partition_format, "lookback": self.lookback,
            "watermark": self.watermark.describe(), "fingerprint": self.pipeline.fingerprint,
            "pipeline": self.pipeline.describe(), "result_schema": self.result_schema,
        }

    def build_expectations(self) -> list[Any]:
        """The job's own GX expectations (empty when it has none)."""
        return [] if self.expectations is None else list(self.expectations())


def _utc(value: Any) -> Any:
    import datetime as _dt

    if isinstance(value, str):
        return pendulum.parse(value, tz="UTC")
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=_dt.UTC)
    raise DefinitionError(f"expected a datetime or ISO string, got {value!r}",
                          code="ARGUMENT_INVALID")


_CACHE: dict[str, PipelineJob] = {}


def registry(package: str = "jobs.pipelines") -> dict[str, PipelineJob]:
    """Every job in ``package``: one module per pipeline, each exporting ``JOB``; sorted by name.

    Raises ``DefinitionError(PIPELINE_INVALID)`` when a module has no ``JOB`` or its job's name
    differs from the module name."""
    if package == "jobs.pipelines" and _CACHE:
        return dict(_CACHE)
    pkg = importlib.import_module(package)
    found: dict[str, PipelineJob] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.ispkg:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        job = getattr(module, "JOB", None)
        if not isinstance(job, PipelineJob):
            raise DefinitionError(f"{package}.{info.name} must export JOB = PipelineJob(...)",
                                  code="PIPELINE_INVALID")
        if job.name != info.name:
            raise DefinitionError(f"{package}.{info.name} exports job {job.name!r}; the module "
                                  "and job names must be equal", code="PIPELINE_INVALID")
        found[job.name] = job
    if package == "jobs.pipelines":
        _CACHE.update(found)
    return found


def get(name: str) -> PipelineJob:
    """The registered job ``name``; ``DefinitionError(PIPELINE_UNKNOWN)`` lists the known ones."""
    jobs = registry()
    if not isinstance(name, str) or name not in jobs:
        raise DefinitionError(f"unknown pipeline {name!r}; known pipelines: "
                              f"{', '.join(sorted(jobs))}", code="PIPELINE_UNKNOWN")
    return jobs[name]
