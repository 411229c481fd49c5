"""Reading a source's files in Spark tasks (``PartitionedSource.read``, ``source.py``): one
file at a time with pyarrow, each row tagged with its partition value, file and row index; a
file that cannot be read becomes one row with the reason in ``__wl_error`` and the file's row
count in ``__wl_row`` when it can be known (a readable Parquet footer, a text file's lines),
else -1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from windowlib.runs.frames import arrow_target_schema, conform
from windowlib.state.taskfs import TaskFilesystem

__all__ = ["ERROR_COLUMN", "FILE_COLUMN", "LINE_COLUMN", "ROW_COLUMN", "make_line_reader",
           "make_parquet_reader"]

FILE_COLUMN = "__wl_file"
ROW_COLUMN = "__wl_row"
ERROR_COLUMN = "__wl_error"
LINE_COLUMN = "__wl_line"
_BATCH = 65_536


def _reason(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text[:500]


def make_parquet_reader(fs: TaskFilesystem, items: list[tuple[str, str, str]],
                         schema_json: str, large: bool) -> Any:
    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.sql.types import StructType

        target = arrow_target_schema(StructType.fromJson(json.loads(schema_json)), large)
        data_target = pa.schema(list(target)[:-4])
        filesystem = fs.open()
        for batch in batches:
            for i in batch.column(0).to_pylist():
                arrow_path, uri, value = items[i]
                rows = -1
                try:
                    with filesystem.open_input_file(arrow_path) as handle:
                        table = conform(pq.read_table(handle), data_target)
                    error = None
                except Exception as exc:
                    table, error = pa.table({f.name: pa.nulls(1, f.type)
                                             for f in data_target}, schema=data_target), exc
                    rows = _footer_rows(filesystem, arrow_path)
                n = table.num_rows
                table = (table.append_column(target.field(len(data_target)),
                                             pa.array([value] * n, target[-4].type))
                         .append_column(target.field(len(data_target) + 1),
                                        pa.array([uri] * n, target[-3].type))
                         .append_column(target.field(len(data_target) + 2),
                                        pa.array([rows] if error else range(n), pa.int64()))
                         .append_column(target.field(len(data_target) + 3),
                                        pa.array([_reason(error) if error else None] * n,
                                                 target[-1].type)))
                yield from table.cast(target).to_batches(max_chunksize=_BATCH)

    return read


def _footer_rows(filesystem: Any, arrow_path: str) -> int:
    """The row count in an unreadable Parquet file's footer, -1 when even that is unreadable."""
    import pyarrow.parquet as pq

    try:
        with filesystem.open_input_file(arrow_path) as handle:
            return int(pq.ParquetFile(handle).metadata.num_rows)
    except Exception:
        return -1


def make_line_reader(fs: TaskFilesystem, items: list[tuple[str, str, str]], header: bool,
                      names: list[str], sep: str, partition: str) -> Any:
    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = pa.schema([(LINE_COLUMN, pa.string()), (partition, pa.string()),
                            (FILE_COLUMN, pa.string()), (ROW_COLUMN, pa.int64()),
                            (ERROR_COLUMN, pa.string())])
        filesystem = fs.open()
        for batch in batches:
            for i in batch.column(0).to_pylist():
                arrow_path, uri, value = items[i]
                rows, lines = -1, []
                try:
                    with filesystem.open_input_file(arrow_path) as handle:
                        text = handle.read().decode("utf-8")
                    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
                    lines = [ln for ln in lines if ln.strip()]
                    if header and lines:
                        got = [c.strip().strip('"') for c in lines[0].split(sep)]
                        lines = lines[1:]
                        if got != names:
                            raise ValueError(f"CSV header {got} does not match the schema's "
                                             f"columns {names}")
                    error = None
                except Exception as exc:
                    rows = len(lines) if lines else -1     # lines were read: their count holds
                    lines, error = [None], _reason(exc)
                n = len(lines)
                cols = [pa.array(lines, pa.string()), pa.array([value] * n, pa.string()),
                        pa.array([uri] * n, pa.string()),
                        pa.array([rows] if error else range(n), pa.int64()),
                        pa.array([error] * n, pa.string())]
                yield from pa.Table.from_arrays(cols, schema=schema).to_batches(_BATCH)

    return read
