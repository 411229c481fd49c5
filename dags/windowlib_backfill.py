"""``windowlib_backfill``: a manual DAG with a Params form to reprocess a partition range.

Params (titled, described): ``pipeline`` (enum from the registry), ``first``/``last``
partition values (``YYYY-MM-DD`` or ``YYYY-MM-DDTHH``, matching the pipeline's partition
format; empty: the pipeline's last complete day or hour), ``mode`` (``incremental``: files not
yet consumed, late data against the current state; ``rebuild``: a new state generation over the
range, published only after it validates), ``dry_run`` and an optional ``root``.

The ``backfill`` task calls ``windowlib.runs.operations.backfill_job`` and returns its summary
(one small XCom object); a published version emits the pipeline's output Asset event (through
the alias ``windowlib_backfill_outputs``, with the same ``extra`` as the pipeline DAG's
``publish``); the ``report`` task then regenerates the pipeline's HTML report. The idempotency
key is ``windowlib_backfill:{run_id}`` plus, for ``incremental``, the checkpoint version it
starts from (a retry after a commit plans nothing new); a retried ``rebuild`` whose generation
was already published is a no-op. Top-level imports: ``airflow.sdk`` and the standard library only.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, AssetAlias, Param

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _windowlib_factory import (
    BACKFILL_ALIAS,
    backfill_task,
    notify_failure,
    registry_module,
    report_task,
)
from _windowlib_lineage import lineage_task

PARTITION_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2})?$"
_NAMES = sorted(registry_module().registry()) or ["(none registered)"]

with DAG(
    dag_id="windowlib_backfill",
    schedule=None,
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["windowlib", "backfill"],
    doc_md=__doc__,
    params={
        "pipeline": Param(_NAMES[0], type="string", enum=_NAMES, title="Pipeline",
                          description="The registered pipeline to reprocess"),
        "first": Param(None, type=["null", "string"], pattern=PARTITION_PATTERN,
                       title="First partition",
                       description="First partition value, inclusive (YYYY-MM-DDTHH for hourly "
                                   "pipelines, YYYY-MM-DD for daily ones); empty: the "
                                   "pipeline's last complete hour or day"),
        "last": Param(None, type=["null", "string"], pattern=PARTITION_PATTERN,
                      title="Last partition",
                      description="Last partition value, inclusive; empty: the same as first"),
        "mode": Param("incremental", type="string", enum=["incremental", "rebuild"],
                      title="Mode",
                      description="incremental: late data against the current state; "
                                  "rebuild: a new state generation over the range"),
        "dry_run": Param(False, type="boolean", title="Dry run",
                         description="Only list what would run"),
        "root": Param(None, type=["null", "string"], pattern=r"^(file|s3)://\S+$",
                      title="Lake root",
                      description="Lake root URI; empty: $WINDOWLIB_ROOT or .local/lake"),
    },
) as dag:

    # the published version's event goes to the chosen pipeline's output Asset (the alias
    # resolves to it), exactly as that pipeline's own publish task emits it
    @lineage_task("backfill", task_id="backfill", retries=1,
                  outlets=[AssetAlias(BACKFILL_ALIAS)], on_failure_callback=notify_failure)
    def backfill(**context: Any) -> dict[str, Any]:
        return backfill_task(context)

    @lineage_task("report", task_id="report", retries=1, on_failure_callback=notify_failure)
    def report(summary: dict[str, Any]) -> str:
        return report_task(summary)

    report(backfill())
