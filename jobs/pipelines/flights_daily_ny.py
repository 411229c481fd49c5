"""Flights and cancellations per origin airport per local day in New York.

One ``CalendarWindows`` day in ``America/New_York``: DST-correct, so 2013-03-10 is a 23-hour
window and 2013-11-03 a 25-hour one (an offset-based tumbling day cannot do that).
Runs once a day over the day's 24 hourly partitions.
"""

from __future__ import annotations

from typing import Any

import windowlib as wl
from jobs.pipelines._flights import FLIGHTS_SOURCE, FLIGHTS_WATERMARK, NYC_ORIGINS, OWNER, TAGS
from jobs.registry import PipelineJob
from windowlib import aggregates as agg

TIME_ZONE = "America/New_York"

PIPELINE = (
    wl.Pipeline("flights_daily_ny", timestamp="sched_dep_ts")
    .key_by("origin")
    .window(wl.CalendarWindows.of("day", TIME_ZONE))
    .allowed_lateness(wl.Time.days(1))
    .aggregate(agg.count().alias("flights"), agg.sum("cancelled").alias("cancelled"),
               agg.mean("dep_delay").alias("mean_dep_delay"),
               agg.mean("arr_delay").alias("mean_arr_delay"))
)


def expectations() -> list[Any]:
    import great_expectations as gx

    e = gx.expectations
    return [
        e.ExpectColumnValuesToBeInSet(column="origin", value_set=NYC_ORIGINS),
        e.ExpectColumnValuesToBeBetween(column="flights", min_value=1, max_value=2000),
        e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="flights", column_B="cancelled",
                                                  or_equal=True),
        e.ExpectColumnValuesToBeBetween(column="mean_dep_delay", min_value=-60,
                                        max_value=600),
    ]


JOB = PipelineJob(
    name="flights_daily_ny",
    pipeline=PIPELINE,
    source=FLIGHTS_SOURCE,
    watermark=FLIGHTS_WATERMARK,
    schedule="0 5 * * *",
    lookback=24,
    expectations=expectations,
    description=("Flights, cancellations and mean delays per origin airport per local day in "
                 "America/New_York (calendar windows: 23 h on 2013-03-10, 25 h on "
                 "2013-11-03), one day of allowed lateness."),
    tags=(*TAGS, "calendar", "dst"),
    owner=OWNER,
)
