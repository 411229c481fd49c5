"""Per-bundle statistics from Parquet footers: the bundle plan without a scan of the data.

``bundles.plan_bundles`` needs, per arrival value, the row count and the largest *accepted*
event time (a valid timestamp and no null key; the future guard is applied by the plan).
When the input DataFrame is a plain Parquet scan, both are in the files' footers: the row
count of each row group, the max statistic of the event-time column and the null counts of
the key columns. ``footer_stats`` reads them with pyarrow on the driver (small metadata: one
footer per file, at most ``MAX_FOOTER_FILES`` files) and groups them by the arrival partition
value parsed from each file's path.

The same pass estimates each bundle's distinct keys from the key columns' encoded size
(``key_estimate``): a hint the native path uses to choose the shape of its plan, never a
figure of the results.

Invariant: the result is either exactly what the aggregate of ``plan_bundles`` would compute
(``{arrival: BundleStats(count, max_ts)}`` in ``__wl_arrival`` form; ``keys`` is the hint
above) or ``None`` with the reason, and the caller falls back to the aggregate. It falls
back whenever exactness is not evident:

- the optimized logical plan is not ``Relation [...] parquet`` (optionally under a ``Project``
  of plain columns): filters, computed or renamed columns, joins, other formats;
- the arrival column is not a Hive-style partition column (directory names are decoded with
  Spark's rule: ``%XX`` escapes) of type string, integer or date
  (timestamps partition values are formatted in the session time zone: not parsed here), or a
  partition value is null (``__HIVE_DEFAULT_PARTITION__``: the aggregate reports it);
- a file is not on the local file system, or ``MAX_FOOTER_FILES`` is exceeded;
- the event-time column is not ``TimestampType`` stored as INT64 ``TIMESTAMP(MILLIS|MICROS,
  UTC)`` nor an integer (ms) column stored as a plain signed integer (INT96 timestamps, which
  Spark writes by default, carry no statistics); a file written by Spark with legacy calendar
  rebasing;
- a row group lacks the max statistic of the event-time column (unless all its values are
  null) or the null count of a key column, or a key column has nulls there, or its max event
  time is outside ``core.time``'s accepted range (the largest accepted event time is then
  unknown).

Works over Spark Connect too (``inputFiles`` and ``explain`` are DataFrame API) when the client
can read the files' paths.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from windowlib.core.time import event_time_in_range

MAX_FOOTER_FILES = 5000
PAGE_OVERHEAD = 64     # bytes: a data page's header and its first run's (``key_estimate``)
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_RELATION = re.compile(r"^Relation (?:\w+\.)*\[[^\]]*\] parquet$")
_PROJECT = re.compile(r"^Project \[(.*)\]$")
_ATTRIBUTE = re.compile(r"^[^\s#,]+#\d+L?$")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_INTS = ("ByteType", "ShortType", "IntegerType", "LongType")


@dataclass(frozen=True)
class BundleStats:
    """One bundle's rows (``count``) and largest accepted event time in ms (``max_ts``;
    ``None`` when no row has a valid event time and non-null keys); ``keys``: an estimate of
    the distinct keys a task reading the bundle meets, summed over its row groups (``None``:
    unknown; ``key_estimate``) — a hint for choosing a plan's shape, never used for results."""

    count: int
    max_ts: int | None
    keys: int | None = None


class _Fallback(Exception):
    """Internal: the statistics cannot be read exactly; the message says why."""


