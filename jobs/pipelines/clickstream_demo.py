"""Clicks per user in 5-minute tumbling windows over the synthetic clickstream
(``jobs.synthetic``): early firings every 5 clicks, 30 minutes of allowed lateness."""

from __future__ import annotations

from typing import Any

import windowlib as wl
from jobs.registry import PipelineJob, SourceSpec
from jobs.synthetic import DATA_PATH, PARTITION
from windowlib import aggregates as agg

PIPELINE = (
    wl.Pipeline("clickstream_demo", timestamp="ts")
    .key_by("key")
    .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
    .trigger(wl.EventTimeTrigger.after_end_of_window()
             .with_early_trigger(wl.CountTrigger.at_least(5)))
    .allowed_lateness(wl.Time.minutes(30))
    .aggregate(agg.sum("value").alias("total"), agg.count().alias("clicks"))
)


def expectations() -> list[Any]:
    import great_expectations as gx

    e = gx.expectations
    return [
        e.ExpectColumnValuesToNotBeNull(column="key"),
        e.ExpectColumnValuesToBeBetween(column="clicks", min_value=1),
        e.ExpectColumnValuesToBeBetween(column="total", min_value=1),
        e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="total", column_B="clicks",
                                                  or_equal=True),
    ]


JOB = PipelineJob(
    name="clickstream_demo",
    pipeline=PIPELINE,
    source=SourceSpec(DATA_PATH, partition=PARTITION, format="parquet", order_by=("event_id",)),
    watermark=wl.BoundedOutOfOrderness("2 minutes"),
    schedule="0 * * * *",
    lookback=1,
    expectations=expectations,
    description=("Synthetic clickstream: total value and clicks per user in 5-minute windows, "
                 "early firings every 5 clicks, 30 minutes of allowed lateness."),
    tags=("synthetic", "tumbling", "early-late"),
    owner="windowlib-tests",
)
