"""What the flights pipelines share: the source, the airports, the watermark."""

from __future__ import annotations

import windowlib as wl
from jobs.flights.layout import DATA_PATH, PARTITION
from jobs.registry import SourceSpec

FLIGHTS_SOURCE = SourceSpec(DATA_PATH, partition=PARTITION, format="parquet", order_by=("seq",))
NYC_ORIGINS = ["EWR", "JFK", "LGA"]
# A record reaches the lake when the flight has landed (plus a reporting delay): the watermark
# trails the latest event time seen by 3 hours, so most domestic flights are on time and long
# or delayed flights come late (LATE firings within the allowed lateness, else late output).
FLIGHTS_WATERMARK = wl.BoundedOutOfOrderness("3 hours")
TAGS = ("flights", "nycflights13")
OWNER = "windowlib-demo"
