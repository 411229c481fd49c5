"""A small deterministic clickstream with late, out-of-order and bad data (pyarrow, no Spark).

``write_synthetic(path, hours=..., events_per_hour=..., ...)`` writes ``hours`` hourly
partitions ``arrival_hour=YYYY-MM-DDTHH`` (one ``part-00000.parquet`` each) under ``path``,
columns ``event_id`` (int64, the ingestion order: ascending inside and across partitions),
``key`` (string), ``ts`` (timestamp ms UTC) and ``value`` (int64, 1..100).

Invariants:

* Arrival times are spread over each partition's hour; an event's time is its arrival time
  minus a delay: 0-2 min (slightly out of order) for most, 10-60 min for ``late_fraction``
  (late, within typical allowed lateness), 2-6 h for ``very_late_fraction`` (beyond it).
* ``bad_rows`` rows per partition are bad: alternately a null ``ts`` and a null ``key``; they
  are counted in the returned info, never mixed with the good counts.
* Same parameters, same bytes (``numpy.random.Generator(PCG64(seed))``); a marker
  ``_synthetic.json`` names the parameters. A folder with anything but a previous synthetic
  build in it is never overwritten.
* ``land_late_files`` adds NEW files to an EXISTING partition (``late-0001.parquet``, ...),
  as a re-delivery would. Given the consuming pipeline's current ``watermark``,
  ``allowed_lateness`` and ``window`` size, the rows are placed so that a rerun shows LATE
  firings: ``n - too_late`` rows fall in windows that already closed (``max_ts <= watermark``)
  but are still within allowed lateness (``max_ts + lateness > watermark``), ``too_late`` rows
  in windows beyond it (late output). Without ``watermark`` event times lie up to
  ``max_delay`` before the partition's hour (late relative to the partition only). A later
  ``write_synthetic`` with the same parameters removes them again (pristine data).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads when data is generated, not when DAGs parse the registry
    import numpy as np

from jobs import _fs
from windowlib.core.errors import DefinitionError, InputError

__all__ = ["DATA_PATH", "PARTITION", "SyntheticInfo", "land_late_files", "late_event_times",
           "write_synthetic"]

DATA_PATH = "data/clickstream"
PARTITION = "arrival_hour"
MARKER = "_synthetic.json"
FORMAT_VERSION = 1
DEFAULT_START = "2024-03-01T00"
_HOUR_MS = 3_600_000
_MIN_MS = 60_000


@dataclass(frozen=True)
class SyntheticInfo:
    path: str
    partitions: list[str]
    rows: int
    bad_rows: int
    late_rows: int
    very_late_rows: int
    cached: bool


def _positive_int(value: Any, what: str, zero_ok: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero_ok else 1):
        raise DefinitionError(f"{what} must be an int >= {0 if zero_ok else 1}, got {value!r}",
                              code="ARGUMENT_INVALID")
    return value


def _fraction(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise DefinitionError(f"{what} must be in [0, 1], got {value!r}",
                              code="ARGUMENT_INVALID")
    return float(value)


def partition_value(hour_ms: int) -> str:
    return _dt.datetime.fromtimestamp(hour_ms / 1000, _dt.UTC).strftime("%Y-%m-%dT%H")


def partition_start_ms(value: str) -> int:
    try:
        start = _dt.datetime.strptime(value, "%Y-%m-%dT%H").replace(tzinfo=_dt.UTC)
    except (TypeError, ValueError) as exc:
        raise DefinitionError(f"partition value must look like 2024-03-01T05, got {value!r}",
                              code="ARGUMENT_INVALID") from exc
    return int(start.timestamp()) * 1000


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("event_id", pa.int64()), ("key", pa.string()),
                      ("ts", pa.timestamp("ms", tz="UTC")), ("value", pa.int64())])


def _events(rng: np.random.Generator, hour_ms: int, n: int, keys: int, late: float,
            very_late: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(arrival_ms, ts_ms, key_index, kind)`` sorted by arrival; kind 0/1/2 = normal,
    late, very late."""
    import numpy as np
    arrival = hour_ms + np.sort(rng.integers(0, _HOUR_MS, n))
    u = rng.random(n)
    kind = np.where(u < very_late, 2, np.where(u < very_late + late, 1, 0))
    delay = np.select(
        [kind == 0, kind == 1],
        [rng.integers(0, 2 * _MIN_MS, n), rng.integers(10 * _MIN_MS, 60 * _MIN_MS, n)],
        rng.integers(2 * _HOUR_MS, 6 * _HOUR_MS, n))
    key = np.minimum((keys * rng.random(n) ** 2).astype(np.int64), keys - 1)  # skewed
    return arrival, arrival - delay, key, kind


