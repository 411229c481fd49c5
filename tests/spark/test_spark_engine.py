"""``run_dataframe`` on real DataFrames: bundles from an arrival column, the watermark sequence
against the reference engine, the public output frames, typed results, the hot-key limit and
``explain``."""

from __future__ import annotations

import datetime as dt
import json
import random
import sys

import pytest
from pyspark import cloudpickle

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.reference import ReferenceEngine
from windowlib.engines.spark import explain, run_dataframe
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark
cloudpickle.register_pickle_by_value(sys.modules[__name__])

HOUR = 3_600_000
T0 = dt.datetime(2024, 3, 1, 5, 0, tzinfo=dt.UTC)   # aware: independent of the local zone


class Summary(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"n": len(elements), "values": [e["value"] for e in elements],
               "label": f"{key}:{context.pane.timing}"}


def events(seed: int = 1, hours: int = 4, per_hour: int = 40) -> list[dict]:
    """Rows with an ``arrival_hour`` partition value, late and future rows among them."""
    rng = random.Random(seed)
    rows, seq = [], 0
    for h in range(hours):
        start = T0 + dt.timedelta(hours=h)
        for _ in range(per_hour):
            offset = dt.timedelta(minutes=rng.randint(-100, 59), seconds=rng.randint(0, 59))
            rows.append({"key": rng.choice(["a", "b", "c", None]), "ts": start + offset,
                         "value": rng.randint(1, 9), "seq": seq,
                         "arrival_hour": start.strftime("%Y-%m-%dT%H")})
            seq += 1
        rows.append({"key": "a", "ts": start + dt.timedelta(days=3), "value": 1, "seq": seq,
                     "arrival_hour": start.strftime("%Y-%m-%dT%H")})   # beyond the skew
        seq += 1
    return rows


def frame(spark, rows):
    return spark.createDataFrame(
        rows, "key string, ts timestamp, value long, seq long, arrival_hour string")


def reference(pipeline, rows, watermark, finalize):
    """The same input as reference bundles: one per arrival hour, P_b = end of the hour."""
    by_hour: dict[str, list] = {}
    for r in rows:
        by_hour.setdefault(r["arrival_hour"], []).append(
            {k: v for k, v in r.items() if k != "arrival_hour"})
    engine = ReferenceEngine(pipeline, watermark=watermark)
    watermarks = []
    for hour in sorted(by_hour):
        start = dt.datetime.fromisoformat(hour).replace(tzinfo=dt.UTC)
        engine.process_bundle(sorted(by_hour[hour], key=lambda r: r["seq"]),
                              processing_time=start + dt.timedelta(hours=1))
        watermarks.append(engine.clock.watermark)
    if finalize:
        engine.finish()
    return engine, watermarks


def ms(value: dt.datetime) -> int:
    return wl.core.time.timestamp_ms(value)


def in_ms(df, *columns):
    """``df`` with the given timestamp columns as int ms (collect() would use the local zone)."""
    from pyspark.sql import functions as F

    return df.select(*[F.unix_millis(c).alias(c) if c in columns else F.col(c)
                       for c in df.columns])


def test_run_dataframe_equals_reference_on_hourly_partitions(spark):
    p = (wl.Pipeline("hourly", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30)))
         .allowed_lateness("20 minutes").aggregate(agg.sum("value").alias("total"), agg.count()))
    rows = events()
    strategy = wl.BoundedOutOfOrderness("10 minutes")
    result = run_dataframe(p, frame(spark, rows), arrival="arrival_hour", watermark=strategy,
                           finalize=True, order_by="seq", path="general")
    engine, watermarks = reference(p, rows, strategy, finalize=True)
    assert result.path == "general"
    assert result.plan.watermarks == watermarks
    assert result.plan.processing_times == [
        ms(T0 + dt.timedelta(hours=h + 1)) for h in range(4)]

    schema = dict(result.firings.dtypes)
    assert schema["window_start"] == "timestamp" and schema["window_end"] == "timestamp"
    assert schema["timing"] == "string" and schema["total"] == "bigint"
    assert schema["count"] == "bigint" and "watermark" in schema and "run_id" in schema
    got = sorted((r["key"], r["window_start"], r["window_end"], r["pane_index"],
                  r["timing"], r["is_final"], r["total"], r["count"])
                 for r in in_ms(result.firings, "window_start", "window_end").collect())
    want = sorted((f["key"], f["window_start"], f["window_end"], f["pane_index"], f["timing"],
                   f["is_final"], f["total"], f["count"]) for f in engine.sink.firings)
    assert got == want

    late = result.late.collect()
    assert sorted(r["seq"] for r in late) == sorted(r["seq"] for r, _ in engine.sink.late)
    assert {r["reason"] for r in late} <= {"too_late"}
    assert all(r["watermark"] is not None for r in late)
    rejects = result.rejects.collect()
    assert sorted((r["seq"], r["reason"]) for r in rejects) == sorted(
        (r["seq"], r["reason"]) for r in engine.rejects)
    assert {r["reason"] for r in rejects} == {"missing_key", "future_timestamp"}
    result.unpersist()


