"""A user function that raises is ``ExecutionError(FUNCTION_FAILED)`` naming the function, the
key and the window, with the original exception's type and message — on the reference engine,
on Spark one-shot and in incremental runs (never a bare exception or a ``PythonException``),
and nothing is published. On Spark, a function that runs out of memory is
``WORKER_MEMORY_EXCEEDED`` instead, and one that kills its worker ``WORKER_CRASHED``."""

from __future__ import annotations

import contextlib
import datetime as dt
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import strategies
from spark_session import ship_by_value

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.errors import ExecutionError
from windowlib.engines.spark import run_dataframe
from windowlib.runs.incremental import open_checkpoint, run_incremental
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark
T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
ship_by_value(strategies)   # its functions; this module ships itself only where a test says


class Ratio(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"ratio": len(elements) / sum(e["value"] for e in elements)}   # 0 -> divides by 0


class Fragile:
    """An evictor that fails on its first pane."""

    def evict_before(self, elements, size, window, ctx):
        raise RuntimeError("cannot evict")

    def evict_after(self, elements, size, window, ctx):
        pass


def spread(a, b):
    """A DeltaTrigger's delta function: divides by the previous value (0 -> fails)."""
    return b["value"] / a["value"]


class Stubborn(wl.Trigger):
    """A user trigger that fails when its window's end comes."""

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp)
        return wl.TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        raise LookupError("no such pane")

    def on_processing_time(self, time, window, ctx):
        return wl.TriggerResult.CONTINUE

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp)


class Forgetful(wl.ProcessWindowFunction):
    """Fails when its window's per-window state is cleared."""

    def process(self, key, context, elements):
        yield {"n": len(elements)}

    def clear(self, context):
        raise RuntimeError("cannot clear")


class Unmergeable(wl.AggregateFunction):
    """Fails when session windows merge."""

    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return {"n": accumulator}

    def merge(self, a, b):
        raise ValueError("cannot merge")


class Unassignable(wl.TumblingEventTimeWindows):
    """A user assigner that fails."""

    def assign_windows(self, element, ts_ms, processing_time_ms):
        raise OSError("no window")


def inverse_gap(element):
    return 1_000 // element["value"]        # 0 -> fails


def counting(trigger):
    return (wl.Pipeline("failing_trigger", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10))).trigger(trigger)
            .aggregate(agg.count()))


def pipeline(fn=None):
    p = (wl.Pipeline("failing", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10))))
    return p.process(fn or Ratio())


@contextlib.contextmanager
def shipped():
    """Let Spark's workers unpickle this module's functions (as a cluster ships user code)."""
    from pyspark import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


@contextlib.contextmanager
def jvm_log(spark):
    """What Spark's log4j loggers write to the console while the block runs: an extra appender
    on the root logger, behind the console appender's own filter (Spark shows WARN and above
    there; the root logger itself passes INFO)."""
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    writer = spark.sparkContext._jvm.java.io.StringWriter()
    appender = log4j.core.appender.WriterAppender.createAppender(
        log4j.core.layout.PatternLayout.createDefaultLayout(), None, writer, "wl-test", False,
        True)
    appender.start()
    console = config.getAppenders().get("console")
    config.getRootLogger().addAppender(appender, None if console else log4j.Level.WARN,
                                       console.getFilter() if console else None)
    context.updateLoggers()
    try:
        yield writer
    finally:
        config.getRootLogger().removeAppender("wl-test")
        context.updateLoggers()
        appender.stop()


def check(err, what="Ratio", original="ZeroDivisionError"):
    text = str(err.value)
    assert err.value.code == "FUNCTION_FAILED", text
    assert what in text and "'zero'" in text and "TimeWindow" in text and original in text, text


def test_the_reference_engine_names_function_key_and_window():
    with pytest.raises(ExecutionError) as err:
        run_bundles(pipeline(), [Bundle([{"key": "zero", "ts": 1, "value": 0}])],
                    finalize=True)
    check(err)
    assert isinstance(err.value.__cause__, ZeroDivisionError)


def test_a_failing_evictor_is_named_too():
    evicting = pipeline().evictor(wl.CountEvictor.of(5))
    object.__setattr__(evicting, "window_evictor", Fragile())
    with pytest.raises(ExecutionError) as err:
        run_bundles(evicting, [Bundle([{"key": "zero", "ts": 1, "value": 0}])], finalize=True)
    check(err, "Fragile", "RuntimeError: cannot evict")


@pytest.mark.parametrize("trigger, what, original", [
    (wl.DeltaTrigger.of(1.0, spread), "DeltaTrigger", "ZeroDivisionError"),
    (Stubborn(), "Stubborn", "LookupError: no such pane"),
], ids=["delta function", "user trigger"])
def test_a_failing_trigger_is_named_too(trigger, what, original):
    """Triggers run user code too (a DeltaTrigger's delta function, a user's Trigger)."""
    with pytest.raises(ExecutionError) as err:
        run_bundles(counting(trigger), [Bundle([{"key": "zero", "ts": 1, "value": 0},
                                                {"key": "zero", "ts": 2, "value": 1}])],
                    finalize=True)
    check(err, f"trigger {what}", original)


def keyed(window):
    return wl.Pipeline("failing_parts", timestamp="ts").key_by("key").window(window)


