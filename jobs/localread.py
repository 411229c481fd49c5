"""Read a hive-partitioned data set into ``windowlib.testing.Bundle`` objects (pyarrow, no
Spark): one bundle per partition, in ascending partition order, elements in the source's
arrival order (``order_by`` columns), processing time = the end of the partition's hour.

For tests, small demos and the reference engine; the Spark jobs read with ``PartitionedSource``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jobs import _fs
from windowlib.testing import Bundle

_HOUR_MS = 3_600_000


def list_partitions(path: str | Path, partition: str = "arrival_hour") -> list[str]:
    """Partition values under ``path``, ascending."""
    from pyarrow import fs as pafs

    fs, base = _fs.filesystem_for(path)
    prefix = partition + "="
    return sorted(i.base_name[len(prefix):] for i in fs.get_file_info(pafs.FileSelector(base))
                  if i.type == pafs.FileType.Directory and i.base_name.startswith(prefix))


def read_partition(path: str | Path, value: str, partition: str = "arrival_hour",
                   order_by: Sequence[str] = ()) -> Any:
    """Every file of one partition as one pyarrow Table (partition column added), sorted by
    ``order_by`` (files in name order otherwise)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs

    fs, base = _fs.filesystem_for(path)
    folder = _fs.join(base, f"{partition}={value}")
    files = sorted(i.path for i in fs.get_file_info(pafs.FileSelector(folder))
                   if i.type == pafs.FileType.File and i.base_name.endswith(".parquet"))
    table = pa.concat_tables([pq.read_table(f, filesystem=fs) for f in files],
                             promote_options="default")
    if order_by:
        table = table.sort_by([(c, "ascending") for c in order_by])
    return table.append_column(partition, pa.array([value] * len(table), pa.string()))


def read_bundles(path: str | Path, partition: str = "arrival_hour",
                 order_by: Sequence[str] = (), first: str | None = None,
                 last: str | None = None) -> list[Bundle]:
    """Bundles of the partitions ``first..last`` (inclusive; default all) under ``path``.
    Partition values must be hours (``YYYY-MM-DDTHH``, UTC)."""
    from jobs.synthetic import partition_start_ms

    out = []
    for value in list_partitions(path, partition):
        if (first is not None and value < first) or (last is not None and value > last):
            continue
        rows = read_partition(path, value, partition, order_by).to_pylist()
        out.append(Bundle(rows, processing_time=partition_start_ms(value) + _HOUR_MS))
    return out