def test_watermark_sequence_with_timestamp_arrivals_and_processing_time_lag(spark):
    p = (wl.Pipeline("lag", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(30))).aggregate(agg.count()))
    rows = events(seed=2)
    from pyspark.sql import functions as F

    df = frame(spark, rows).withColumn("arrival",
                                       F.to_timestamp("arrival_hour", "yyyy-MM-dd'T'HH"))
    strategy = wl.ProcessingTimeLag("15 minutes")
    result = run_dataframe(p, df.drop("arrival_hour"), arrival="arrival", watermark=strategy,
                           arrival_interval="1 hour", order_by=["seq"])
    _, watermarks = reference(p, rows, strategy, finalize=False)
    assert result.plan.watermarks == watermarks


def test_explicit_bundle_times_and_integer_arrivals(spark):
    p = (wl.Pipeline("ints", timestamp="ts").key_by("key")
         .window(wl.TumblingProcessingTimeWindows.of(100)).aggregate(agg.count()))
    df = spark.createDataFrame([("a", 5, 0), ("a", 7, 1), ("b", 9, 1), ("a", 1, 3)],
                               "key string, ts long, arrival long")
    result = run_dataframe(p, df, arrival="arrival", finalize=True,
                           bundles={2: {"processing_time": 250, "watermark": 300}},
                           processing_time={0: 50, 1: 120, 3: 260})
    assert result.plan.arrivals == [0, 1, 2, 3]
    assert result.plan.processing_times == [50, 120, 250, 260]
    got = sorted((r["key"], r["window_start"], r["count"])
                 for r in in_ms(result.firings, "window_start").collect())
    want = sorted((f["key"], f["window_start"], f["count"]) for f in run_bundles(p, [
        Bundle([{"key": "a", "ts": 5}], processing_time=50),
        Bundle([{"key": "a", "ts": 7}, {"key": "b", "ts": 9}], processing_time=120),
        Bundle([], processing_time=250, watermark=300),
        Bundle([{"key": "a", "ts": 1}], processing_time=260)], finalize=True))
    assert got == want


def test_python_results_as_json_or_typed_by_result_schema(spark):
    p = (wl.Pipeline("py", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).process(Summary()))
    df = spark.createDataFrame([("a", 1, 5, 0), ("a", 2, 6, 0), ("b", 3, 7, 0)],
                               "key string, ts long, value long, arrival int")
    as_json = run_dataframe(p, df, arrival="arrival", finalize=True)
    assert as_json.firings.columns[-1] == "result_json"
    decoded = {r["key"]: json.loads(r["result_json"]) for r in as_json.firings.collect()}
    assert decoded == {"a": {"n": 2, "values": [5, 6], "label": "a:ON_TIME"},
                       "b": {"n": 1, "values": [7], "label": "b:ON_TIME"}}
    typed = run_dataframe(p, df, arrival="arrival", finalize=True,
                          result_schema="n long, values array<long>, label string")
    assert dict(typed.firings.dtypes)["values"] == "array<bigint>"
    assert sorted(tuple(r)[-3:] for r in typed.firings.collect()) == [
        (1, [7], "b:ON_TIME"), (2, [5, 6], "a:ON_TIME")]
    with pytest.raises(wl.ExecutionError) as info:    # raised by the run itself, coded
        run_dataframe(p, df, arrival="arrival", finalize=True, result_schema="n long")
    assert info.value.code == "RESULT_SCHEMA_MISMATCH"


