"""Counting the Spark jobs a block of driver code launches (benchmarks, structural tests).

A small run's fixed cost is mostly per-job scheduling latency, so the job count of a run is a
figure worth tracking: unlike a timing it does not depend on the machine's load. ``spark_jobs``
runs the block in a fresh job group (restoring the caller's group afterwards) and reads the
group's job ids from ``SparkContext.statusTracker()``; jobs Spark launches on the block's
behalf in its own threads (broadcasts, adaptive query stages) inherit the group.

It also counts the Java classes Spark's code generator compiled during the block
(``JobCount.compiled``, from Spark's ``CodegenMetrics``): compiling is a per-run cost that a
job count does not show, and a warm run of an unchanged pipeline should compile none. That
counter is the JVM's, so a block counts what concurrent blocks compile too.

Classic sessions only: over Spark Connect there is no status tracker, and ``JobCount.jobs``
and ``JobCount.compiled`` are ``None``. The tracker keeps the last ``spark.ui.retainedJobs``
jobs (default 1000): read the count right after the block.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JobCount", "compiled_classes", "spark_jobs"]

# what ``setJobGroup`` sets, restored afterwards
_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


@dataclass
class JobCount:
    """The jobs of one ``spark_jobs`` block: ``jobs`` (``None`` when they cannot be counted)
    and, per job, the names of its stages (call sites: where a job comes from) and each
    stage's task count (``tasks``; 0 for a stage the tracker no longer knows), in stage id
    order (a job's result stage, e.g. its writer, comes last); ``compiled``, the generated
    classes compiled meanwhile."""

    group: str
    jobs: int | None = None
    compiled: int | None = None
    stages: list[list[str]] = field(default_factory=list)
    tasks: list[list[int]] = field(default_factory=list)


@contextlib.contextmanager
def spark_jobs(spark: Any, label: str = "windowlib") -> Iterator[JobCount]:
    """Count the Spark jobs launched inside the block (filled in when the block ends)."""
    count = JobCount(f"{label}-{uuid.uuid4().hex[:8]}")
    try:
        sc = spark.sparkContext
        previous = {name: sc.getLocalProperty(name) for name in _PROPERTIES}
        sc.setJobGroup(count.group, count.group)
    except Exception:       # Spark Connect: no SparkContext on the client
        yield count
        return
    compiled_before = compiled_classes(spark)
    try:
        yield count
    finally:
        if compiled_before is not None:
            count.compiled = compiled_classes(spark) - compiled_before
        tracker = sc.statusTracker()
        ids = sorted(tracker.getJobIdsForGroup(count.group))
        count.jobs = len(ids)
        for job in ids:
            info = tracker.getJobInfo(job)
            names, tasks = [], []
            for stage in sorted(info.stageIds if info is not None else []):
                stage_info = tracker.getStageInfo(stage)
                names.append(stage_info.name if stage_info is not None else "?")
                tasks.append(stage_info.numTasks if stage_info is not None else 0)
            count.stages.append(names)
            count.tasks.append(tasks)
        for name, value in previous.items():
            sc.setLocalProperty(name, value)


def compiled_classes(spark: Any) -> int | None:
    """How many classes Spark's code generator has compiled in this JVM so far (``None``
    over Spark Connect)."""
    try:
        metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
        return int(metrics.METRIC_COMPILATION_TIME().getCount())
    except Exception:       # Spark Connect: no JVM on the client
        return None
