"""Several outputs written by ONE Spark job: a writer that routes rows by an output column.

A run has several outputs (firings, late, rejects, side outputs, new pane state). Writing each
with its own ``write_frame`` costs one Spark job per output plus a counting job per figure, and
each job pays Spark's scheduling latency. Here one ``mapInArrow`` pass writes them all.

Invariants:

- The *routed* frame has a string column ``__wl_out`` naming each row's output — or several,
  joined by ``+`` (``firings+state``: one row written to both) — and, for every output
  ``name``, its columns as ``name::column`` (other outputs' columns are ignored for that
  row). :func:`route_columns` builds such a projection; branches with different outputs are
  combined with ``unionByName(allowMissingColumns=True)``.
- Each output's rows go to Parquet files under the output's own location, named
  ``part-{task:05d}-{token}-{seq:03d}.parquet`` (unique per write, deterministic per task: a
  retried task attempt overwrites its own files), at most ``max_rows_per_file`` rows each, for
  ``file://`` and ``s3://`` alike (pyarrow inside the tasks, the filesystems of
  ``windowlib.state.taskfs``).
  An output without rows has no file. An output without a location is counted, not written.
- Tasks return small metadata rows only — one per file written (path, rows, bytes) and, per
  output, the row count and the sum of its ``total`` column for each group of its ``count_by``
  columns — so figures derived from them equal the rows a reader reads back. Data never passes
  through the driver.
- A row routed to an output that was not declared, or to none (null), fails the task (never
  dropped silently).
- The tasks always write with pyarrow, also where ``spark.windowlib.io.s3=spark`` makes
  ``write_frame`` use Spark's ``s3a`` writer; ``read_frame`` reads files of either writer.
- Each output's Spark schema (recorded in its ``FrameInfo``) is taken from the routed frame
  the tasks write (:func:`output_schemas`), so it cannot disagree with the files. That one
  analysis is needed anyway: over Spark Connect ``mapInArrow`` sends its input's column names,
  which the client learns from the frame's schema.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowlib.core.errors import DefinitionError, InputError, StateError
from windowlib.core.schema import sql_identifier
from windowlib.engines.spark.columns import map_in_arrow, struct_of
from windowlib.engines.spark.outputs import ROUTE_SEP
from windowlib.engines.spark.session import shuffle_partitions
from windowlib.runs.frames import _TOKEN, FrameFile, FrameInfo
from windowlib.state.partfiles import PartFiles
from windowlib.state.s3config import S3Settings
from windowlib.state.stores import open_store
from windowlib.state.taskfs import TaskFilesystem, task_filesystem
from windowlib.state.uri import Uri

__all__ = ["MULTI", "OUT", "OutputSpec", "RoutedWrite", "output_schemas", "route_columns",
           "routed_name", "write_routed"]

OUT = "__wl_out"
SEP = "::"
MULTI = ROUTE_SEP    # "firings+state": the row goes to both outputs
# the writer tasks' metadata rows (column, type)
_META = (("output", "string"), ("path", "string"), ("rows", "long"), ("bytes", "long"),
         ("sha256", "string"), ("task", "int"), ("grp", "string"), ("total", "long"))


def routed_name(output: str, column: str) -> str:
    """The routed frame's name of ``output``'s column ``column`` (``output::column``)."""
    return f"{output}{SEP}{column}"


def route_columns(output: str, columns: Sequence[tuple[str, Any]]) -> list[Any]:
    """``(column name, Column)`` pairs of ``output`` as routed columns (``output::name``)."""
    return [expr.alias(routed_name(output, name)) for name, expr in columns]


@dataclass(frozen=True)
class OutputSpec:
    """One output of a routed write.

    ``uri``: where its files go (``None``: counted only). ``columns``: the written columns in
    order. ``count_by``: columns (routed, not written unless also in ``columns``) whose value
    groups are counted; ``total``: a numeric column summed per group. ``nullable``: record
    every column as nullable in its schema (e.g. when some rows are written from a branch that
    leaves it null)."""

    uri: str | None
    columns: tuple[str, ...] = ()
    count_by: tuple[str, ...] = ()
    total: str | None = None
    nullable: bool = False


@dataclass
class RoutedWrite:
    """What :func:`write_routed` wrote: a ``FrameInfo`` per written output, per output
    ``{group values tuple: (rows, total)}`` (``()`` as the group when ``count_by`` is empty),
    and per output its written columns' Spark ``StructType`` (:func:`output_schemas`)."""

    frames: dict[str, FrameInfo] = field(default_factory=dict)
    counts: dict[str, dict[tuple, tuple[int, int]]] = field(default_factory=dict)
    schemas: dict[str, Any] = field(default_factory=dict)

    def rows(self, output: str) -> int:
        return sum(n for n, _ in self.counts.get(output, {}).values())

    def total(self, output: str) -> int:
        return sum(t for _, t in self.counts.get(output, {}).values())


