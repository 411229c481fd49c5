"""``windowlib_maintenance``: daily checkpoint housekeeping of every registered pipeline.

One mapped ``gc`` task per pipeline calls ``windowlib.runs.operations.gc_job``: staging
prefixes that no commit names are removed once their version is taken or they have been idle
longer than ``grace_hours`` (a crashed run; default 6 h, so a run staged and awaiting its audit
or a retried publish keeps its files), state snapshots of versions older than the pipeline's
newest ``retain_versions`` are pruned, and superseded or abandoned rebuild generations are
removed. Commit records, published outputs and anything a reader can see are never touched.
Housekeeping lists the checkpoint's history, so it runs here once a day and not inside the
hourly pipeline DAGs. A failure in one pipeline's checkpoint fails only its mapped task.
Top-level imports: ``airflow.sdk`` and the standard library only.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, CronTriggerTimetable, Param

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _windowlib_factory import gc_task, notify_failure, registry_module
from _windowlib_lineage import lineage_task

_NAMES = sorted(registry_module().registry())

with DAG(
    dag_id="windowlib_maintenance",
    # daily at 03:30 UTC; a newly enabled DAG waits for the next slot instead of running at once
    schedule=CronTriggerTimetable("30 3 * * *", timezone="UTC", run_immediately=False),
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["windowlib", "maintenance"],
    doc_md=__doc__,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5),
                  "on_failure_callback": notify_failure},
    params={
        "grace_hours": Param(6, type="number", minimum=0,
                             description="Keep uncommitted stagings younger than this"),
        "root": Param(None, type=["null", "string"], pattern=r"^(file|s3)://\S+$",
                      description="Lake root URI; empty: $WINDOWLIB_ROOT or .local/lake"),
    },
) as dag:

    @lineage_task("gc", task_id="gc")
    def gc(pipeline: str, **context: Any) -> dict[str, Any]:
        return gc_task(pipeline, context)

    gc.expand(pipeline=_NAMES)
