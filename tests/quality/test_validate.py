"""GX validation of real Spark outputs: valid runs pass; each kind of broken output fails with the
right check named and its exact unexpected count (counts derived here from the mutations)."""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path
from urllib.parse import unquote

import great_expectations as gx
import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import QualityError
from windowlib.engines.spark import run_dataframe
from windowlib.quality import datadocs, lateness_histogram, validate_outputs
from windowlib.quality.suites import FRAMES

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 3, 1, 5, tzinfo=dt.UTC)
HOUR = 3_600_000


def pipeline(mode: str = "accumulating") -> wl.Pipeline:
    return (wl.Pipeline("quality_demo", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(3))
                     .with_late_trigger(wl.CountTrigger.at_least(1)))
            .allowed_lateness(wl.Time.hours(1)).accumulation(mode)
            .aggregate(agg.sum("value").alias("total"), agg.count()))


def rows(seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for h in range(4):
        for _ in range(30):
            out.append({"key": rng.choice("abc"), "value": rng.randint(1, 9),
                        "ts": T0 + dt.timedelta(hours=h, minutes=rng.randint(-150, 59)),
                        "arrival_hour": (T0 + dt.timedelta(hours=h)).strftime("%Y-%m-%dT%H")})
    out.append({"key": None, "ts": T0, "value": 1, "arrival_hour": T0.strftime("%Y-%m-%dT%H")})
    return out


def run(spark, mode: str = "accumulating"):
    data = rows()
    df = spark.createDataFrame(data, "key string, ts timestamp, value long, arrival_hour string")
    p = pipeline(mode)
    result = run_dataframe(p, df, arrival="arrival_hour", finalize=True, run_id="run-1")
    late, rejects = result.late.count(), result.rejects.count()
    summary = {"pipeline": p.name, "run_id": "run-1", "inputs": len(data),
               "processed": len(data) - late - rejects, "late": late, "rejects": rejects}
    return p, result, summary


@pytest.fixture(scope="module")
def accumulating(spark):
    p, result, summary = run(spark)
    yield p, result, summary
    result.unpersist()


def by_name(outcome):
    return {r.name: r for r in outcome.results}


def test_real_outputs_pass_and_write_data_docs(accumulating, tmp_path):
    p, result, summary = accumulating
    assert summary["late"] > 0 and summary["rejects"] > 0   # the run exercises both outputs
    outcome = validate_outputs(p, result.firings, summary, context_dir=tmp_path / "docs",
                               extra_expectations=[gx.expectations.ExpectColumnValuesToBeBetween(
                                   column="total", min_value=1, max_value=10_000)])
    assert outcome.success, outcome.failed
    assert outcome.failed == []
    names = set(by_name(outcome))
    assert {"not_null:key", "not_null:window_start", "timing_allowed", "pane_index_non_negative",
            "pane_unique", "window_length", "on_time_at_most_once",
            "custom_1_expect_column_values_to_be_between"} <= names
    results = by_name(outcome)   # passed: built-ins count 0, the pipeline's own are not counted
    assert results["timing_allowed"].unexpected_count == 0
    assert results["custom_1_expect_column_values_to_be_between"].unexpected_count is None
    assert outcome.data_docs_index == str(tmp_path / "docs" / "index.html")
    index = (tmp_path / "docs" / "index.html").read_text()
    assert "quality_demo.firings" in index and "quality_demo.windows" in index
    cache = datadocs._template_cache()     # templates compiled once per machine, not per build
    assert cache is not None and list(Path(cache.directory).glob("__windowlib_datadocs_*"))
    small = outcome.to_dict()
    assert small["success"] is True and small["data_docs"] == outcome.data_docs_index
    assert not result.firings.is_cached


NETWORK_ASSET = re.compile(r"<(?:link|script|img)\b[^>]*\b(?:href|src)\s*=\s*[\"']?\s*"
                           r"(?:https?:)?//", re.I)


def test_data_docs_keep_every_run_under_its_run_id_and_render_offline(accumulating, tmp_path):
    """GX's in-memory results store listed only the latest run, named ``__none__``, and its
    pages loaded Bootstrap/jQuery/Font Awesome from CDNs."""
    p, result, summary = accumulating
    docs = tmp_path / "docs"
    run_ids = ["run-1", "windowlib_x:scheduled__2024-03-01T01:00:00+00:00@v2"]
    outcomes = [validate_outputs(p, result.firings, dict(summary, run_id=r), context_dir=docs)
                for r in run_ids]
    index = (docs / "index.html").read_text()
    assert "__none__" not in index
    links = {unquote(h) for h in re.findall(r'href="([^"]+)"', index)}
    for run_id, outcome in zip(run_ids, outcomes):
        pages = outcome.to_dict()["data_docs_pages"]
        assert set(pages) == set(FRAMES)       # one page per validated frame of this run
        for frame, page in pages.items():
            text = Path(page).read_text()
            assert run_id in Path(page).parts and run_id in text and frame in Path(page).name
            link = Path(page).relative_to(docs).as_posix()
            assert link in links                   # the index links every run's pages
    pages = sorted(docs.rglob("*.html"))
    frames = len(FRAMES)
    assert len(pages) == 1 + frames + frames * len(run_ids)   # index, suites, every run's pages
    for page in pages:
        assert not NETWORK_ASSET.search(page.read_text()), page


def break_firings(spark, firings):
    """Broken copies of real firings and the exact unexpected count each mutation causes."""
    data = [r.asDict() for r in firings.orderBy("key", "window_start", "pane_index").collect()]
    schema = firings.schema
    by_window: dict = {}
    for r in data:
        by_window.setdefault((r["key"], r["window_start"]), []).append(r)
    # a window with an EARLY pane and an ON_TIME pane: its EARLY pane becomes a second ON_TIME
    two = next(ws for ws in by_window.values()
               if {"EARLY", "ON_TIME"} <= {r["timing"] for r in ws})
    next(r for r in two if r["timing"] == "EARLY")["timing"] = "ON_TIME"
    rest = [r for ws in by_window.values() if ws is not two for r in ws]
    rest[0]["pane_index"] = -1                                   # 1 negative pane index
    for r in rest[1:4]:                                          # 3 bad timings
        r["timing"] = "SOON"
    for r in rest[4:6]:                                          # 2 wrong window lengths
        r["window_end"] += dt.timedelta(minutes=1)
    rest[6]["key"] = None                                        # 1 null key
    dupes = [r for r in rest[7:] if r["timing"] != "ON_TIME"][:2]
    data += [dict(r) for r in dupes]                             # 2 panes twice: 4 rows
    return spark.createDataFrame(data, schema), data


def test_broken_outputs_fail_with_exact_counts(spark, accumulating):
    p, result, summary = accumulating
    broken, data = break_firings(spark, result.firings)
    too_many = sum(1 for r in data if r["count"] > 2)
    assert too_many > 20           # more than GX's 20-row sample
    outcome = validate_outputs(
        p, broken, summary,
        extra_expectations=[gx.expectations.ExpectColumnValuesToBeBetween(
            column="count", max_value=2)])
    assert not outcome.success
    results = by_name(outcome)
    expected = {"pane_index_non_negative": 1, "timing_allowed": 3, "window_length": 2,
                "not_null:key": 1, "pane_unique": 4, "on_time_at_most_once": 1,
                "custom_1_expect_column_values_to_be_between": too_many}
    failed = {name for name, r in results.items() if not r.success}
    assert failed == set(expected)
    for name, count in expected.items():
        assert results[name].unexpected_count == count, name
    assert results["pane_index_non_negative"].element_count == len(data)
    assert any(line.startswith("pane_unique ") and ": 4 unexpected" in line
               for line in outcome.failed)
    assert len(outcome.failed) == len(expected)


def test_retracting_outputs_pass_with_retractions(spark):
    p, result, summary = run(spark, "accumulating_and_retracting")
    try:
        firings = result.firings
        assert firings.filter("retract").count() > 0   # retractions share their pane tuple
        outcome = validate_outputs(p, firings, summary)
        assert outcome.success, outcome.failed
        assert outcome.data_docs_index is None
    finally:
        result.unpersist()


def test_missing_required_column_fails_without_gx(accumulating):
    p, result, summary = accumulating
    outcome = validate_outputs(p, result.firings.drop("timing"), summary)
    assert not outcome.success
    assert [r.name for r in outcome.results] == ["column_exists:timing"]


def test_expectation_on_unknown_column_makes_the_quality_gate_unavailable(accumulating):
    p, result, summary = accumulating
    with pytest.raises(QualityError) as info:
        validate_outputs(p, result.firings, summary, extra_expectations=[
            gx.expectations.ExpectColumnValuesToNotBeNull(column="no_such_column")])
    assert info.value.code == "QUALITY_UNAVAILABLE"
    assert "custom_1_expect_column_values_to_not_be_null" in str(info.value)


def test_lateness_histogram_buckets(spark, accumulating):
    p, result, summary = accumulating
    hist = lateness_histogram(result.late, p)
    assert [b for b, _ in hist] == ["<1h", "1-6h", "6-24h", ">1d"]
    assert sum(c for _, c in hist) == summary["late"]
    wm = 100 * HOUR
    lateness_ms = [0, HOUR - 1, HOUR, 6 * HOUR - 1, 6 * HOUR, 30 * HOUR]
    df = spark.createDataFrame(
        [(wm - x, dt.datetime.fromtimestamp(wm / 1000, dt.UTC)) for x in lateness_ms]
        + [(None, dt.datetime.fromtimestamp(wm / 1000, dt.UTC))],
        "event_ms long, watermark timestamp")
    assert lateness_histogram(df, "event_ms") == [
        ["<1h", 2], ["1-6h", 2], ["6-24h", 1], [">1d", 1], ["unknown", 1]]