def write_synthetic(root_path: str | Path, hours: int = 6, events_per_hour: int = 200,
                    keys: int = 10, late_fraction: float = 0.05,
                    very_late_fraction: float = 0.01, bad_rows: int = 2, seed: int = 0,
                    start: str = DEFAULT_START) -> SyntheticInfo:
    """Write the clickstream under ``root_path`` (the dataset folder itself) once; see the
    module docstring. Returns what was written (or found, ``cached=True``)."""
    import numpy as np
    import pyarrow as pa

    hours = _positive_int(hours, "hours")
    events_per_hour = _positive_int(events_per_hour, "events_per_hour")
    keys = _positive_int(keys, "keys")
    bad_rows = _positive_int(bad_rows, "bad_rows", zero_ok=True)
    late, very_late = (_fraction(late_fraction, "late_fraction"),
                       _fraction(very_late_fraction, "very_late_fraction"))
    if late + very_late > 1:
        raise DefinitionError("late_fraction + very_late_fraction must be <= 1",
                              code="ARGUMENT_INVALID")
    start_ms = partition_start_ms(start)
    params = {"format_version": FORMAT_VERSION, "hours": hours, "seed": seed, "start": start,
              "events_per_hour": events_per_hour, "keys": keys, "late_fraction": late,
              "very_late_fraction": very_late, "bad_rows": bad_rows}
    fs, path = _fs.filesystem_for(root_path)
    marker = _fs.read_json(fs, _fs.join(path, MARKER))
    if marker is not None and marker.get("parameters") == params:
        if marker.get("late_files"):  # back to the pristine data set
            for file in marker["late_files"]:
                if _fs.exists(fs, file):
                    fs.delete_file(file)
            marker["late_files"] = []
            _fs.write_json(fs, _fs.join(path, MARKER), marker)
        return SyntheticInfo(path=path, cached=True, **marker["summary"])
    if _fs.exists(fs, path):
        from pyarrow import fs as pafs

        if marker is None and fs.get_file_info(pafs.FileSelector(path)):
            raise InputError(f"{path} is not empty and holds no synthetic data marker; "
                             "refusing to overwrite it", code="DATA_DIR_NOT_EMPTY")
        fs.delete_dir(path)
    rng = np.random.Generator(np.random.PCG64(seed))
    next_id, counts, parts = 0, {"rows": 0, "bad_rows": 0, "late_rows": 0, "very_late_rows": 0}, []
    for h in range(hours):
        hour_ms = start_ms + h * _HOUR_MS
        _, ts, key, kind = _events(rng, hour_ms, events_per_hour, keys, late, very_late)
        value = rng.integers(1, 101, events_per_hour)
        key_str = np.array([f"user{k}" for k in key], dtype=object)
        ts_obj = ts.astype(object)
        # bad rows replace evenly spaced events: null ts, null key, alternately
        for i, pos in enumerate(np.linspace(0, events_per_hour - 1, bad_rows, dtype=np.int64)
                                if bad_rows else []):
            if i % 2 == 0:
                ts_obj[pos] = None
            else:
                key_str[pos] = None
            kind[pos] = -1
        ids = np.arange(next_id, next_id + events_per_hour, dtype=np.int64)
        next_id += events_per_hour
        table = pa.table([ids, pa.array(key_str, pa.string()),
                          pa.array(ts_obj, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
                          value], schema=_schema())
        part = partition_value(hour_ms)
        _fs.write_table(fs, _fs.join(path, f"{PARTITION}={part}", "part-00000.parquet"), table)
        parts.append(part)
        counts["rows"] += events_per_hour
        counts["bad_rows"] += int((kind == -1).sum())
        counts["late_rows"] += int((kind == 1).sum())
        counts["very_late_rows"] += int((kind == 2).sum())
    summary = {"partitions": parts, **counts}
    _fs.write_json(fs, _fs.join(path, MARKER), {"parameters": params, "summary": summary,
                                                "late_files": []})
    return SyntheticInfo(path=path, cached=False, **summary)


def _instant_ms(value: Any) -> int:
    from windowlib.core.time import timestamp_ms

    if isinstance(value, bool):
        raise DefinitionError(f"watermark must be a time, got {value!r}", code="ARGUMENT_INVALID")
    try:
        return timestamp_ms(value)
    except InputError as exc:
        raise DefinitionError(f"watermark must be int ms, a datetime or an ISO-8601 string, got "
                              f"{value!r}", code="ARGUMENT_INVALID") from exc


def late_event_times(rng: np.random.Generator, n: int, watermark_ms: int, lateness_ms: int,
                     window_ms: int, too_late: int = 0) -> np.ndarray:
    """``n`` event times (ms) for a pipeline whose watermark stands at ``watermark_ms``: the
    first ``n - too_late`` in ``(W - lateness, W - window]`` (their window, of at most
    ``window_ms``, has closed but is within allowed lateness: a LATE firing), the rest in
    ``[W - lateness - window - 1 h, W - lateness - window]`` (beyond lateness: late output)."""
    import numpy as np
    if lateness_ms <= window_ms:
        raise DefinitionError(f"allowed lateness ({lateness_ms} ms) must exceed the window size "
                              f"({window_ms} ms) for rows that fire LATE", code="ARGUMENT_INVALID")
    within = watermark_ms - window_ms - rng.integers(0, lateness_ms - window_ms, n - too_late)
    beyond = watermark_ms - lateness_ms - window_ms - rng.integers(0, _HOUR_MS, too_late)
    return np.concatenate([within, beyond]).astype(np.int64)


def land_late_files(root_path: str | Path, partition: str, n: int = 20, seed: int = 0,
                    keys: int = 10, max_delay: str | int = 30 * _MIN_MS, *,
                    watermark: Any = None, allowed_lateness: Any = None, window: Any = None,
                    too_late: int = 0) -> str:
    """Add one new file of ``n`` late events to the EXISTING ``partition``; returns its path.

    With ``watermark`` (the consuming pipeline's current watermark: int ms, datetime or ISO
    string, e.g. ``job_status(...)["watermark"]``), ``allowed_lateness`` and ``window`` (its
    window size; durations as ``windowlib`` accepts them) the rows are placed by
    :func:`late_event_times`: ``n - too_late`` fire LATE on the next run, ``too_late`` go to
    the late output. Without ``watermark``, event times lie up to ``max_delay`` ms before the
    partition's hour. ``event_id`` values continue above every earlier id."""
    import numpy as np
    import pyarrow as pa

    from windowlib.core.time import duration_ms

    n = _positive_int(n, "n")
    keys = _positive_int(keys, "keys")
    max_delay = _positive_int(max_delay, "max_delay (ms)")
    too_late = _positive_int(too_late, "too_late", zero_ok=True)
    if too_late > n:
        raise DefinitionError(f"too_late ({too_late}) must be <= n ({n})",
                              code="ARGUMENT_INVALID")
    if watermark is None and (too_late or allowed_lateness is not None or window is not None):
        raise DefinitionError("allowed_lateness, window and too_late need the pipeline's "
                              "current watermark=", code="ARGUMENT_INVALID")
    if watermark is not None and (allowed_lateness is None or window is None):
        raise DefinitionError("watermark= needs the pipeline's allowed_lateness= and window=",
                              code="ARGUMENT_INVALID")
    hour_ms = partition_start_ms(partition)
    fs, path = _fs.filesystem_for(root_path)
    folder = _fs.join(path, f"{PARTITION}={partition_value(hour_ms)}")
    if not _fs.exists(fs, folder):
        raise InputError(f"partition {partition!r} does not exist under {path}; late files go "
                         "into existing partitions", code="DATA_MISSING")
    marker = _fs.read_json(fs, _fs.join(path, MARKER)) or {"late_files": []}
    k = len(marker.get("late_files", [])) + 1
    rng = np.random.Generator(np.random.PCG64([seed, k]))
    if watermark is None:
        ts = hour_ms - rng.integers(1, max_delay + 1, n)
    else:
        ts = late_event_times(rng, n, _instant_ms(watermark),
                              duration_ms(allowed_lateness, what="allowed_lateness"),
                              duration_ms(window, what="window"), too_late)
    key = [f"user{i}" for i in np.minimum((keys * rng.random(n) ** 2).astype(np.int64),
                                           keys - 1)]
    ids = np.arange(n, dtype=np.int64) + 1_000_000_000 * k
    table = pa.table([ids, pa.array(key, pa.string()),
                      pa.array(ts, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
                      rng.integers(1, 101, n)], schema=_schema())
    file = _fs.join(folder, f"late-{k:04d}.parquet")
    _fs.write_table(fs, file, table)
    marker.setdefault("late_files", []).append(file)
    if "parameters" in marker:
        _fs.write_json(fs, _fs.join(path, MARKER), marker)
    return file