def optimized_plan(df: Any) -> str:
    """The optimized logical plan of ``df`` as text (via ``explain``: works over Connect)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain(mode="extended")
    text = buf.getvalue()
    start = text.find("== Optimized Logical Plan ==")
    end = text.find("== Physical Plan ==")
    if start < 0 or end < start:
        return ""
    return text[start + len("== Optimized Logical Plan =="):end].strip()


def is_plain_parquet_scan(plan: str) -> bool:
    """``plan`` (``optimized_plan``) reads Parquet files and does nothing else (a projection
    of plain columns at most)."""
    lines = [line.strip() for line in plan.splitlines() if line.strip()]
    if len(lines) == 2:
        match = _PROJECT.match(lines[0])
        if not match or not all(_ATTRIBUTE.match(a.strip()) for a in match.group(1).split(",")):
            return False
        lines = [lines[1].removeprefix("+- ")]
    return len(lines) == 1 and bool(_RELATION.match(lines[0]))


def footer_stats(df: Any, *, arrival: str, timestamp: str, key_columns: Sequence[str]
                 ) -> tuple[dict[Any, BundleStats] | None, str]:
    """``(stats, how)``: per-bundle statistics from the Parquet footers of ``df``'s files, or
    ``(None, reason)`` when they cannot be exact (see the module docstring)."""
    try:
        return _footer_stats(df, arrival, timestamp, tuple(key_columns)), "parquet footers"
    except _Fallback as exc:
        return None, str(exc)


def _footer_stats(df: Any, arrival: str, timestamp: str, key_columns: tuple[str, ...]
                  ) -> dict[Any, BundleStats]:
    types = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    if timestamp not in types or arrival not in types:
        raise _Fallback("the event-time or arrival column is missing")
    arrival_type, ts_type = types[arrival], types[timestamp]
    if arrival_type not in ("StringType", "DateType", *_INTS):
        raise _Fallback(f"arrival column of type {arrival_type}")
    if ts_type not in ("TimestampType", *_INTS):
        raise _Fallback(f"event-time column of type {ts_type}")
    if not is_plain_parquet_scan(optimized_plan(df)):
        raise _Fallback("the input is not a plain Parquet scan (filters, computed columns or "
                        "another source)")
    files = input_files(df)
    if len(files) > MAX_FOOTER_FILES:
        raise _Fallback(f"{len(files)} files (more than {MAX_FOOTER_FILES})")
    totals: dict[Any, list] = {}
    for uri in files:
        path, value = _local_path_and_value(uri, arrival, arrival_type)
        _add(totals, value, _file_stats(path, arrival, timestamp, ts_type, key_columns))
    return _bundles(totals)


def _add(totals: dict[Any, list], value: Any, file: tuple[int, int | None, int]) -> None:
    """Add one file's ``(count, max_ts, keys)`` to its bundle's running totals."""
    count, max_ts, keys = file
    entry = totals.setdefault(value, [0, None, 0])
    entry[0] += count
    if max_ts is not None and (entry[1] is None or max_ts > entry[1]):
        entry[1] = max_ts
    entry[2] += keys


def _bundles(totals: dict[Any, list]) -> dict[Any, BundleStats]:
    # a partition whose files hold no rows is no bundle (the aggregate yields no row for it)
    return {a: BundleStats(n, m, k) for a, (n, m, k) in totals.items() if n > 0}


def input_files(df: Any) -> list[str]:
    """``df.inputFiles()`` in a few py4j round trips on a classic session: PySpark converts the
    Java array element by element (a round trip per file); here Hadoop's
    ``StringUtils.join(separator, String[])`` joins it on the JVM with NUL, which no path
    contains (plain ``df.inputFiles()`` where that is unavailable, and over Spark Connect,
    where it is one request)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:
        try:
            joined = df.sparkSession._jvm.org.apache.hadoop.util.StringUtils.join(
                "\0", jdf.inputFiles())
        except Exception:       # no Hadoop classes on the JVM: PySpark's own conversion
            joined = None
        if isinstance(joined, str):
            return joined.split("\0") if joined else []
    return list(df.inputFiles())


def _local_path_and_value(uri: str, arrival: str, arrival_type: str) -> tuple[str, Any]:
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        raise _Fallback(f"files on {parsed.scheme}:// (footers are read on the driver from "
                        "local files only)")
    path = unquote(parsed.path)
    values = [part[len(arrival) + 1:] for part in parsed.path.split("/")[:-1]
              if part.startswith(arrival + "=")]
    if len(values) != 1:
        raise _Fallback(f"{arrival!r} is not a partition column of every file")
    raw = _unescape_path_name(unquote(values[0]))
    if raw == NULL_PARTITION:
        raise _Fallback("a null arrival partition")
    try:
        if arrival_type == "StringType":
            return path, raw
        if arrival_type == "DateType":
            return path, (_dt.date.fromisoformat(raw) - _dt.date(1970, 1, 1)).days
        return path, int(raw)
    except ValueError as exc:
        raise _Fallback(f"partition value {raw!r} not parsed exactly") from exc


