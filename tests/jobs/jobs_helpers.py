"""Shared helpers of the jobs tests (plain functions, no fixtures)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow.dataset as ds

# 2013-03-09 .. 2013-03-11 local days: includes the 23-hour DST day (2013-03-10)
SPRING_DAYS = ("2013-03-09", "2013-03-11")
# 2013-11-02 .. 2013-11-04: includes the 25-hour day (2013-11-03)
FALL_DAYS = ("2013-11-02", "2013-11-04")


def read_all(data_path: str | Path):
    """Every row of a hive-partitioned data set as pandas, with the partition column and the
    file each row came from."""
    dataset = ds.dataset(str(data_path), format="parquet", partitioning="hive",
                         exclude_invalid_files=True)
    frames = []
    for fragment in dataset.get_fragments():
        t = fragment.to_table().to_pandas()
        t["arrival_hour"] = ds.get_partition_keys(fragment.partition_expression)["arrival_hour"]
        t["file"] = fragment.path
        frames.append(t)
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def last_per_window(firings: list[dict], key: str) -> dict[tuple, dict]:
    """The last non-retraction firing of each window (highest pane index)."""
    out: dict[tuple, dict] = {}
    for f in firings:
        if f.get("retract"):
            continue
        w = (f[key], f["window_start"], f["window_end"])
        if w not in out or f["pane_index"] > out[w]["pane_index"]:
            out[w] = f
    return out


def check_pane_sequences(firings: list[dict], key: str) -> None:
    """Per window: pane indices 0, 1, 2, ... in order, at most one ON_TIME, nothing EARLY
    after it (SPEC §6 timing rule)."""
    panes: dict[tuple, list] = defaultdict(list)
    for f in firings:
        if not f.get("retract"):
            window = (f[key], f["window_start"], f["window_end"])
            panes[window].append((f["pane_index"], f["timing"]))
    for window, seq in panes.items():
        assert [p for p, _ in seq] == list(range(len(seq))), window
        timings = [t for _, t in seq]
        assert timings.count("ON_TIME") <= 1, window
        if "ON_TIME" in timings:
            after = timings[timings.index("ON_TIME") + 1:]
            assert set(after) <= {"LATE"}, window