def output_schemas(schema: Any, outputs: Mapping[str, OutputSpec]) -> dict[str, Any]:
    """Per output, the Spark ``StructType`` of its written columns, taken from the routed
    frame's ``schema`` (every field nullable for an output with ``nullable``)."""
    from pyspark.sql.types import StructField, StructType

    fields = {f.name: f for f in schema.fields}
    out = {}
    for name, spec in outputs.items():
        routed = [(c, fields[routed_name(name, c)]) for c in spec.columns]
        out[name] = StructType([StructField(c, f.dataType, spec.nullable or f.nullable)
                                for c, f in routed])
    return out


def write_routed(routed: Any, outputs: Mapping[str, OutputSpec], *,
                 settings: S3Settings | None = None, token: str | None = None,
                 max_rows_per_file: int = 1_000_000,
                 forward_credentials: bool | None = None,
                 tasks: int | None = None) -> RoutedWrite:
    """Write every output of ``routed`` in one Spark job; return files, counts and schemas.

    ``tasks``: at most this many writer tasks (``writer_tasks``: the shuffle partitions, at
    least the default parallelism; ``0`` keeps ``routed``'s partitioning).

    Raises ``StateError(FRAME_EXISTS)`` when an output location already holds files, and
    ``DefinitionError`` for a bad token, ``InputError`` for a missing column or locations on
    different schemes.
    Errors raised in the tasks (e.g. a user function failing upstream) propagate as Spark
    reports them.
    """
    token = token or uuid.uuid4().hex[:12]
    if not _TOKEN.match(token):
        raise DefinitionError(f"token must match [A-Za-z0-9_-]{{1,64}}, got {token!r}",
                              code="ARGUMENT_INVALID")
    if max_rows_per_file < 1:
        raise DefinitionError("max_rows_per_file must be >= 1", code="ARGUMENT_INVALID")
    names = list(routed.columns)
    present = set(names)
    if OUT not in present:
        raise InputError(f"the routed frame lacks {OUT!r}", code="COLUMN_MISSING")
    locs = {}
    plan: dict[str, tuple[str | None, list[tuple[str, str]], list[str], str | None]] = {}
    for name, spec in outputs.items():
        needed = [*spec.columns, *spec.count_by, *([spec.total] if spec.total else [])]
        missing = [c for c in needed if routed_name(name, c) not in present]
        if missing:
            raise InputError(f"output {name!r}: routed columns {missing} are missing",
                             code="COLUMN_MISSING")
        base = None
        if spec.uri is not None:
            loc = Uri.parse(spec.uri)
            existing = list(open_store(loc, settings).list(hidden=False))
            if existing:
                raise StateError(f"{loc} already holds {len(existing)} file(s)",
                                 code="FRAME_EXISTS")
            locs[name] = loc
            base = loc.arrow_path
        plan[name] = (base, [(routed_name(name, c), c) for c in spec.columns],
                      [routed_name(name, c) for c in spec.count_by],
                      routed_name(name, spec.total) if spec.total else None)
    schemes = {loc.scheme for loc in locs.values()}
    if len(schemes) > 1:
        raise InputError("write_routed: all output locations must use one scheme",
                         code="URI_INVALID")
    spark = routed.sparkSession
    fs = (task_filesystem(spark, next(iter(locs.values())), settings, forward_credentials)
          if locs else TaskFilesystem("file"))
    wanted = [OUT, *dict.fromkeys(c for base, cols, by, total in plan.values()
                                  for c in [*(r for r, _ in cols), *by,
                                            *([total] if total else [])])]
    # the same projection as select() by names, at one JVM call per column instead of four;
    # none when ``routed`` holds exactly these columns (the writer takes them by name): over
    # Spark Connect a projection's schema is analysed again on the server (the whole plan),
    # while ``routed``'s is known
    frame = (routed if len(names) == len(wanted) and present == set(wanted)
             else routed.selectExpr(*[sql_identifier(c) for c in wanted]))
    tasks = writer_tasks(spark) if tasks is None else tasks
    if tasks:
        # a union of branches has one partition per branch partition; every writer task
        # pays a Python worker round trip and writes its own small files, so merge them
        # (narrow: no shuffle)
        frame = frame.coalesce(tasks)
    meta = map_in_arrow(frame, _make_routed_writer(fs, plan, token, max_rows_per_file),
                        struct_of(_META)).collect()      # small: one row per file or group
    # ``routed.columns`` above analysed ``routed``: its schema is cached
    result = RoutedWrite(schemas=output_schemas(routed.schema, outputs))
    files: dict[str, list[tuple[int, str, FrameFile]]] = {n: [] for n in locs}
    counts: dict[str, dict[tuple, list[int]]] = {n: {} for n in outputs}
    for r in meta:
        name = r["output"]
        if r["path"] is not None:
            files[name].append((int(r["task"]), r["path"],
                                FrameFile(str(Uri.from_arrow_path(locs[name].scheme,
                                                                  r["path"])),
                                          int(r["rows"]), int(r["bytes"]), r["sha256"])))
        else:
            group = tuple(json.loads(r["grp"]))
            acc = counts[name].setdefault(group, [0, 0])
            acc[0] += int(r["rows"])
            acc[1] += int(r["total"] or 0)
    for name, loc in locs.items():
        schema_json = result.schemas[name].json()
        ordered = tuple(f for _, _, f in sorted(files[name], key=lambda x: (x[0], x[1])))
        result.frames[name] = FrameInfo(loc.uri, ordered, schema_json)
    result.counts = {n: {g: (v[0], v[1]) for g, v in c.items()} for n, c in counts.items()}
    return result


