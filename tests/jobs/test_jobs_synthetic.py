"""The synthetic clickstream generator: shape, determinism, late and bad rows, late files."""

from __future__ import annotations

import pandas as pd
import pytest
from jobs_helpers import read_all

from jobs.synthetic import land_late_files, partition_start_ms, write_synthetic
from windowlib.core.errors import DefinitionError, InputError

pytestmark = pytest.mark.unit


def test_partitions_rows_and_bad_rows(tmp_path):
    info = write_synthetic(tmp_path / "c", hours=5, events_per_hour=120, keys=7,
                           late_fraction=0.1, very_late_fraction=0.05, bad_rows=3, seed=1)
    rows = read_all(info.path)
    assert info.partitions == [f"2024-03-01T0{h}" for h in range(5)]
    assert sorted(rows["arrival_hour"].unique()) == info.partitions
    assert len(rows) == info.rows == 600
    assert rows.groupby("arrival_hour").size().eq(120).all()
    assert rows["event_id"].is_unique
    bad = rows["ts"].isna() | rows["key"].isna()
    assert bad.sum() == info.bad_rows == 15
    assert rows["ts"].isna().sum() == 10 and rows["key"].isna().sum() == 5
    good = rows[~bad]
    assert set(good["key"]) <= {f"user{i}" for i in range(7)}
    assert good["value"].between(1, 100).all()
    # event times trail the partition's hour: slightly, late (10-60 min) or very late (2-6 h)
    start = good["arrival_hour"].map(partition_start_ms)
    lag = (start + 3_600_000 - good["ts"].dt.as_unit("ms").astype("int64")) / 60_000
    assert (lag > 0).all() and (lag <= 6 * 60 + 60).all()
    # measured from the END of the hour: on-time events trail by at most 60 + 2 minutes
    assert 0 < (lag > 62).sum() <= info.late_rows + info.very_late_rows
    assert 0 < (lag > 120).sum() <= info.very_late_rows
    # out of order inside a partition: event time is not sorted by arrival
    first = good[good["arrival_hour"] == "2024-03-01T02"].sort_values("event_id")
    assert not first["ts"].is_monotonic_increasing


def test_same_parameters_same_data_and_cache(tmp_path):
    a = write_synthetic(tmp_path / "a", hours=2, events_per_hour=50, seed=7)
    b = write_synthetic(tmp_path / "b", hours=2, events_per_hour=50, seed=7)
    c = write_synthetic(tmp_path / "c", hours=2, events_per_hour=50, seed=8)
    cols = ["event_id", "key", "ts", "value", "arrival_hour"]
    ra, rb, rc = (read_all(i.path).sort_values("event_id")[cols].reset_index(drop=True)
                  for i in (a, b, c))
    pd.testing.assert_frame_equal(ra, rb)
    assert not ra.equals(rc)
    assert write_synthetic(tmp_path / "a", hours=2, events_per_hour=50, seed=7).cached


def test_late_files_are_new_files_in_existing_partitions(tmp_path):
    info = write_synthetic(tmp_path / "c", hours=3, events_per_hour=40, seed=2)
    path = land_late_files(info.path, "2024-03-01T01", n=9)
    second = land_late_files(info.path, "2024-03-01T01", n=4)
    assert path.endswith("arrival_hour=2024-03-01T01/late-0001.parquet")
    assert second.endswith("late-0002.parquet")
    rows = read_all(info.path)
    late = rows[rows["file"].isin([path, second])]
    assert len(late) == 13 and len(rows) == 120 + 13
    assert sorted(rows["arrival_hour"].unique()) == info.partitions
    assert late["event_id"].min() > rows.loc[~rows["file"].isin([path, second]),
                                             "event_id"].max()
    assert (late["ts"] < pd.Timestamp("2024-03-01T01:00Z")).all()
    with pytest.raises(InputError) as err:
        land_late_files(info.path, "2024-03-02T00", n=3)
    assert err.value.code == "DATA_MISSING"
    # the same parameters again: back to the pristine data set
    assert write_synthetic(tmp_path / "c", hours=3, events_per_hour=40, seed=2).cached
    assert len(read_all(info.path)) == 120


@pytest.mark.parametrize("kwargs", [{"hours": 0}, {"events_per_hour": -1}, {"keys": 1.5},
                                    {"late_fraction": 1.5}, {"bad_rows": -1},
                                    {"late_fraction": 0.7, "very_late_fraction": 0.5},
                                    {"start": "yesterday"}])
def test_invalid_parameters(tmp_path, kwargs):
    with pytest.raises(DefinitionError):
        write_synthetic(tmp_path / "x", **kwargs)


def test_foreign_folders_are_never_overwritten(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(InputError):
        write_synthetic(tmp_path / "x", hours=1)
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"


def test_late_files_for_a_watermark_fire_late_or_go_to_the_late_output(tmp_path):
    """Rows landed for a pipeline's current watermark W (lateness L, window size S): the
    within-lateness ones lie in windows that closed (window end <= W) but are still kept
    (window max timestamp + L > W) — a rerun fires them LATE —, the others beyond it."""
    info = write_synthetic(tmp_path / "c", hours=3, events_per_hour=40, seed=3)
    w = partition_start_ms("2024-03-01T02") + 58 * 60_000            # where the watermark is
    lateness, size = 30 * 60_000, 5 * 60_000
    path = land_late_files(info.path, "2024-03-01T00", n=40, watermark="2024-03-01T02:58:00Z",
                           allowed_lateness="30 minutes", window="5 minutes", too_late=15)
    rows = read_all(info.path)
    late = rows[rows["file"] == path].sort_values("event_id")
    ts = late["ts"].dt.as_unit("ms").astype("int64").to_numpy()
    end = ts - ts % size + size                       # the 5-minute window of each row
    within, beyond = end[:25], end[25:]
    assert len(late) == 40
    assert ((within <= w) & (within - 1 + lateness > w)).all()
    assert (beyond - 1 + lateness <= w).all()
    # the watermark as int ms and durations as ms: the same placement rule
    again = land_late_files(info.path, "2024-03-01T01", n=10, watermark=w,
                            allowed_lateness=lateness, window=size, seed=9)
    ts = rows_of(read_all(info.path), again)
    end = ts - ts % size + size
    assert len(ts) == 10 and ((end <= w) & (end - 1 + lateness > w)).all()


def rows_of(rows, path):
    return rows[rows["file"] == path]["ts"].dt.as_unit("ms").astype("int64").to_numpy()


@pytest.mark.parametrize("kwargs", [{"too_late": 3},                    # no watermark
                                    {"watermark": 0},                   # no lateness / window
                                    {"watermark": 0, "allowed_lateness": "5 minutes",
                                     "window": "5 minutes"},            # lateness <= window
                                    {"watermark": "soon", "allowed_lateness": "1 hour",
                                     "window": "5 minutes"},
                                    {"watermark": 0, "allowed_lateness": "1 hour",
                                     "window": "5 minutes", "too_late": 30}])
def test_late_file_arguments_are_validated(tmp_path, kwargs):
    info = write_synthetic(tmp_path / "c", hours=1, events_per_hour=10)
    with pytest.raises(DefinitionError) as err:
        land_late_files(info.path, "2024-03-01T00", n=20, **kwargs)
    assert err.value.code == "ARGUMENT_INVALID"
