"""Compaction of the output tables' small files, so that a table's current version holds a
bounded number of files however many runs published into it. Spark lists every file of a
table each time the catalog names it (``runs/tables.register_tables``, at every publish), and
with more files than ``spark.sql.sources.parallelPartitionDiscovery.threshold`` it lists them
with a Spark job: without compaction every run would pay for all the runs before it.

Invariants:

- A table is compacted when it holds more than :func:`file_budget` files smaller than
  ``state.tables.SMALL_FILE_BYTES`` (half Spark's listing threshold, at most 16): its smallest
  files are merged into one, down to half the budget (``OutputTable.small_files``: size-tiered,
  the larger files are never rewritten). A row is so rewritten a few times, and the amortised
  cost per run does not depend on the number of past runs.
- Rows move only in Spark tasks: one task per table reads its small files and writes the
  merged one in one Python worker (``frames.arrow_rewrite``: no rows through the JVM); the
  driver gets one metadata row per written file. Every table that needs it: one Spark job.
- Compacted files are written inside the staging prefix of the commit the table shows
  (``tables/<output>/<staging>/compacted-<token>/``): ``gc`` treats them as that run's outputs
  (kept while their generation is current, removed with it).
- One Delta commit per table (``OutputTable.replace_files``): the same rows, the same
  checkpoint version. When a publish commits first, the compaction is dropped and its files
  deleted; the next publish compacts again. A compaction never fails a publish.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from functools import reduce
from typing import Any

from windowlib.runs.frames import FrameFile, arrow_rewrite, written_files
from windowlib.state.checkpoint import CheckpointStore
from windowlib.state.s3config import S3Settings
from windowlib.state.stores import open_store
from windowlib.state.tables import APP_ID, OutputTable, TableFile
from windowlib.state.uri import Uri

__all__ = ["LISTING_THRESHOLD_CONF", "compact_tables", "file_budget", "table_struct"]

log = logging.getLogger(__name__)
LISTING_THRESHOLD_CONF = "spark.sql.sources.parallelPartitionDiscovery.threshold"
MAX_SMALL_FILES = 16


def file_budget(spark: Any) -> int:
    """How many small files a table may hold before it is compacted: half of ``spark``'s
    parallel listing threshold (default 32), at most 16, at least 2."""
    try:
        threshold = int(spark.conf.get(LISTING_THRESHOLD_CONF))
    except Exception:       # unset or unreadable (a restricted Connect server)
        threshold = 32
    return max(2, min(MAX_SMALL_FILES, threshold // 2))


def table_struct(dt: Any) -> Any:
    """The Spark schema of a ``deltalake.DeltaTable``."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(pa.schema(dt.schema().to_arrow()))


def compact_tables(spark: Any, cs: CheckpointStore, tables: Mapping[str, OutputTable],
                   settings: S3Settings | None = None) -> dict[str, int]:
    """Compact the tables over budget that show ``cs``'s head (one Spark job for all);
    returns ``{output: files merged}`` for the ones compacted."""
    from pyspark.sql import functions as F

    head = cs.latest(check_fingerprint=False)
    if head is None:
        return {}
    budget = file_budget(spark)
    plans: dict[str, tuple[OutputTable, Any, list[TableFile], Uri]] = {}
    writes = []
    for name, table in tables.items():
        dt = table.current()
        if dt is None or dt.transaction_version(APP_ID) != head.version:
            continue
        small = table.small_files(dt, budget)
        if not small:
            continue
        token = uuid.uuid4().hex[:12]
        base = Uri.parse(table.file_uri(f"{head.record['staging']}/compacted-{token}"))
        files = [FrameFile(table.file_uri(f.path), f.rows, f.bytes) for f in small]
        writes.append(arrow_rewrite(spark, files, table_struct(dt), base, token,
                                    settings=settings).withColumn("output", F.lit(name)))
        plans[name] = (table, dt, small, base)
    if not writes:
        return {}
    rows = reduce(lambda a, b: a.unionByName(b), writes).collect()  # one row per file
    done: dict[str, int] = {}
    for name, (table, dt, small, base) in plans.items():
        written = written_files(base, [r for r in rows if r["output"] == name])
        added = [TableFile(str(table.relative(f.path)), f.bytes, f.rows) for f in written]
        if table.replace_files(dt, small, added) is None:
            log.info("compaction of %s dropped: another writer committed first", table.uri)
            open_store(base, settings).delete([f.path[len(base.uri) + 1:] for f in written])
            continue
        done[name] = len(small)
    return done
