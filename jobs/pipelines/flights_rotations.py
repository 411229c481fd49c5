"""Aircraft rotations: session windows per tail number over actual departure times.

The table holds only departures from New York, so a rotation is a run of NYC departures of one
aircraft with short ground time between them. Each departure opens a session window that lasts
until the aircraft could be back in New York (there and back: twice the air time plus taxi)
plus ``GROUND_GAP`` (2 h) on the ground; departures inside it merge into one rotation. A
``ProcessWindowFunction`` reports legs, first/last airport, pane index and timing.
Cancelled flights have no departure time: they are rejected (reason: null timestamp).
"""

from __future__ import annotations

from typing import Any

import windowlib as wl
from jobs.pipelines._flights import FLIGHTS_SOURCE, FLIGHTS_WATERMARK, OWNER, TAGS
from jobs.registry import PipelineJob
from windowlib.core.time import ms_to_datetime, timestamp_ms

GROUND_GAP_MIN = 120
TAXI_MIN = 30
CRUISE_MILES_PER_MIN = 7.5


def rotation_gap(element: dict) -> int:
    """Session gap (ms) of one departure: back in New York (2 x air time + taxi) + 2 h."""
    air = element.get("air_time")
    if air is None:
        distance = element.get("distance") or 0
        air = distance / CRUISE_MILES_PER_MIN
    return int((2 * float(air) + TAXI_MIN + GROUND_GAP_MIN) * 60_000)


class RotationReport(wl.ProcessWindowFunction):
    """One row per firing: the rotation's legs in departure order."""

    def process(self, key: Any, context: wl.Context, elements: list) -> list[dict]:
        legs = sorted(elements, key=lambda e: (timestamp_ms(e["dep_ts"]), e["flight_id"]))
        first, last = legs[0], legs[-1]
        return [{
            "legs": len(legs),
            "carrier": first["carrier"],
            "route": " ".join(f"{e['origin']}-{e['dest']}" for e in legs),
            "first_airport": first["origin"],
            "last_airport": last["dest"],
            "first_dep": ms_to_datetime(timestamp_ms(first["dep_ts"])),
            "last_dep": ms_to_datetime(timestamp_ms(last["dep_ts"])),
            "fired_pane": context.pane.index,
            "fired_timing": str(context.pane.timing),
        }]


RESULT_SCHEMA = ("legs long, carrier string, route string, first_airport string, "
                 "last_airport string, first_dep timestamp, last_dep timestamp, "
                 "fired_pane long, fired_timing string")

PIPELINE = (
    wl.Pipeline("flights_rotations", timestamp="dep_ts")
    .key_by("tailnum")
    .window(wl.EventTimeSessionWindows.with_dynamic_gap(rotation_gap))
    .allowed_lateness(wl.Time.hours(6))
    .process(RotationReport())
)


def expectations() -> list[Any]:
    import great_expectations as gx

    e = gx.expectations
    return [
        e.ExpectColumnValuesToNotBeNull(column="tailnum"),
        e.ExpectColumnValuesToBeBetween(column="legs", min_value=1, max_value=20),
        e.ExpectColumnValuesToBeInSet(column="first_airport", value_set=["EWR", "JFK", "LGA"]),
        e.ExpectColumnValuesToBeInSet(column="fired_timing",
                                      value_set=["EARLY", "ON_TIME", "LATE"]),
        e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="last_dep", column_B="first_dep",
                                                  or_equal=True),
        e.ExpectColumnPairValuesToBeEqual(column_A="fired_pane", column_B="pane_index"),
    ]


JOB = PipelineJob(
    name="flights_rotations",
    pipeline=PIPELINE,
    source=FLIGHTS_SOURCE,
    watermark=FLIGHTS_WATERMARK,
    schedule="0 * * * *",
    lookback=6,
    expectations=expectations,
    result_schema=RESULT_SCHEMA,
    description=("Aircraft rotations: session windows per tail number on actual departure "
                 f"time, closing after {GROUND_GAP_MIN // 60} h on the ground in New York; a "
                 "ProcessWindowFunction reports legs, first/last airport, pane index and "
                 "timing."),
    tags=(*TAGS, "session", "process-function"),
    owner=OWNER,
)