def _unescape_path_name(name: str) -> str:
    """Spark's ``unescapePathName``: each ``%XX`` (two hex digits) is the character XX."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name)


def files_bundle_stats(footers: Sequence[tuple[Any, Any]], *, timestamp: str, ts_type: str,
                       key_columns: Sequence[str]) -> tuple[dict[Any, BundleStats] | None, str]:
    """``(stats, how)`` from footers a caller has read already: ``footers`` are ``(arrival
    value in __wl_arrival form, pyarrow FileMetaData)`` of every file that feeds the rows,
    ``ts_type`` the Spark type name the event-time column is read as (``TimestampType`` or an
    integer type). The files must be read as they are stored (no filter; the caller drops a
    file whose data turns out unreadable and re-plans). ``(None, reason)`` as in
    ``footer_stats``."""
    if ts_type not in ("TimestampType", *_INTS):
        return None, f"event-time column of type {ts_type}"
    totals: dict[Any, list] = {}
    try:
        for value, meta in footers:
            _add(totals, value,
                 _metadata_stats(meta, None, timestamp, ts_type, tuple(key_columns)))
    except _Fallback as exc:
        return None, str(exc)
    return _bundles(totals), "parquet footers"


def _file_stats(path: str, arrival: str, timestamp: str, ts_type: str,
                key_columns: tuple[str, ...]) -> tuple[int, int | None, int]:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except OSError as exc:
        raise _Fallback(f"footer not readable ({type(exc).__name__})") from exc
    return _metadata_stats(meta, arrival, timestamp, ts_type, key_columns)


def _metadata_stats(meta: Any, arrival: str | None, timestamp: str, ts_type: str,
                    key_columns: tuple[str, ...]) -> tuple[int, int | None, int]:
    """One file's row count, largest accepted event time and estimated distinct keys (summed
    over its row groups; ``key_estimate``) from its footer (``arrival``: a partition column
    that must not be stored in the file)."""
    extra = meta.metadata or {}
    if any(k.startswith(b"org.apache.spark.legacy") for k in extra):
        raise _Fallback("a file written with legacy calendar rebasing")
    names = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if arrival is not None and arrival in names:
        raise _Fallback(f"{arrival!r} is also stored inside the files")
    try:
        ts_index = names.index(timestamp)
        key_indexes = [names.index(k) for k in key_columns]
    except ValueError as exc:
        raise _Fallback("a file lacks the event-time or a key column") from exc
    to_ms = _ms_converter(meta.schema.column(ts_index), ts_type)
    count, best, keys = 0, None, 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if group.num_rows == 0:
            continue
        count += group.num_rows
        keys += key_estimate(group, key_indexes)
        for k in key_indexes:
            stats = group.column(k).statistics
            if stats is None or not stats.has_null_count or stats.null_count:
                raise _Fallback("key null counts missing or non-zero")
        stats = group.column(ts_index).statistics
        if stats is None or not stats.has_null_count:
            raise _Fallback("event-time statistics missing")
        if not stats.has_min_max:
            if stats.null_count == group.num_rows:
                continue
            raise _Fallback("event-time statistics missing")
        value = to_ms(stats.max_raw)
        if not event_time_in_range(value):   # a reject: the max accepted event time is unknown
            raise _Fallback("event times outside the accepted range")
        best = value if best is None or value > best else best
    return count, best, keys


def key_estimate(group: Any, key_indexes: Sequence[int]) -> int:
    """The distinct keys of a row group (pyarrow ``RowGroupMetaData``), estimated from its
    footer: a hint for the shape of a plan (``native_default.prefers_shared_scan``), never
    used for results. A dictionary-encoded column chunk stores each value as an index of
    ``ceil(log2(distinct))`` bits, so the size per row of its data pages (the chunk without
    its dictionary page) gives the distinct values to within a factor of two; compression and
    runs make it lower, so the estimate errs towards fewer keys. Plain values (a writer that
    found the dictionary not worth it, as Spark's does for mostly distinct values, or one
    whose dictionary overflowed) take 32 bits and more per row: every row counts as
    distinct. ``PAGE_OVERHEAD`` is taken off first (in a file of a few rows, the page header
    would otherwise count as values). Several key columns: the product; at most the rows."""
    rows = max(group.num_rows, 1)
    total = 1
    for k in key_indexes:
        chunk = group.column(k)
        size = chunk.total_compressed_size
        start = chunk.dictionary_page_offset
        if chunk.has_dictionary_page and start is not None and chunk.data_page_offset > start:
            size -= chunk.data_page_offset - start
        bits = 8.0 * max(size - PAGE_OVERHEAD, 0) / rows
        total *= int(min(2.0 ** min(bits, 62.0), rows))
        if total >= rows:
            return rows
    return max(total, 1)


def _ms_converter(column: Any, ts_type: str) -> Any:
    """Raw Parquet max -> event time in ms, with ``bundles.event_time_columns``' rule."""
    physical = column.physical_type
    logical = json.loads(column.logical_type.to_json() or "{}") if column.logical_type else {}
    kind = logical.get("Type")
    if ts_type == "TimestampType":
        if physical != "INT64" or kind != "Timestamp" or not logical.get("isAdjustedToUTC"):
            raise _Fallback("event times not stored as INT64 UTC timestamps (INT96 has no "
                            "statistics)")
        unit = logical.get("timeUnit")
        if unit == "milliseconds":
            return int
        if unit == "microseconds":
            return lambda raw: int(raw) // 1000
        raise _Fallback(f"timestamp unit {unit}")
    if physical not in ("INT32", "INT64") or kind not in (None, "None", "Int"):
        raise _Fallback("integer event times stored with a logical type")
    if kind == "Int" and not logical.get("isSigned", True):
        raise _Fallback("unsigned integer event times")
    return int
