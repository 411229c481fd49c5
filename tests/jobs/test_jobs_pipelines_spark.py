"""Every registered pipeline gives the same firings, late and rejected rows on Spark
(``Pipeline.run`` over the Parquet partitions as Spark reads them) as on the reference engine
(bundles read with pyarrow), on a small slice of its data."""

from __future__ import annotations

import datetime as _dt
import math

import pytest

from jobs import registry
from jobs.localread import read_bundles
from jobs.synthetic import write_synthetic
from windowlib.core.time import timestamp_ms
from windowlib.testing import run_bundles

pytestmark = pytest.mark.spark

SLICE = ("2013-03-09T11", "2013-03-09T23")   # the first 13 arrival hours of the spring data


def _norm(value):
    if isinstance(value, _dt.datetime):
        return timestamp_ms(value)
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 9)
    return value


def _rows(rows, columns):
    return sorted((tuple(_norm(r.get(c)) for c in columns) for r in rows), key=repr)


def _read_spark(spark, path, first, last):
    from pathlib import Path

    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    some_file = next(Path(path).glob("arrival_hour=*/*.parquet"))
    schema = spark.read.parquet(str(some_file)).schema.add("arrival_hour", T.StringType())
    df = spark.read.schema(schema).option("basePath", str(path)).parquet(str(path))
    return df.where(F.col("arrival_hour").between(first, last))


def _compare(spark, name, path, first=None, last=None):
    job = registry.get(name)
    bundles = read_bundles(path, order_by=job.source.order_by, first=first, last=last)
    ref, ref_late, ref_rejects = run_bundles(job.pipeline, bundles, watermark=job.watermark,
                                             finalize=True, with_late=True, with_rejects=True)
    df = _read_spark(spark, path, first or "", last or "~")
    assert df.count() == sum(len(b.elements) for b in bundles) > 0
    result = job.pipeline.run(df, arrival="arrival_hour", watermark=job.watermark,
                              finalize=True, order_by=list(job.source.order_by),
                              result_schema=job.result_schema)
    firings = [r.asDict() for r in result.firings.collect()]
    late = [r.asDict() for r in result.late.collect()]
    rejects = [r.asDict() for r in result.rejects.collect()]
    columns = [c for c in ref[0] if c not in ("watermark", "processing_time", "run_id")]
    assert set(columns) <= set(result.firings.columns)
    assert _rows(firings, columns) == _rows(ref, columns)
    ident = job.source.order_by[0]
    assert sorted(r[ident] for r in late) == sorted(r[ident] for r in ref_late)
    assert sorted((r[ident], r["reason"]) for r in rejects) == \
        sorted((r[ident], r["reason"]) for r in ref_rejects)
    return ref, ref_late, ref_rejects


@pytest.mark.parametrize("name", ["flights_departure_delay", "flights_rotations",
                                  "flights_carrier_ontime", "flights_daily_ny"])
def test_flights_pipeline_equal_on_spark_and_reference(spark, spring, name):
    firings, _, _ = _compare(spark, name, spring[1].path, *SLICE)
    assert len(firings) >= (3 if name == "flights_daily_ny" else 20)


def test_clickstream_demo_equal_on_spark_and_reference(spark, tmp_path):
    info = write_synthetic(tmp_path / "clicks", hours=3, events_per_hour=80, keys=4,
                           late_fraction=0.1, very_late_fraction=0.05, bad_rows=2, seed=5)
    firings, late, rejects = _compare(spark, "clickstream_demo", info.path)
    assert {f["timing"] for f in firings} == {"EARLY", "ON_TIME", "LATE"}
    assert len(rejects) == info.bad_rows and late
