"""The Spark general path over Spark Connect (issue 3: "DataFrame API only ... a test runs the
transcripts once through a local Spark Connect server").

One local Connect server (``infra.spark_connect``) serves the whole module. With
``SPARK_REMOTE`` pointing at it, ``get_or_create_session()`` — and so
``run_bundles(engine="spark")`` — returns a Connect session: every runnable YAML transcript runs
once through it, checked as ``test_transcripts_spark.py`` checks the classic session
(``stepwise=False``; the runs overlap in a few client threads, each case still reports on
its own). ``Pipeline.run(df, ...)`` over Connect returns the three DataFrames and
they equal the reference engine. The fixture's teardown checks that ``stop()`` ends the server.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import strategies
from transcript_checks import CASES, checks, ship_by_value

import windowlib as wl
from windowlib.testing import Bundle, run_bundles

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


THREADS = 4


ship_by_value(sys.modules[__name__], strategies)   # the canned functions used here


@pytest.fixture(scope="module")
def connect():
    """A local Connect server; ``SPARK_REMOTE`` points at it while the module runs."""
    from infra.ports import accepts_connections
    from infra.spark_connect import start_connect_server
    from windowlib.engines.spark.session import get_or_create_session, stop_remote_sessions

    server = start_connect_server(conf={"spark.sql.shuffle.partitions": "1"})
    saved = os.environ.get("SPARK_REMOTE")
    os.environ["SPARK_REMOTE"] = server.url
    try:
        yield server, get_or_create_session()
    finally:
        stop_remote_sessions()
        if saved is None:
            os.environ.pop("SPARK_REMOTE", None)
        else:
            os.environ["SPARK_REMOTE"] = saved
        server.stop()
        assert not server.running(), "stop() must end the server process"
        assert not accepts_connections(server.port), \
            "the server's port must be closed after stop()"


def test_the_session_is_a_connect_session_on_loopback_with_utc(connect):
    server, session = connect
    assert type(session).__module__ == "pyspark.sql.connect.session"
    assert server.url == f"sc://127.0.0.1:{server.port}"
    assert session.conf.get("spark.sql.session.timeZone") == "UTC"
    assert session.range(3).count() == 3


def test_the_servers_python_workers_use_unix_sockets_and_windowlibs_daemon(connect):
    """The server forks its Python workers from windowlib's daemon on Unix domain sockets
    (``session.python_worker_conf``: its workers run this interpreter, which imports it)."""
    from spark_session import worker_sockets

    _, session = connect
    assert worker_sockets(session) == {("true", "windowlib.engines.spark.worker_daemon")}


@pytest.fixture(scope="module")
def transcript_outcomes(connect, request):
    """Every runnable transcript checked once over Connect: case id -> the exception its check
    raised, or None. The checks run in a few client threads: a run is a couple of small jobs
    whose cost is mostly round trips, which overlap (the Connect client is thread-safe)."""

    def check(case):
        try:
            checks.check_transcript(case, engine="spark", stepwise=False)
        except Exception as exc:   # re-raised by the case's own test below
            return exc
        return None

    selected = {item.callspec.params["case"].id for item in request.session.items
                if item.module is sys.modules[__name__] and hasattr(item, "callspec")
                and "case" in item.callspec.params}   # honour -k / node-id selection
    cases = [c for c in CASES if c.id in selected]
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        return dict(zip([c.id for c in cases], pool.map(check, cases)))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_transcript_over_spark_connect(transcript_outcomes, case):
    problem = transcript_outcomes[case.id]
    if problem is not None:
        raise problem


def test_every_runnable_transcript_runs_over_connect():
    left_out = [c for c in checks.CASES if c not in CASES]
    assert len(CASES) >= 100
    assert all(c.doc.get("build_error") is not None for c in left_out)


def test_pipeline_run_over_connect_returns_the_three_dataframes(connect):
    _, session = connect
    from pyspark.sql import functions as F

    p = (wl.Pipeline("connect_run", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10)))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_early_trigger(wl.CountTrigger.at_least(2)))
         .allowed_lateness(wl.Time.minutes(5))
         .aggregate(wl.aggregates.sum("value").alias("total"), wl.aggregates.count()))
    hour = 3_600_000
    parts = {  # arrival partition -> rows (key, ts ms, value), in arrival order
        "2024-03-01T00": [("a", 60_000, 1), ("a", 120_000, 2), ("b", 30_000, 5),
                          ("a", 700_000, 3), ("b", None, 9)],
        "2024-03-01T01": [("a", 65_000, 10), ("b", hour + 60_000, 4), (None, 100, 1)],
        "2024-03-01T02": [("a", 2 * hour + 1, 7), ("b", hour + 120_000, 6), ("a", 30_000, 8)],
    }
    base = 1_709_251_200_000   # 2024-03-01T00:00Z
    rows, bundles = [], []
    for i, (part, items) in enumerate(parts.items()):
        elements = []
        for seq, (k, ts, v) in enumerate(items):
            t = None if ts is None else base + ts
            rows.append((part, seq, k, t, v))
            elements.append({"key": k, "ts": t, "value": v, "seq": seq})
        bundles.append(Bundle(elements, processing_time=base + (i + 1) * hour))
    df = session.createDataFrame(rows, "part string, seq long, key string, ts long, value long")
    watermark = wl.BoundedOutOfOrderness(wl.Time.minutes(1))
    result = p.run(df.select("key", "ts", "value", "seq", "part"), arrival="part",
                   watermark=watermark, finalize=True, order_by="seq")

    assert dict(result.firings.dtypes)["window_start"] == "timestamp"
    firings = sorted(
        (r["key"], r["ws"], r["we"], r["pane_index"], r["timing"], r["is_final"], r["total"],
         r["count"])
        for r in result.firings.select(
            "*", F.unix_millis("window_start").alias("ws"),
            F.unix_millis("window_end").alias("we")).collect())
    late = sorted((r["key"], r["ts"], r["value"], r["reason"]) for r in result.late.collect())
    rejects = sorted((str(r["key"]), str(r["ts"]), r["reason"])
                     for r in result.rejects.collect())

    ref_f, ref_l, ref_r = run_bundles(p, bundles, engine="reference", finalize=True,
                                      watermark=watermark, with_late=True, with_rejects=True)
    assert firings == sorted((f["key"], f["window_start"], f["window_end"], f["pane_index"],
                              f["timing"], f["is_final"], f["total"], f["count"])
                             for f in ref_f)
    assert late == sorted((r["key"], r["ts"], r["value"], r["reason"]) for r in ref_l)
    assert rejects == sorted((str(r["key"]), str(r["ts"]), r["reason"]) for r in ref_r)
    # the data exercises every output: early, on-time and late firings, late rows, rejects
    assert {f[4] for f in firings} == {"EARLY", "ON_TIME", "LATE"}
    assert late and len(rejects) == 2
    result.unpersist()


class Sizes(wl.ProcessWindowFunction):
    result_schema = "n long"

    def process(self, key, context, elements):
        yield {"n": len(elements)}


def test_a_one_shot_pane_run_over_connect_keeps_its_walker_output_in_the_cache(connect):
    """The server may run elsewhere, so the walker's output is not written as files on
    this machine (``walker_files.py``): Spark's cache holds it, and the outputs read it."""
    _, session = connect
    p = (wl.Pipeline("connect_panes", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(Sizes()))
    df = session.createDataFrame([("a", 1, 0), ("a", 2, 0), ("b", 15, 0)],
                                 "key string, ts long, hour int")
    result = p.run(df, arrival="hour", finalize=True)
    assert result.path == "panes" and result.run.detail.files is None
    assert sorted((r["key"], r["n"]) for r in result.firings.collect()) == [("a", 2), ("b", 1)]
    result.unpersist()


class ClaimsTiming(wl.ProcessWindowFunction):
    """Yields a reserved metadata column: the worker raises RESULT_COLUMN_CONFLICT."""

    def process(self, key, context, elements):
        yield {"timing": "mine"}


@pytest.mark.parametrize(("function", "code"), [
    (ClaimsTiming(), "RESULT_COLUMN_CONFLICT"),      # raised by windowlib in the worker
    (strategies.KillsItsWorker(), "WORKER_CRASHED"),  # the worker died: "exited unexpectedly"
])
def test_a_worker_failure_comes_back_as_the_same_windowlib_error_over_connect(connect,
                                                                              function, code):
    """Not a Spark Connect error around the worker's traceback or the JVM's report."""
    p = (wl.Pipeline("connect_err", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(function))
    with pytest.raises(wl.ExecutionError) as info:
        run_bundles(p, [Bundle([{"key": "a", "ts": 1, "value": 1}], watermark=20)],
                    engine="spark")
    assert info.value.code == code


def test_a_sum_beyond_64_bits_comes_back_coded_over_connect(connect):
    """Raised in Spark SQL on the server (the native path's ``raise_error``), not in a Python
    worker: the same ``AGGREGATE_OVERFLOW``, without Spark's SQLSTATE suffix."""
    p = (wl.Pipeline("connect_sum", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10))
         .aggregate(wl.aggregates.sum("value").alias("total")))
    big = [{"key": "a", "ts": t, "value": 2**62} for t in (1, 2)]
    with pytest.raises(wl.ExecutionError) as info:
        run_bundles(p, [Bundle(big, watermark=20)], engine="spark")
    assert info.value.code == "AGGREGATE_OVERFLOW"
    assert "'total'" in str(info.value) and "SQLSTATE" not in str(info.value)


def test_a_warm_tiny_incremental_run_over_connect_analyses_few_plans(connect, tmp_path,
                                                                      monkeypatch):
    """The DAG's run task is a Connect client: every schema lookup is a server round trip
    that analyses the frame's whole plan again. A warm native hourly run asks for 13 (the
    write asks for the routed frame's schema once, then reuses it; it used to analyse a
    projection of it again and parse its result's DDL: 17; the accumulators' types of sum and
    count and the state struct's field names are known on the client: 15 before), and its
    outputs are published."""
    import datetime as dt
    import random

    from clicks_lake import T0, hour_value, locations, write_partition
    from pyspark.sql.connect.client import core

    from windowlib.runs.incremental import run_incremental

    _, session = connect
    calls: list[str] = []
    original = core.SparkConnectClient._analyze

    def counted(self, method, **kwargs):
        calls.append(method)
        return original(self, method, **kwargs)

    rng = random.Random(5)
    for hour in range(3):
        write_partition(tmp_path / "events", hour, [
            (f"k{rng.randint(0, 9)}", T0 + dt.timedelta(hours=hour, minutes=rng.randint(-90, 59)),
             rng.randint(1, 9)) for _ in range(30)])
    pipeline = (wl.Pipeline("connect_incremental", timestamp="ts").key_by("key")
                .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
                .allowed_lateness(wl.Time.hours(2))
                .aggregate(wl.aggregates.sum("value").alias("total"), wl.aggregates.count()))
    where = locations(tmp_path, "connect")
    for hour in range(3):
        if hour == 2:
            monkeypatch.setattr(core.SparkConnectClient, "_analyze", counted)
        value = hour_value(hour)
        done = run_incremental(pipeline, partitions=(value, value), spark=session,
                               path="native", watermark=wl.BoundedOutOfOrderness("10 minutes"),
                               **where)
        assert done.status == "published" and done.inputs == 30
    assert done.path == "native" and done.firings > 0
    assert len(calls) <= 13, calls