def test_a_hot_key_beyond_the_state_limit_fails_naming_key_and_limit(spark):
    p = (wl.Pipeline("hot", timestamp="ts").key_by("key")
         .window(wl.GlobalWindows.create()).process(Summary()))
    bundles = [Bundle([{"key": "cold", "ts": 1, "value": 1}] +
                      [{"key": "hot", "ts": i, "value": i} for i in range(300)])]
    with pytest.raises(wl.ExecutionError) as info:
        run_bundles_limited(p, bundles, 100)
    assert info.value.code == "KEY_STATE_LIMIT"
    assert "'hot'" in str(info.value) and "max_key_state=100" in str(info.value)
    firings, _, _ = run_bundles_limited(p, [Bundle(bundles[0].elements[:50])], 100)
    assert firings == []   # below the limit: fine


def run_bundles_limited(p, bundles, limit):
    from windowlib.engines.spark.testing import run_bundles_on_spark

    return run_bundles_on_spark(p, bundles, finalize=False, max_key_state=limit)


def test_window_all_runs_as_one_group_on_dataframes(spark):
    p = (wl.Pipeline("all", timestamp="ts").window_all(wl.TumblingEventTimeWindows.of(10))
         .aggregate(agg.count(), agg.collect_list("value")))
    df = spark.createDataFrame([(i, i % 3, i // 10) for i in range(40)],
                               "ts long, value long, arrival long")
    result = run_dataframe(p, df, arrival="arrival", finalize=True, order_by="ts")
    rows = sorted((r["window_start"], r["count"], r["collect_list_value"])
                  for r in in_ms(result.firings, "window_start").collect())
    assert rows == [(s, 10, [i % 3 for i in range(s, s + 10)]) for s in range(0, 40, 10)]


def test_explain_names_the_general_path_and_why(spark):
    p = (wl.Pipeline("e", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).evictor(wl.CountEvictor.of(2))
         .process(Summary()))
    text = explain(p)
    assert "general path" in text and "why not native" in text
    assert "evictor" in text and "Python code" in text
    assert "native path" in explain(
        wl.Pipeline("d", timestamp="ts").key_by("key")
        .window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.sum("v")))


def test_missing_columns_and_null_arrivals_are_clear_errors(spark):
    p = (wl.Pipeline("m", timestamp="ts").key_by("user")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count()))
    df = spark.createDataFrame([("a", 1, 0)], "key string, ts long, arrival long")
    with pytest.raises(wl.InputError, match="user"):
        run_dataframe(p, df, arrival="arrival")
    with pytest.raises(wl.InputError, match="arrival column 'hour'"):
        run_dataframe(p, df.withColumnRenamed("key", "user"), arrival="hour")
    nulls = spark.createDataFrame([("a", 1, None)], "user string, ts long, arrival long")
    with pytest.raises(wl.InputError, match="null arrival"):
        run_dataframe(p, nulls, arrival="arrival")