@pytest.mark.parametrize("p, what, original", [
    (keyed(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10))).process(Forgetful()),
     "Forgetful", "RuntimeError: cannot clear"),
    (keyed(wl.EventTimeSessionWindows.with_gap(wl.Time.seconds(10))).aggregate(Unmergeable()),
     "Unmergeable", "ValueError: cannot merge"),
    (keyed(Unassignable.of(wl.Time.minutes(10))).process(Forgetful()),
     "Unassignable", "OSError: no window"),
    (keyed(wl.EventTimeSessionWindows.with_dynamic_gap(inverse_gap)).process(Forgetful()),
     "inverse_gap", "ZeroDivisionError"),
], ids=["clear", "merge", "assigner", "dynamic gap"])
def test_every_other_piece_of_user_code_is_named_too(p, what, original):
    """A window function's ``clear``, an aggregate's ``merge``, a user's assigner, a dynamic
    session gap function: ``FUNCTION_FAILED`` naming it, the key and the window (or, before
    there is one, the element's time)."""
    with pytest.raises(ExecutionError) as err:
        run_bundles(p, [Bundle([{"key": "zero", "ts": 1, "value": 0},
                                {"key": "zero", "ts": 15_000, "value": 0},
                                {"key": "zero", "ts": 8_000, "value": 0}])], finalize=True)
    text = str(err.value)
    assert err.value.code == "FUNCTION_FAILED", text
    assert what in text and "'zero'" in text and original in text, text
    assert "TimeWindow" in text or "element at 1970-01-01" in text, text


def test_spark_one_shot_raises_the_windowlib_error(spark):
    """... and only that: the executor's own report of the failure (a Python traceback logged
    by ``Executor`` and ``TaskSetManager``) stays off the console of a local session."""
    df = spark.createDataFrame([("zero", T0, 0, "h0")],
                               "key string, ts timestamp, value long, arrival string")
    with jvm_log(spark) as log, shipped(), pytest.raises(ExecutionError) as err:
        pipeline().run(df, arrival="arrival", finalize=True)
    check(err)
    assert "ZeroDivisionError" not in log.toString() and "Traceback" not in log.toString()
    two = spark.createDataFrame([("zero", T0, 0, "h0"),
                                 ("zero", T0 + dt.timedelta(minutes=1), 1, "h0")], df.schema)
    with shipped(), pytest.raises(ExecutionError) as err:       # the same for a trigger
        counting(wl.DeltaTrigger.of(1.0, spread)).run(two, arrival="arrival", finalize=True)
    check(err, "trigger DeltaTrigger")


def test_functions_the_executors_cannot_import_are_a_coded_error(spark):
    """Without shipping, the workers cannot import this test module: MODULE_UNAVAILABLE."""
    df = spark.createDataFrame([("zero", T0, 0, "h0")],
                               "key string, ts timestamp, value long, arrival string")
    with pytest.raises(ExecutionError) as err:
        pipeline().run(df, arrival="arrival", finalize=True)
    assert err.value.code == "MODULE_UNAVAILABLE" and "test_function_failures" in str(err.value)


def test_a_python_worker_that_crashes_is_a_coded_error_not_a_java_trace(spark):
    df = spark.createDataFrame([("zero", T0, 0, "h0")],
                               "key string, ts timestamp, value long, arrival string")
    with pytest.raises(ExecutionError) as err:
        pipeline(strategies.KillsItsWorker()).run(df, arrival="arrival", finalize=True)
    text = str(err.value)
    assert err.value.code == "WORKER_CRASHED", text
    assert "spark.executor.pyspark.memory" in text and "\tat org.apache" not in text, text


@pytest.mark.parametrize("path", ["general", "panes"])
def test_a_function_out_of_memory_is_the_memory_error_not_its_own_failure(spark, path):
    """Its remedy is the worker's memory (or max_key_state), not the function's code: the
    error names the function, the key and the window, and then says so."""
    df = spark.createDataFrame([("zero", T0, 0, "h0")],
                               "key string, ts timestamp, value long, arrival string")
    with pytest.raises(ExecutionError) as err:
        run_dataframe(pipeline(strategies.AllocatesTooMuch()), df, arrival="arrival",
                      finalize=True, path=path)
    text = str(err.value)
    assert err.value.code == "WORKER_MEMORY_EXCEEDED", text
    assert "AllocatesTooMuch failed for key 'zero', window TimeWindow(" in text, text
    assert "MemoryError" in text and "max_key_state" in text, text


def test_an_incremental_run_raises_it_and_publishes_nothing(spark, tmp_path):
    folder = tmp_path / "events" / "arrival_hour=2024-03-01T00"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"key": ["zero", "zero"], "value": [0, 0],
                             "ts": pa.array([T0, T0 + dt.timedelta(minutes=30)],
                                            pa.timestamp("us", tz="UTC"))}),
                   folder / "part-0.parquet")
    p = pipeline()
    with shipped(), pytest.raises(ExecutionError) as err:
        run_incremental(p, wl.PartitionedSource(f"file://{tmp_path}/events"),
                        f"file://{tmp_path}/cp", f"file://{tmp_path}/out", spark=spark)
    check(err)
    assert open_checkpoint(p, f"file://{tmp_path}/cp").latest() is None
