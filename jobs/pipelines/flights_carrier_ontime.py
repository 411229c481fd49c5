"""Carrier on-time rate over sliding 3 h windows every 1 h (scheduled departure time),
accumulating and retracting: a LATE firing first retracts the window's previous result.

``on_time`` is 1 when the flight arrived at most 15 minutes late (the US DOT definition;
cancelled and diverted flights count as not on time).
"""

from __future__ import annotations

from typing import Any

import windowlib as wl
from jobs.pipelines._flights import FLIGHTS_SOURCE, FLIGHTS_WATERMARK, OWNER, TAGS
from jobs.registry import PipelineJob
from windowlib import aggregates as agg

PIPELINE = (
    wl.Pipeline("flights_carrier_ontime", timestamp="sched_dep_ts")
    .key_by("carrier")
    .window(wl.SlidingEventTimeWindows.of(wl.Time.hours(3), wl.Time.hours(1)))
    .allowed_lateness(wl.Time.hours(6))
    .accumulation("accumulating_and_retracting")
    .aggregate(agg.count().alias("flights"), agg.sum("on_time").alias("on_time_flights"),
               agg.mean("on_time").alias("on_time_rate"))
)


def expectations() -> list[Any]:
    import great_expectations as gx

    e = gx.expectations
    return [
        e.ExpectColumnValuesToMatchRegex(column="carrier", regex=r"^[A-Z0-9]{2}$"),
        e.ExpectColumnValuesToBeBetween(column="on_time_rate", min_value=0, max_value=1),
        e.ExpectColumnValuesToBeBetween(column="flights", min_value=1),
        e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="flights",
                                                  column_B="on_time_flights", or_equal=True),
        e.ExpectColumnValuesToBeInSet(column="retract", value_set=[True, False]),
    ]


JOB = PipelineJob(
    name="flights_carrier_ontime",
    pipeline=PIPELINE,
    source=FLIGHTS_SOURCE,
    watermark=FLIGHTS_WATERMARK,
    schedule="0 * * * *",
    lookback=6,
    expectations=expectations,
    description=("On-time rate per carrier over sliding 3 h windows every hour (scheduled "
                 "departure), accumulating and retracting: each LATE firing retracts the "
                 "window's previous result first, so sums downstream stay correct."),
    tags=(*TAGS, "sliding", "retractions"),
    owner=OWNER,
)