def test_pipeline_run_and_explain_delegate_to_the_spark_engine(spark):
    p = (wl.Pipeline("t", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(wl.aggregates.count()))
    df = spark.createDataFrame([("a", 1, "b0"), ("a", 2, "b0"), ("a", 15, "b1")],
                               "key string, ts long, arrival string")
    result = p.run(df, arrival="arrival", finalize=True)
    rows = sorted((r["key"], r["count"]) for r in result.firings.collect())
    assert rows == [("a", 1), ("a", 2)]
    assert "native path" in p.explain()


def test_local_sessions_are_utc_and_skip_per_call_site_capture(spark):
    # the shared fixture's session is one get_or_create_session() made; an active session is
    # returned as is (a notebook or spark-submit keeps its configuration)
    from pyspark.errors.utils import is_debugging_enabled

    from windowlib.engines.spark.session import get_or_create_session

    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    assert is_debugging_enabled() is False      # PySpark's cached view of the setting
    assert get_or_create_session() is spark


def test_python_workers_of_local_sessions_use_unix_sockets_and_windowlibs_daemon(spark):
    """Over TCP on loopback a Python worker waited ~40 ms for its first input batch in every
    task (docs/performance.md): windowlib's local sessions fork their workers from
    ``worker_daemon`` on Unix domain sockets. Asked of the workers themselves."""
    from spark_session import worker_sockets

    assert worker_sockets(spark) == {("true", "windowlib.engines.spark.worker_daemon")}


def test_building_columns_asks_the_jvm_nothing_it_answered_before(spark, monkeypatch):
    """Building an expression made py4j reflection round trips before every call: two per
    ``pyspark.sql.functions`` call, two per list of columns (``PythonUtils.toSeq``) and per
    column named by a string (``functions.col``) — ~965 per warm hourly run. windowlib's
    sessions remember the answers (``jvm_lookups``)."""
    from py4j import clientserver
    from pyspark.sql import functions as F
    from pyspark.sql.functions import builtin

    lookups = []
    send = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        lookups.extend([command] if command.startswith("r\n") else [])
        return send(self, command)

    def build():
        return [F.lit(i) for i in range(20)] + [F.coalesce("id", F.col("id"), F.lit(0))]

    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", counting)
    builtin._get_jvm_function.__wrapped__("lit", spark.sparkContext)    # PySpark's own
    assert len(lookups) == 2
    build()                                      # first calls of this process may ask
    lookups.clear()
    columns = build()
    assert lookups == []
    assert spark.range(3).select(columns[-1].alias("x"), columns[7].alias("y")).collect() == [
        (0, 7), (1, 7), (2, 7)]


def test_an_unset_windowlib_setting_is_read_without_an_exception_in_the_jvm(spark,
                                                                           monkeypatch):
    """Reading a setting Spark does not know raised ``NoSuchElementException`` in the JVM,
    sent back through py4j and raised again in Python: ~20 ms for each of windowlib's unset
    settings, ~90 ms per warm hourly run (docs/performance.md). ``conf_value`` reads
    windowlib's own settings with a default; Spark's still give their built-in default."""
    from py4j import clientserver

    from windowlib.engines.spark.session import conf_value, scoped_conf
    from windowlib.runs.io_settings import PARALLELISM_CONF

    errors = []
    send = clientserver.ClientServerConnection.send_command

    def watching(self, command):
        answer = send(self, command)
        errors.extend([answer] if answer.startswith("x") else [])    # py4j: an exception
        return answer

    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", watching)
    assert conf_value(spark, PARALLELISM_CONF) is None
    assert errors == []
    with scoped_conf(spark, {PARALLELISM_CONF: "3"}):
        assert conf_value(spark, PARALLELISM_CONF) == "3"
    assert conf_value(spark, PARALLELISM_CONF) is None
    assert conf_value(spark, "spark.sql.sources.partitionOverwriteMode") == "STATIC"
    assert errors == []
    assert conf_value(spark, "spark.no.such.setting") is None     # unknown to Spark: raises


def test_local_sessions_leave_progress_to_the_cli(spark):
    """Spark's console progress bars ([Stage 3:> (0 + 2) / 2]) wrote over the CLI's rich
    spinner on stderr: windowlib's local sessions turn them off (the CLI shows its own)."""
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.ui.showConsoleProgress") == "false"
    assert spark.sparkContext._jsc.sc().progressBar().isEmpty()


@pytest.mark.parametrize("aggregate", [agg.approx_count_distinct("value"), agg.sum("value")],
                         ids=["approx_count_distinct", "sum"])
def test_test_bundles_without_the_aggregated_column_run_as_on_the_reference_engine(spark,
                                                                                 aggregate):
    """``run_bundles(engine="spark")`` infers its columns from the elements: with no element
    (or none holding the aggregated column) the column is still there, and the run equals the
    reference engine's (found by ``test_differential_properties.py``: Spark's raw
    ``UNRESOLVED_COLUMN`` before)."""
    p = (wl.Pipeline("no_values", timestamp="ts")
         .window_all(wl.TumblingEventTimeWindows.of(5)).aggregate(aggregate))
    for bundles in ([Bundle(elements=())],
                    [Bundle(elements=({"key": "a", "ts": 1},)), Bundle(elements=())]):
        want = run_bundles(p, bundles, engine="reference", finalize=True, with_late=True,
                           with_rejects=True)
        got = run_bundles(p, bundles, engine="spark", finalize=True, with_late=True,
                          with_rejects=True)
        assert got == want
