"""Departure delay per origin airport, hourly (tumbling 1 h on the scheduled departure time).

Early firings every ``EARLY_EVERY`` flights, the ON_TIME firing when the watermark passes the
hour, then LATE firings as flights that left in that hour land and report (6 h of allowed
lateness); later reports go to the late output.
"""

from __future__ import annotations

from typing import Any

import windowlib as wl
from jobs.pipelines._flights import FLIGHTS_SOURCE, FLIGHTS_WATERMARK, NYC_ORIGINS, OWNER, TAGS
from jobs.registry import PipelineJob
from windowlib import aggregates as agg

EARLY_EVERY = 10

PIPELINE = (
    wl.Pipeline("flights_departure_delay", timestamp="sched_dep_ts")
    .key_by("origin")
    .window(wl.TumblingEventTimeWindows.of(wl.Time.hours(1)))
    .trigger(wl.EventTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.CountTrigger.at_least(EARLY_EVERY)))
    .allowed_lateness(wl.Time.hours(6))
    .aggregate(agg.count().alias("flights"), agg.count("dep_ts").alias("departed"),
               agg.sum("cancelled").alias("cancelled"),
               agg.mean("dep_delay").alias("mean_dep_delay"),
               agg.max("dep_delay").alias("max_dep_delay"))
)


def expectations() -> list[Any]:
    import great_expectations as gx

    e = gx.expectations
    return [
        e.ExpectColumnValuesToBeInSet(column="origin", value_set=NYC_ORIGINS),
        e.ExpectColumnValuesToBeBetween(column="flights", min_value=1, max_value=500),
        e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="flights", column_B="departed",
                                                  or_equal=True),
        e.ExpectColumnValuesToBeBetween(column="cancelled", min_value=0),
        # delays are minutes: early departures by more than 2 h or delays beyond 2 days are
        # data errors (nulls, i.e. hours with only cancellations, are allowed)
        e.ExpectColumnValuesToBeBetween(column="mean_dep_delay", min_value=-120,
                                        max_value=2880),
        e.ExpectColumnValuesToBeBetween(column="max_dep_delay", min_value=-120,
                                        max_value=2880),
    ]


JOB = PipelineJob(
    name="flights_departure_delay",
    pipeline=PIPELINE,
    source=FLIGHTS_SOURCE,
    watermark=FLIGHTS_WATERMARK,
    schedule="0 * * * *",
    partition_format="YYYY-MM-DDTHH",
    lookback=6,
    expectations=expectations,
    description=("Mean and max departure delay per NYC origin airport and scheduled-departure "
                 f"hour: early firings every {EARLY_EVERY} flights, ON_TIME when the watermark "
                 "passes the hour, LATE firings for 6 h as delayed flights report."),
    tags=(*TAGS, "tumbling", "early-late"),
    owner=OWNER,
)