def writer_tasks(spark: Any) -> int:
    """Writer tasks for a routed write: ``spark.sql.shuffle.partitions``, at least the I/O
    parallelism of ``io_settings.io_parallelism`` (twice the default parallelism)."""
    from windowlib.runs.io_settings import io_parallelism

    return max(shuffle_partitions(spark) or 0, io_parallelism(spark, 1 << 30))


def _make_routed_writer(fs: TaskFilesystem,
                        plan: dict[str, tuple[str | None, list[tuple[str, str]], list[str],
                                              str | None]],
                        token: str, max_rows: int) -> Any:
    def write(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark import TaskContext

        from windowlib.core.errors import ExecutionError

        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx is not None else 0
        files = PartFiles(fs, task, token, max_rows)
        counts: dict[tuple[str, str], list[int]] = {}

        def count(name: str, table: Any, by: list[str], total: str | None) -> None:
            if not by:
                groups = [((), table.num_rows,
                           pc.sum(table[total]).as_py() if total else 0)]
            else:
                aggs = [([], "count_all")] + ([(total, "sum")] if total else [])
                grouped = table.group_by(by, use_threads=False).aggregate(aggs).to_pylist()
                groups = [(tuple(g[c] for c in by), g["count_all"],
                           g.get(f"{total}_sum") if total else 0) for g in grouped]
            for key, n, t in groups:
                acc = counts.setdefault((name, json.dumps(list(key), default=str)), [0, 0])
                acc[0] += int(n)
                acc[1] += int(t or 0)

        for batch in batches:
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            route = table[OUT]
            values = pc.unique(route).to_pylist()
            for value in values:
                if value is None:
                    raise ExecutionError("rows routed to no output (null)",
                                         code="OUTPUT_UNKNOWN")
                sub = table if len(values) == 1 else table.filter(pc.equal(route, value))
                for name in value.split(MULTI):     # a row may go to several outputs
                    if name not in plan:
                        raise ExecutionError(f"rows routed to undeclared output {name!r}",
                                             code="OUTPUT_UNKNOWN")
                    base, cols, by, total = plan[name]
                    count(name, sub, by, total)
                    if base is not None and cols:
                        out = sub.select([r for r, _ in cols]).rename_columns(
                            [c for _, c in cols])
                        for rb in out.combine_chunks().to_batches():
                            files.write(name, base, rb)
        done = [{"output": f["key"], "path": f["path"], "rows": f["rows"],
                 "bytes": f["bytes"], "sha256": f["sha256"], "task": task, "grp": None,
                 "total": None}
                for f in files.close()]
        for (name, grp), (n, t) in counts.items():
            done.append({"output": name, "path": None, "rows": n, "bytes": 0, "sha256": None,
                         "task": task, "grp": grp, "total": t})
        yield pa.RecordBatch.from_pylist(done, schema=pa.schema([
            ("output", pa.string()), ("path", pa.string()), ("rows", pa.int64()),
            ("bytes", pa.int64()), ("sha256", pa.string()), ("task", pa.int32()),
            ("grp", pa.string()), ("total", pa.int64())]))

    return write
