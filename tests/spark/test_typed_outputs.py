"""Outputs of Python functions on Spark are typed as declared and equal the reference engine's:
late and rejected elements as they were given (datetimes included), typed result columns from
a function's ``result_schema``, side outputs on every entry point (one-shot result,
``run_bundles``, incremental runs)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
from collections.abc import Iterator
from decimal import Decimal

import pytest
from pyspark import cloudpickle

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.engines.spark.testing import run_bundles_on_spark
from windowlib.testing import Bundle, run_bundles

pytestmark = pytest.mark.spark
cloudpickle.register_pickle_by_value(sys.modules[__name__])

BASE = dt.datetime(2024, 3, 10, 12, 0)


class Values(wl.ProcessWindowFunction):
    def process(self, key, context, elements):
        yield {"values": sorted(e["value"] for e in elements)}


def P(name: str = "p") -> wl.Pipeline:
    return wl.Pipeline(name, timestamp="ts").key_by("key").window(
        wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))


# --- late and rejected elements come back as they were given ------------------------------------

def datetime_bundles() -> list[Bundle]:
    """``at`` mixes datetimes (naive and aware) with strings: the harness carries it as JSON."""
    aware = dt.datetime(2024, 3, 10, 13, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    return [
        Bundle([{"key": "a", "ts": BASE + dt.timedelta(minutes=10), "value": 1, "at": BASE,
                 "seen": BASE}]),
        Bundle([{"key": "a", "ts": BASE, "value": 2, "at": aware, "seen": BASE},
                {"key": "a", "ts": BASE, "value": 3, "at": "not a time", "seen": BASE},
                {"key": "b", "ts": None, "value": 4, "at": BASE, "seen": BASE},
                {"key": None, "ts": BASE, "value": 5, "at": dt.date(2024, 3, 10),
                 "seen": BASE}]),
    ]


@pytest.mark.parametrize(("path", "function"), [
    ("native", "declarative"), ("general", "declarative"), ("general", "process")])
def test_late_and_rejected_datetimes_equal_the_reference_records(spark, path, function):
    p = P().aggregate(agg.count()) if function == "declarative" else P().process(Values())
    bundles = datetime_bundles()
    _, late, rejects = run_bundles(p, bundles, engine="reference", with_late=True,
                                   with_rejects=True)
    assert [r["value"] for r in late] == [2, 3] and [r["value"] for r in rejects] == [4, 5]
    _, got_late, got_rejects = run_bundles_on_spark(p, bundles, path=path)
    assert got_late == late
    assert got_rejects == rejects
    assert isinstance(got_late[0]["at"], dt.datetime)


# --- typed results ------------------------------------------------------------------------------

class Stats(wl.ProcessWindowFunction):
    result_schema = "n long, s double"

    def process(self, key, context, elements):
        yield {"n": len(elements), "s": sum(e["value"] for e in elements)}


@dataclasses.dataclass
class Detail:
    n: int
    values: list[int]
    by_parity: dict[str, int]
    first: dt.datetime | None
    day: dt.date
    ratio: Decimal
    where: tuple[float, ...]


class Details(wl.ProcessWindowFunction):
    def process(self, key, context, elements) -> Iterator[Detail]:
        values = [e["value"] for e in elements]
        yield Detail(len(values), values,
                     {"even": sum(v % 2 == 0 for v in values), "odd": sum(v % 2 for v in values)},
                     min(e["at"] for e in elements), dt.date(2024, 3, 10),
                     Decimal(sum(values)) / 4, (0.5, float(len(values))))


class Big(wl.ProcessWindowFunction):
    """A typed side output and an untyped one (values of any plain type: JSON on Spark)."""

    result_schema = "n long"
    big = wl.OutputTag("big", schema="key string, n long, at timestamp")

    def process(self, key, context, elements):
        context.output(self.big, {"key": key, "n": len(elements), "at": elements[0]["at"]})
        context.output("audit", (key, context.pane.index, elements[-1]["at"]))
        yield {"n": len(elements)}


class WrongType(wl.ProcessWindowFunction):
    result_schema = "n long, s double"

    def process(self, key, context, elements):
        yield {"n": len(elements), "s": "many" if key == "b" else 1.0}


def typed_bundles() -> list[Bundle]:
    at = [BASE + dt.timedelta(minutes=m, microseconds=7) for m in range(12)]
    return [
        Bundle([{"key": "a", "ts": at[0], "value": 1, "at": at[0]},
                {"key": "b", "ts": at[1], "value": 2, "at": at[1]},
                {"key": "a", "ts": at[2], "value": 3, "at": at[2]}]),
        Bundle([{"key": "a", "ts": at[6], "value": 4, "at": at[6]},
                {"key": "b", "ts": at[11], "value": 5, "at": at[11]}]),
        Bundle([{"key": "a", "ts": at[3], "value": 6, "at": at[3]}]),
    ]


@pytest.mark.parametrize("function", [Stats, Details, Big])
def test_declared_results_on_spark_equal_the_reference(spark, function):
    p = P().allowed_lateness(wl.Time.minutes(10)).process(function())
    kwargs = dict(finalize=True, with_late=True, with_side_outputs=True)
    want = run_bundles(p, typed_bundles(), engine="reference", **kwargs)
    got = run_bundles(p, typed_bundles(), engine="spark", **kwargs)
    assert sorted(map(repr, got[0])) == sorted(map(repr, want[0]))
    assert got[1] == want[1]
    assert {t: sorted(map(repr, v)) for t, v in got[2].items()} == \
        {t: sorted(map(repr, v)) for t, v in want[2].items()}


def test_a_value_that_does_not_fit_fails_on_spark_as_on_the_reference(spark):
    p = P().process(WrongType())
    errors = []
    for engine in ("reference", "spark"):
        with pytest.raises(wl.ExecutionError) as info:
            run_bundles(p, typed_bundles(), engine=engine, finalize=True)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "field 's'" in errors[0] and "key 'b'" in errors[0]


def frame_of(spark, bundles: list[Bundle]):
    rows = [{**e, "arrival": b} for b, bundle in enumerate(bundles) for e in bundle.elements]
    return spark.createDataFrame(rows, "key string, ts timestamp, value long, at timestamp, "
                                       "arrival int")


def test_one_shot_results_are_typed_columns_and_side_outputs_dataframes(spark):
    result = P().process(Big()).run(frame_of(spark, typed_bundles()), arrival="arrival",
                                    finalize=True)
    assert result.firings.columns[-1] == "n"
    assert dict(result.firings.dtypes)["n"] == "bigint"
    big = result.side_output("big")
    assert big.dtypes == [("key", "string"), ("n", "bigint"), ("at", "timestamp")]
    want = run_bundles(P().process(Big()), typed_bundles(), finalize=True,
                       with_side_outputs=True)[1]
    assert sorted(tuple(r) for r in big.collect()) == \
        sorted(tuple(v.values()) for v in want["big"])
    audit = result.side_output(wl.OutputTag("audit"))
    assert audit.columns == ["value_json"] and audit.count() == len(want["audit"])
    assert result.side_output("nothing").count() == 0
    result.unpersist()


def test_yield_hints_type_the_columns(spark):
    result = P().process(Details()).run(frame_of(spark, typed_bundles()), arrival="arrival",
                                        finalize=True)
    assert result.firings.dtypes[-7:] == [
        ("n", "bigint"), ("values", "array<bigint>"), ("by_parity", "map<string,bigint>"),
        ("first", "timestamp"), ("day", "date"), ("ratio", "decimal(38,18)"),
        ("where", "array<double>")]
    want = run_bundles(P().process(Details()), typed_bundles(), finalize=True)
    assert sorted(r["n"] for r in result.firings.collect()) == sorted(r["n"] for r in want)
    result.unpersist()


def test_the_native_path_has_no_side_outputs(spark):
    result = P().aggregate(agg.count()).run(frame_of(spark, typed_bundles()),
                                            arrival="arrival", finalize=True)
    assert result.path == "native"
    assert result.side_output("big").count() == 0
    assert run_bundles(P().aggregate(agg.count()), typed_bundles(), engine="spark",
                       with_side_outputs=True)[1] == {}


# --- incremental runs ---------------------------------------------------------------------------

def test_incremental_runs_write_typed_results_and_side_outputs(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from windowlib.runs.outputs import read_firings, read_side_outputs

    bundles = typed_bundles()
    schema = pa.schema([("key", pa.string()), ("ts", pa.timestamp("us")),
                        ("value", pa.int64()), ("at", pa.timestamp("us"))])
    hours = [f"2024-03-10T{12 + b:02d}" for b in range(len(bundles))]
    for hour, bundle in zip(hours, bundles):
        folder = tmp_path / "events" / f"arrival_hour={hour}"
        folder.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(list(bundle.elements), schema=schema),
                       folder / "part-0.parquet")
    p = P("typed_incremental").allowed_lateness(wl.Time.minutes(10)).process(Big())
    where = {"source": wl.PartitionedSource(f"file://{tmp_path}/events",
                                            partition="arrival_hour"),
             "checkpoint": f"file://{tmp_path}/checkpoints", "output": f"file://{tmp_path}/out"}
    for hour in hours:
        assert wl.run_incremental(p, partitions=(hour, hour), spark=spark,
                                  **where).status == "published"
    firings = read_firings(where["output"], spark=spark)
    assert dict(firings.dtypes)["n"] == "bigint" and "result_json" not in firings.columns
    big = read_side_outputs(where["output"], spark=spark, tag="big")
    assert big.dtypes == [("key", "string"), ("n", "bigint"), ("at", "timestamp")]
    hourly = [Bundle(b.elements, processing_time=BASE + dt.timedelta(hours=i + 1))
              for i, b in enumerate(bundles)]
    want, side = run_bundles(p, hourly, with_side_outputs=True)
    assert sorted((r["key"], r["n"]) for r in firings.collect()) == \
        sorted((r["key"], r["n"]) for r in want)
    assert sorted(tuple(r) for r in big.collect()) == \
        sorted(tuple(v.values()) for v in side["big"])
    audit = read_side_outputs(where["output"], spark=spark, tag="audit")
    assert audit.columns == ["value_json"] and audit.count() == len(side["audit"])
    _side_outputs_table_agrees(spark, where["output"], p.name)


def _side_outputs_table_agrees(spark, output: str, pipeline: str) -> None:
    """The side outputs are a table too: the catalog name and a non-Spark reader (the Delta
    table through pyarrow) show exactly what ``read_side_outputs`` reads."""
    from windowlib.runs.outputs import read_side_outputs
    from windowlib.runs.tables import open_table, spark_names

    committed = read_side_outputs(output, spark=spark)
    by_name = spark.table(spark_names(pipeline)["side_outputs"])
    assert by_name.columns == committed.columns
    assert by_name.count() == committed.count() > 0
    assert by_name.exceptAll(committed).count() == committed.exceptAll(by_name).count() == 0
    delta = open_table(output, "side_outputs").to_pyarrow_dataset().to_table()
    pairs = zip(delta.column("tag").to_pylist(), delta.column("value_json").to_pylist())
    assert sorted(pairs, key=repr) == sorted(((r["tag"], r["value_json"])
                                              for r in committed.collect()), key=repr)


# --- Arrow's large types ------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["auto", "general"])
@pytest.mark.parametrize("function", [Values, Details, Big])
def test_results_with_arrow_large_types_equal_the_reference(spark, path, function):
    """With ``spark.sql.execution.arrow.useLargeVarTypes`` Spark hands the walkers their
    strings as Arrow's ``large_string`` (64-bit offsets): JSON results, typed results, side
    outputs and late rows read from that form equal the reference engine's."""
    from windowlib.engines.spark.session import scoped_conf
    from windowlib.engines.spark.testing import run_bundles_on_spark

    p = P().allowed_lateness(wl.Time.minutes(10)).process(function())
    want = run_bundles(p, typed_bundles(), engine="reference", finalize=True, with_late=True,
                       with_rejects=True, with_side_outputs=True)
    with scoped_conf(spark, {"spark.sql.execution.arrow.useLargeVarTypes": "true"}):
        got = run_bundles_on_spark(p, typed_bundles(), finalize=True, path=path,
                                   with_side_outputs=True)
    assert sorted(map(repr, got[0])) == sorted(map(repr, want[0]))
    assert got[1:3] == want[1:3]
    assert {t: sorted(map(repr, v)) for t, v in got[3].items()} == \
        {t: sorted(map(repr, v)) for t, v in want[3].items()}
