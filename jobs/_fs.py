"""Where the sample-data generators write: a pyarrow file system and a base path for a root.

Roots are local paths, ``file://`` URIs or ``s3://bucket/prefix`` URIs, parsed by the one URI
type (``windowlib.state.uri.Uri``: no ``..``, also not percent-encoded; ``%`` is literal) and
checked as roots by ``jobs.registry.validate_root``. S3 goes through
``windowlib.state.s3config.S3Settings`` (endpoint and credentials from the standard AWS
configuration). Path parts given to :func:`join` pass the same segment rule.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.state.paths import segment_problem
from windowlib.state.uri import Uri


def filesystem_for(root: str | Path) -> tuple[Any, str]:
    """``(pyarrow FileSystem, base path)`` for ``root``. Raises ``InputError(URI_INVALID)``."""
    from pyarrow import fs as pafs

    from jobs.registry import validate_root

    loc = Uri.parse(validate_root(str(Uri.parse(str(root), paths=True))))
    if loc.scheme == "s3":
        from windowlib.state.s3config import S3Settings

        return S3Settings.resolve().arrow_filesystem(), loc.arrow_path
    return pafs.LocalFileSystem(), loc.arrow_path


def join(base: str, *parts: str) -> str:
    """``base/part/...``; each part is one or more ``/``-separated segments inside ``base``
    (no ``..``, ``.``, empty or absolute parts, also not percent-encoded), else
    ``DefinitionError(ARGUMENT_INVALID)``."""
    for part in parts:
        problems = [segment_problem(seg) for seg in part.split("/")] if part else ["empty"]
        problem = next((p for p in problems if p), None)
        if problem:
            raise DefinitionError(f"invalid path part {part!r}: {problem}",
                                  code="ARGUMENT_INVALID")
    return posixpath.join(base, *parts)


def exists(fs: Any, path: str) -> bool:
    from pyarrow import fs as pafs

    return fs.get_file_info(path).type != pafs.FileType.NotFound


def read_json(fs: Any, path: str) -> Any:
    if not exists(fs, path):
        return None
    with fs.open_input_stream(path) as f:
        try:
            return json.loads(f.read().decode())
        except ValueError:
            return None


def write_json(fs: Any, path: str, data: Any) -> None:
    with fs.open_output_stream(path) as f:
        f.write(json.dumps(data, indent=1, sort_keys=True).encode())


def write_table(fs: Any, path: str, table: Any) -> None:
    """Write ``table`` as one Parquet file at ``path`` (parents created)."""
    import pyarrow.parquet as pq

    fs.create_dir(posixpath.dirname(path), recursive=True)
    pq.write_table(table, path, filesystem=fs)


def write_partitions(fs: Any, base: str, table: Any, partition: str, file_name: str) -> list[str]:
    """Write ``table`` as one file per distinct ``partition`` value (hive layout, the partition
    column dropped from the files). Rows keep their order inside a partition; returns the file
    paths in partition order."""
    import numpy as np
    import pyarrow as pa

    values = np.asarray(table[partition].to_pylist(), dtype=object)
    order = np.argsort(values, kind="stable")
    table = table.take(pa.array(order)) if len(order) else table
    values = values[order]
    data = table.drop_columns([partition])
    paths = []
    starts = [0, *(np.flatnonzero(values[1:] != values[:-1]) + 1).tolist()] if len(values) \
        else []
    for j, start in enumerate(starts):
        stop = starts[j + 1] if j + 1 < len(starts) else len(values)
        path = join(base, f"{partition}={values[start]}", file_name)
        write_table(fs, path, data.slice(start, stop - start))
        paths.append(path)
    return paths
