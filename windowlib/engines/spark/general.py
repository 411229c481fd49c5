"""The general path: the semantic core's ``KeyDriver`` run per key inside Spark tasks.

Plan (DataFrame API only — no RDD or SparkContext — so it also runs over Spark Connect)::

    input ─► prepare_input (arrival key, event time ms, timestamp reject reason)
          ─► repartition(key columns)            (window_all: one partition)
          ─► sortWithinPartitions(keys, arrival, arrival order)
          ─► mapInArrow(walk)                     one Python call per partition, not per key
          ─► the tagged output: one row per firing, late element or reject (``__wl_kind``)

``walk`` reads the key-sorted Arrow batches, detects runs of equal keys and runs ONE
``KeyDriver`` per key over the bundle sequence (SPEC §1), exactly as the reference engine does:
for each bundle ``b`` in order: processing time ``P_b``, timers (step 1), the key's elements of
the bundle in arrival order (step 2), watermark ``W_b`` and its timers (steps 3-4); then
``finish()`` when the run is finalized. Bundles in which the key has no elements are skipped
unless one of its timers is due there: the driver's next event/processing timer is looked up
in the (monotone) ``W``/``P`` sequences by bisection, so the cost follows data and live state,
not keys x bundles. The bundle sequence (``P_b``, ``W_b``; see ``bundles.py``) is a small list
shipped in the task closure.

Rows are rejected with the reference engine's reasons (``null_timestamp``,
``missing_timestamp``, ``invalid_timestamp``, ``future_timestamp``, ``missing_key``); elements
dropped for every window are emitted as late (with the watermark they met).

**Memory.** A key's elements are streamed: the walker holds one Arrow batch, the current key's
driver (its live window state: accumulators, or buffered elements for evictors and
``process``/``apply`` functions; timers; per-key state) and a bounded output buffer. Spark's
sort spills to disk, so the partition size is not bounded by memory. A key whose live state
grows beyond ``max_key_state`` entries (buffered elements + open windows; checked every few
thousand elements) fails the run with ``ExecutionError(KEY_STATE_LIMIT)`` naming the key and
the limit, instead of exhausting the Python worker.

**Result columns.** For declarative aggregates (``aggregate(wl.aggregates.sum(...), ...)``
without a process function) the result columns are typed from the input schema. For Python
window functions the result row is emitted as a JSON string ``result_json``
(``json.dumps(codec.encode(row))``, so any plain-data result survives); pass
``result_schema`` (a DDL string such as ``"total long, label string"``) to get typed columns
instead (values are converted by Arrow; a value that does not fit fails with a clear error).
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from windowlib.core.codec import decode, encode
from windowlib.core.driver import EVENT, PROCESSING, Clock, KeyDriver, Sink
from windowlib.core.errors import ExecutionError, InputError, StateError
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MAX_TS, MIN_TS
from windowlib.core.watermarks import BoundedOutOfOrderness, WatermarkStrategy
from windowlib.engines.spark.bundles import (
    ARRIVAL,
    INTERNAL_PREFIX,
    TREASON,
    TS,
    BundleOverride,
    BundlePlan,
    arrival_key_column,
    event_time_columns,
    plan_bundles,
)
from windowlib.engines.spark.state import STATE_FORMAT_VERSION, RunClock, check_state_frame

DEFAULT_MAX_KEY_STATE = 5_000_000
_CHECK_EVERY = 4096
_FLUSH_ROWS = 8192

KIND, B, PHASE, SUB, N = "__wl_kind", "__wl_b", "__wl_phase", "__wl_sub", "__wl_n"
ELEMENT, REASON = "__wl_element", "__wl_reason"
# pane state in/out (see state.py), side-output values, per-partition counts
STATE, NEXT_ET, NEXT_PT, SIZE, FORMAT = ("__wl_state", "__wl_next_et", "__wl_next_pt",
                                         "__wl_size", "__wl_format")
VALUE, SRC = "__wl_value", "__wl_src"
ABSENT = "__wl_absent"   # test hook: array<string> of columns absent from the element
RESULT_JSON = "result_json"
PHASE_TIMERS_PT, PHASE_ELEMENTS, PHASE_TIMERS_WM, PHASE_FINISH = 0, 1, 2, 3


@dataclass
class GeneralRun:
    """What ``run_general`` returns: the tagged output and what it was computed from."""

    tagged: Any              # DataFrame (persisted); see the module docstring
    plan: BundlePlan
    key_columns: tuple[str, ...]
    result_columns: tuple[str, ...]   # typed result columns ("result_json" for JSON mode)
    result_mode: str                  # "typed" | "json" | "schema"
    retracting: bool
    element_columns: tuple[str, ...]
    emit_state: bool = False

    def state(self) -> Any:
        """The pane state after this run (``state.py`` schema), one row per live key."""
        from pyspark.sql import functions as F

        keys = [F.col(f"`{c}`") for c in self.key_columns]
        return self.tagged.filter(F.col(KIND) == "state").select(
            *keys, F.col(STATE).alias("state"), F.col(NEXT_ET).alias("next_event_timer"),
            F.col(NEXT_PT).alias("next_processing_timer"), F.col(SIZE).alias("entries"),
            F.lit(STATE_FORMAT_VERSION).cast("int").alias("format_version"))

    def side_outputs(self) -> Any:
        """Values emitted with ``context.output(tag, value)``: key columns, ``tag``,
        ``value_json`` (``codec``-encoded JSON), ``watermark`` and ``processing_time``."""
        from pyspark.sql import functions as F

        keys = [F.col(f"`{c}`") for c in self.key_columns]
        return self.tagged.filter(F.col(KIND) == "side").select(
            *keys, F.col(REASON).alias("tag"), F.col(VALUE).alias("value_json"),
            F.timestamp_millis(F.col("watermark")).alias("watermark"),
            F.timestamp_millis(F.col("processing_time")).alias("processing_time"))

    def counts(self) -> dict[str, Any]:
        """One small aggregate over the tagged output: rows per kind, firings per timing,
        retractions, elements processed (counted by the walkers), state rows and entries."""
        from pyspark.sql import functions as F

        rows = (self.tagged.groupBy(KIND, "timing", *(["retract"] if self.retracting else []))
                .agg(F.count(F.lit(1)).alias("n"), F.sum(SIZE).alias("size")).collect())
        out: dict[str, Any] = {"firings": 0, "late": 0, "rejects": 0, "side_outputs": 0,
                               "processed": 0, "state_rows": 0, "state_entries": 0,
                               "retractions": 0, "by_timing": {}}
        for row in rows:
            kind, n, size = row[KIND], int(row["n"]), int(row["size"] or 0)
            if kind == "firing":
                out["firings"] += n
                if self.retracting and row["retract"]:
                    out["retractions"] += n
                else:
                    timing = row["timing"]
                    out["by_timing"][timing] = out["by_timing"].get(timing, 0) + n
            elif kind == "late":
                out["late"] += n
            elif kind == "reject":
                out["rejects"] += n
            elif kind == "side":
                out["side_outputs"] += n
            elif kind == "stats":
                out["processed"] += size
            elif kind == "state":
                out["state_rows"] += n
                out["state_entries"] += size
        return out


# --- schema ---------------------------------------------------------------------------------

def _declarative_type(agg: Any, input_types: Mapping[str, Any]) -> Any:
    """Spark type of one declarative aggregate's result, or None when not safely typable."""
    from pyspark.sql import types as T

    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    atomic = (*integral, T.FloatType, T.DoubleType, T.StringType, T.BooleanType,
              T.TimestampType, T.TimestampNTZType, T.DateType)
    kind = agg.kind
    if kind in ("count", "approx_count_distinct"):
        return T.LongType()
    dtype = input_types.get(agg.column)
    if dtype is None:
        return None
    if kind == "sum":
        if isinstance(dtype, integral):
            return T.LongType()
        if isinstance(dtype, T.FloatType | T.DoubleType):
            return T.DoubleType()
        return None
    if kind == "mean":
        return T.DoubleType() if isinstance(dtype, (*integral, T.FloatType, T.DoubleType)) \
            else None
    if not isinstance(dtype, atomic):
        return None
    if isinstance(dtype, T.TimestampNTZType):
        dtype = T.TimestampType()
    if kind == "collect_list":
        return T.ArrayType(dtype, True)
    return dtype  # min, max, first, last


def result_fields(pipeline: Pipeline, input_types: Mapping[str, Any],
                  result_schema: str | None) -> tuple[str, list]:
    """``(mode, fields)`` of the result columns: typed declarative, a user schema, or JSON."""
    from pyspark.sql import types as T

    if result_schema is not None:
        parsed = T.DataType.fromDDL(result_schema) if isinstance(result_schema, str) \
            else result_schema
        if not isinstance(parsed, T.StructType):
            raise InputError(f"result_schema must describe columns (e.g. 'total long, label "
                             f"string'), got {result_schema!r}", code="ARGUMENT_INVALID")
        return "schema", list(parsed.fields)
    spec = pipeline.function
    names = spec.output_names() if spec is not None else None
    if names is not None:
        fields = []
        for agg in spec.fn.aggregates:
            dtype = _declarative_type(agg, input_types)
            if dtype is None:
                break
            fields.append(T.StructField(agg.name, dtype, True))
        else:
            return "typed", fields
    return "json", [T.StructField(RESULT_JSON, T.StringType(), True)]


def tagged_schema(key_fields: list, result: list, retracting: bool, element: Any) -> Any:
    from pyspark.sql import types as T

    fields = [T.StructField(KIND, T.StringType(), False),
              T.StructField(B, T.IntegerType(), False),
              T.StructField(PHASE, T.IntegerType(), False),
              T.StructField(SUB, T.LongType(), False),
              T.StructField(N, T.LongType(), False),
              *key_fields,
              T.StructField("window_start", T.LongType(), True),
              T.StructField("window_end", T.LongType(), True),
              T.StructField("pane_index", T.LongType(), True),
              T.StructField("timing", T.StringType(), True),
              T.StructField("is_final", T.BooleanType(), True)]
    if retracting:
        fields.append(T.StructField("retract", T.BooleanType(), True))
    fields += [T.StructField("watermark", T.LongType(), True),
               T.StructField("processing_time", T.LongType(), True),
               *result,
               T.StructField(ELEMENT, element, True),
               T.StructField(REASON, T.StringType(), True),
               T.StructField(STATE, T.StringType(), True),
               T.StructField(NEXT_ET, T.LongType(), True),
               T.StructField(NEXT_PT, T.LongType(), True),
               T.StructField(SIZE, T.LongType(), True),
               T.StructField(VALUE, T.StringType(), True)]
    return T.StructType(fields)


# --- preparation ----------------------------------------------------------------------------

def prepare_input(df: Any, pipeline: Pipeline, arrival: str) -> tuple[Any, str]:
    """Add ``__wl_arrival``, ``__wl_ts`` and ``__wl_treason`` (kept when already present: the
    test harness precomputes them for columns Spark cannot type)."""
    logic = pipeline.compile()
    for c in logic.key_columns:
        if c not in df.columns:
            raise InputError(f"key column {c!r} is not in the DataFrame (columns: "
                             f"{', '.join(df.columns)})", code="COLUMN_MISSING")
    key_col, kind = arrival_key_column(df, arrival)
    df = df.withColumn(ARRIVAL, key_col)
    if TS not in df.columns or TREASON not in df.columns:
        ms, reason = event_time_columns(df, logic.timestamp)
        df = df.withColumn(TS, ms).withColumn(TREASON, reason)
    return df, kind


def _default_order(df: Any, user_columns: Sequence[str]) -> list:
    """SPEC §1: ascending event time, ties broken by a deterministic hash of the whole row."""
    from pyspark.sql import functions as F

    cols = [F.col(f"`{c}`") for c in user_columns]
    return [F.col(TS).asc_nulls_first(), F.xxhash64(*cols), F.hash(*cols)]


# --- the run --------------------------------------------------------------------------------

def run_general(pipeline: Pipeline, df: Any, arrival: str, *,
                watermark: WatermarkStrategy | None = None, finalize: bool = False,
                order_by: Sequence[str] | str | None = None, result_schema: str | None = None,
                processing_time: Any = None, arrival_interval: Any = None,
                overrides: Mapping[Any, BundleOverride] | None = None,
                max_key_state: int = DEFAULT_MAX_KEY_STATE,
                json_columns: Sequence[str] = (), seq_column: str | None = None,
                persist: bool = True, single_partition: bool = False,
                partitions: int | None = None, state: Any = None,
                clock: RunClock | None = None, emit_state: bool = False) -> GeneralRun:
    """Plan the bundles (one small aggregate job) and build the tagged output DataFrame.

    See ``engine.run_dataframe`` for the public contract; ``json_columns`` and ``seq_column``
    are hooks of the test harness (columns holding ``codec``-encoded JSON, and the column that
    numbers elements inside a bundle, reported in the ordering metadata); so is
    ``single_partition`` (the input is one partition: walk it without a shuffle).

    Incremental runs (``windowlib.runs``) pass the previous run's pane ``state`` (a frame with
    the ``state.py`` schema) and ``clock`` (where watermark, processing time and the largest
    accepted event time stood), and ``emit_state=True`` to get the new state from
    ``GeneralRun.state()``. Keys of ``state`` with no new elements and no timer due in this run
    are copied through without being parsed.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    logic = pipeline.compile()
    strategy = watermark if watermark is not None else BoundedOutOfOrderness(0)
    clock = clock if clock is not None else RunClock()
    prepared, kind = prepare_input(df, pipeline, arrival)
    user_columns = [c for c in df.columns if not c.startswith(INTERNAL_PREFIX)]
    plan = plan_bundles(prepared, kind=kind, key_columns=logic.key_columns, strategy=strategy,
                        max_future_skew_ms=logic.max_future_skew_ms, overrides=overrides,
                        processing_time=processing_time, arrival_interval=arrival_interval,
                        initial_watermark=clock.watermark,
                        initial_processing_time=clock.processing_time,
                        initial_max_event_ts=clock.max_event_ts)
    if not logic.event_time:
        for b, (count, p) in enumerate(zip(plan.counts, plan.processing_times)):
            if count and p == MIN_TS:
                raise InputError(
                    f"processing-time windows need a processing time on every bundle that has "
                    f"elements; bundle {b} (arrival {plan.arrivals[b]!r}) has none: pass "
                    "processing_time= or use a time-valued arrival column",
                    code="NO_PROCESSING_TIME")

    schema = df.schema
    types = {f.name: f.dataType for f in schema.fields}
    json_set = set(json_columns)
    typed_inputs = {c: t for c, t in types.items() if c not in json_set}
    mode, result = result_fields(pipeline, typed_inputs, result_schema)
    # the driver never lets a result overwrite a key column (KeyDriver._row); neither do we
    result = [f for f in result if f.name not in logic.key_column_set]
    key_fields = [T.StructField(c, types[c], True) for c in logic.key_columns]
    element = T.StructType([T.StructField(c, types[c], True) for c in user_columns])
    out_schema = tagged_schema(key_fields, result, logic.retracting, element)

    order: list = []
    if order_by is not None:
        order = [F.col(f"`{c}`") for c in ([order_by] if isinstance(order_by, str)
                                           else order_by)]
    else:
        order = _default_order(df, user_columns)
    keys = [F.col(f"`{c}`") for c in logic.key_columns]
    has_state = state is not None
    sort_head: list = []
    if has_state:
        check_state_frame(state, logic.key_columns, types)
        # state rows first within each key (SRC 0), then the key's elements (SRC 1)
        state_rows = state.select(
            *keys, F.col("state").alias(STATE), F.col("next_event_timer").alias(NEXT_ET),
            F.col("next_processing_timer").alias(NEXT_PT), F.col("entries").alias(SIZE),
            F.col("format_version").alias(FORMAT), F.lit(0).alias(SRC))
        prepared = prepared.withColumn(SRC, F.lit(1)).unionByName(
            state_rows, allowMissingColumns=True)
        sort_head = [F.col(SRC)]
    if single_partition and not has_state:
        arranged = prepared   # the caller guarantees one partition: no shuffle needed
    elif keys:
        # an explicit partition count: adaptive execution would otherwise coalesce the shuffle
        # by bytes into one or two partitions, but here the cost is Python time per row
        n = partitions if partitions is not None else _shuffle_partitions(df)
        arranged = prepared.repartition(n, *keys) if n else prepared.repartition(*keys)
    else:
        arranged = prepared.repartition(1)
    arranged = arranged.sortWithinPartitions(*keys, *sort_head, F.col(ARRIVAL), *order)

    needed = [*user_columns, ARRIVAL, TS, TREASON]
    if has_state:
        needed += [STATE, NEXT_ET, NEXT_PT, SIZE, FORMAT]
    if ABSENT in prepared.columns:
        needed.append(ABSENT)
    if seq_column is not None:
        needed.append(seq_column)
    arranged = arranged.select(*[F.col(f"`{c}`") for c in dict.fromkeys(needed)])
    large = _large_var_types(df)
    config = _WalkConfig(
        pipeline=pipeline, arrivals=plan.index, processing_times=plan.processing_times,
        watermarks=plan.watermarks, initial_watermark=plan.initial_watermark,
        finalize=finalize, user_columns=tuple(user_columns), json_columns=tuple(json_set),
        seq_column=seq_column, has_absent=ABSENT in prepared.columns,
        result_mode=mode, result_names=tuple(f.name for f in result),
        max_key_state=max_key_state, out_schema_json=out_schema.json(), large_types=large,
        has_state=has_state, emit_state=emit_state,
        initial_processing_time=clock.processing_time)
    tagged = arranged.mapInArrow(_make_walker(config), out_schema)
    if persist:
        tagged = tagged.persist()
    return GeneralRun(tagged=tagged, plan=plan, key_columns=logic.key_columns,
                      result_columns=tuple(f.name for f in result), result_mode=mode,
                      retracting=logic.retracting, element_columns=tuple(user_columns),
                      emit_state=emit_state)


def _shuffle_partitions(df: Any) -> int | None:
    try:
        value = df.sparkSession.conf.get("spark.sql.shuffle.partitions", None)
        return int(value) if value is not None else None
    except Exception:  # "auto" on some platforms, or a restricted Connect server
        return None


def _large_var_types(df: Any) -> bool:
    try:
        value = df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
    except Exception:  # pragma: no cover - conf not readable (restricted Connect servers)
        return False
    return str(value).lower() == "true"


# --- the walker (runs in Python workers) ----------------------------------------------------

@dataclass
class _WalkConfig:
    pipeline: Pipeline
    arrivals: dict
    processing_times: list
    watermarks: list
    initial_watermark: int
    finalize: bool
    user_columns: tuple
    json_columns: tuple
    seq_column: str | None
    has_absent: bool
    result_mode: str
    result_names: tuple
    max_key_state: int
    out_schema_json: str
    large_types: bool
    has_state: bool = False
    emit_state: bool = False
    initial_processing_time: int = MIN_TS


def _make_walker(config: _WalkConfig) -> Any:
    def walk(batches: Iterator[Any]) -> Iterator[Any]:
        yield from _Walker(config).run(batches)

    return walk


def _naive_type(t: Any) -> Any:
    """The same Arrow type with time zones dropped (UTC wall time), recursively."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) and t.tz is not None:
        return pa.timestamp(t.unit)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _naive_type(f.type), f.nullable) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _naive_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, _naive_type(t.value_type)))
    return t


class _WalkSink(Sink):
    """Routes the driver's firings to the walker (with the clock at emission time)."""

    def __init__(self, walker: _Walker) -> None:
        super().__init__()
        self.walker = walker

    def firing(self, row: dict) -> None:
        self.walker.emit_firing(row)

    def late_element(self, row: dict, watermark: int) -> None:
        return None  # the walker emits late rows itself, with the element as read

    def side_output(self, tag: str, value: Any) -> None:
        self.walker.emit_side(tag, value)


class _Walker:
    """Walks key runs of one partition; see the module docstring."""

    def __init__(self, config: _WalkConfig) -> None:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType

        self.config = config
        self.logic = config.pipeline.compile()
        self.clock = Clock()
        self.clock.watermark = config.initial_watermark
        self.clock.processing_time = config.initial_processing_time
        self.sink = _WalkSink(self)
        self.P = config.processing_times
        self.W = config.watermarks
        self.n_bundles = len(self.P)
        out_schema = StructType.fromJson(json.loads(config.out_schema_json))
        self.arrow_schema = to_arrow_schema(out_schema, timezone="UTC",
                                            prefers_large_types=config.large_types)
        self.pa = pa
        self.rows: list[tuple] = []
        self.n = 0
        key_columns = self.logic.key_columns
        self.key_columns = key_columns
        self.result_mode = config.result_mode
        self.result_names = config.result_names
        self.n_results = len(config.result_names)
        self.skip_in_json = frozenset(key_columns) | {
            "window_start", "window_end", "pane_index", "timing", "is_final", "retract"}
        self.allowed_result_keys = self.skip_in_json | set(config.result_names)
        self.retracting = self.logic.retracting
        self.no_keys = (None,) * len(key_columns)
        # per key
        self.key: tuple | None = None
        self.out_key: tuple = ()       # the key as read (JSON text for the test harness)
        self.driver: KeyDriver | None = None
        self.b_open = -1
        self.b_next = 0
        self.b = 0
        self.phase = PHASE_ELEMENTS
        self.sub = 0
        self.since_check = 0
        self.pending: tuple | None = None   # the key's saved state, not parsed yet
        self.processed = 0
        self.tail_none = (None,) * 5        # STATE .. VALUE of non-state rows

    # --- output ----------------------------------------------------------------------------
    def _meta(self, kind: str) -> tuple:
        self.n += 1
        return (kind, self.b, self.phase, self.sub, self.n)

    def emit_firing(self, row: dict) -> None:
        clock = self.clock
        head = self._meta("firing")
        keys = self.out_key
        meta = (row["window_start"], row["window_end"], row["pane_index"], row["timing"],
                row["is_final"])
        if self.retracting:
            meta = (*meta, row.get("retract", False))
        times = (_finite(clock.watermark), _finite(clock.processing_time))
        mode = self.result_mode
        if mode == "json":
            payload = {k: v for k, v in row.items() if k not in self.skip_in_json}
            results: tuple = (json.dumps(encode(payload), separators=(",", ":")),)
        else:
            results = tuple(row.get(name) for name in self.result_names)
            if mode == "schema" and not self.allowed_result_keys.issuperset(row):
                extra = set(row) - self.allowed_result_keys
                if extra:
                    raise ExecutionError(
                        f"the window function returned columns {sorted(extra)} that are not "
                        f"in result_schema ({', '.join(self.result_names)})",
                        code="RESULT_SCHEMA_MISMATCH")
        self.rows.append((*head, *keys, *meta, *times, *results, None, None, *self.tail_none))

    def emit_element(self, kind: str, element: dict, reason: str, watermark: int | None
                     ) -> None:
        head = self._meta(kind)
        tail = (None,) * (5 + (1 if self.retracting else 0))
        self.rows.append((*head, *self.no_keys, *tail, watermark, _finite(self.P[self.b]),
                          *((None,) * self.n_results), element, reason, *self.tail_none))

    def _bare_row(self, kind: str, keys: tuple, times: tuple, reason: str | None,
                  state: tuple) -> None:
        head = self._meta(kind)
        meta = (None,) * (5 + (1 if self.retracting else 0))
        self.rows.append((*head, *keys, *meta, *times, *((None,) * self.n_results), None,
                          reason, *state))

    def emit_side(self, tag: str, value: Any) -> None:
        clock = self.clock
        value_json = json.dumps(encode(value), separators=(",", ":"))
        self._bare_row("side", self.out_key,
                       (_finite(clock.watermark), _finite(clock.processing_time)), tag,
                       (None, None, None, None, value_json))

    def emit_state(self, text: str, next_et: int | None, next_pt: int | None, size: int
                   ) -> None:
        self._bare_row("state", self.out_key, (None, None), None,
                       (text, next_et, next_pt, size, None))

    def flush(self) -> Any:
        pa = self.pa
        rows, self.rows = self.rows, []
        schema = self.arrow_schema
        columns = list(zip(*rows)) if rows else [()] * len(schema)
        arrays = []
        for field, values in zip(schema, columns):
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as exc:
                raise ExecutionError(
                    f"output column {field.name!r} cannot hold the values the pipeline "
                    f"produced ({exc}); for Python window functions pass a matching "
                    "result_schema or leave it unset to get result_json",
                    code="RESULT_SCHEMA_MISMATCH") from exc
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    # --- per key ---------------------------------------------------------------------------
    def start_key(self, key: tuple) -> None:
        self.key = key
        self.driver = None
        self.pending = None
        self.b_open = -1
        self.b_next = 0
        self.since_check = 0

    def hold_state(self, text: str, next_et: int | None, next_pt: int | None, size: int,
                   version: int) -> None:
        """Keep the key's saved state; it is parsed only when the key has work to do."""
        if version != STATE_FORMAT_VERSION:
            raise StateError(f"pane state of key {self.key!r} has format_version {version!r}; "
                             f"this windowlib reads {STATE_FORMAT_VERSION}",
                             code="CHECKPOINT_FORMAT_UNSUPPORTED")
        self.pending = (text, next_et, next_pt, size)

    def _restore_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        try:
            data = json.loads(pending[0])
            self.driver = KeyDriver.restore(self.logic, self.key, self.clock, self.sink, data)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise StateError(f"pane state of key {self.key!r} is corrupt ({exc!r}); restore "
                             "an intact checkpoint version or rebuild (backfill --rebuild)",
                             code="CHECKPOINT_CORRUPT") from exc

    def _idle(self) -> bool:
        """True when the pending state has nothing due in this run (pass it through)."""
        if self.config.finalize or not self.n_bundles:
            return not self.config.finalize
        _, next_et, next_pt, _ = self.pending
        return ((next_et is None or next_et > self.W[-1])
                and (next_pt is None or next_pt > self.P[-1]))

    def _new_driver(self) -> KeyDriver:
        return KeyDriver(self.logic, self.key, self.clock, self.sink)

    def _drop_if_empty(self) -> None:
        driver = self.driver
        if driver is not None and driver.is_empty():
            self.driver = None

    def open_bundle(self, b: int) -> None:
        if self.pending is not None:
            self._restore_pending()
        if self.b_open >= 0:
            self.close_bundle()
        self.timers_until(b)
        clock = self.clock
        clock.processing_time = self.P[b]
        clock.watermark = self.W[b - 1] if b > 0 else self.config.initial_watermark
        self.b, self.phase, self.sub = b, PHASE_TIMERS_PT, 0
        if self.driver is not None:
            self.driver.advance_processing_time()
            self._drop_if_empty()
        self.b_open = b
        self.phase = PHASE_ELEMENTS

    def close_bundle(self) -> None:
        b = self.b_open
        self._drop_if_empty()
        self.clock.watermark = self.W[b]
        self.b, self.phase, self.sub = b, PHASE_TIMERS_WM, 0
        if self.driver is not None:
            self.driver.advance_watermark()
            self._drop_if_empty()
        self.b_open = -1
        self.b_next = b + 1

    def timers_until(self, end: int) -> None:
        """Fire what is due in bundles ``[b_next, end)`` (where the key has no elements)."""
        lo = self.b_next
        P, W, clock = self.P, self.W, self.clock
        while lo < end and self.driver is not None:
            driver = self.driver
            te, tp = driver.next_timer(EVENT), driver.next_timer(PROCESSING)
            if te is None and tp is None:
                break
            j = end
            if tp is not None:
                j = bisect_left(P, tp, lo, end)
            if te is not None:
                j = min(j, bisect_left(W, te, lo, end))
            if j >= end:
                break
            clock.processing_time = P[j]
            clock.watermark = W[j - 1] if j > 0 else self.config.initial_watermark
            self.b, self.phase, self.sub = j, PHASE_TIMERS_PT, 0
            driver.advance_processing_time()
            self._drop_if_empty()
            if self.driver is None:
                break
            clock.watermark = W[j]
            self.phase = PHASE_TIMERS_WM
            driver.advance_watermark()
            self._drop_if_empty()
            lo = j + 1
        self.b_next = max(self.b_next, end)

    def finish_key(self) -> None:
        if self.key is None:
            return
        if self.pending is not None:
            if self._idle():
                if self.config.emit_state:
                    self.emit_state(*self.pending)
                self.pending = None
                self.key = None
                return
            self._restore_pending()
        if self.b_open >= 0:
            self.close_bundle()
        self.timers_until(self.n_bundles)
        driver = self.driver
        if self.config.finalize and driver is not None:
            self.b, self.phase, self.sub = self.n_bundles, PHASE_FINISH, 0
            driver.finish()
        if self.config.emit_state and driver is not None and not driver.is_empty():
            self.emit_state(json.dumps(driver.snapshot(), separators=(",", ":")),
                            driver.next_timer(EVENT), driver.next_timer(PROCESSING),
                            self.state_size(driver))
        self.driver = None
        self.key = None

    @staticmethod
    def state_size(driver: KeyDriver) -> int:
        """Live entries of a key: open windows + buffered elements (accumulators count 1)."""
        size = len(driver.records)
        for contents in driver.contents.values():
            size += len(contents) if type(contents) is list else 1
        return size

    def check_state(self) -> None:
        driver = self.driver
        if driver is None:
            return
        size = self.state_size(driver)
        limit = self.config.max_key_state
        if size > limit:
            raise ExecutionError(
                f"key {self.key!r} holds {size} live state entries (buffered elements + open "
                f"windows), above the limit max_key_state={limit}; raise max_key_state, "
                "pre-aggregate (aggregate/reduce instead of process/apply), or add a trigger "
                "that purges", code="KEY_STATE_LIMIT")

    # --- the partition loop ----------------------------------------------------------------
    def run(self, batches: Iterator[Any]) -> Iterator[Any]:
        pa = self.pa
        config = self.config
        user_columns = config.user_columns
        json_columns = set(config.json_columns)
        key_idx = [user_columns.index(c) for c in self.key_columns]
        single = key_idx[0] if len(key_idx) == 1 else None
        arrivals = config.arrivals
        P = self.P
        skew = self.logic.max_future_skew_ms
        check_every = min(_CHECK_EVERY, max(1, config.max_key_state))
        seq_column = config.seq_column
        naive_schema = None
        last_arrival: Any = object()
        b = 0
        horizon: int | None = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            if naive_schema is None:
                naive_schema = pa.schema([pa.field(f.name, _naive_type(f.type), f.nullable)
                                          for f in batch.schema])
            if naive_schema != batch.schema:
                batch = batch.cast(naive_schema)
            raw_cols = [batch.column(c).to_pylist() for c in user_columns]
            if json_columns:
                cols = [[None if v is None else decode(json.loads(v)) for v in col]
                        if c in json_columns else col
                        for c, col in zip(user_columns, raw_cols)]
            else:
                cols = raw_cols
            arrival_col = batch.column(ARRIVAL).to_pylist()
            ts_col = batch.column(TS).to_pylist()
            reason_col = batch.column(TREASON).to_pylist()
            seq_col = batch.column(seq_column).to_pylist() if seq_column else None
            absent_col = batch.column(ABSENT).to_pylist() if config.has_absent else None
            state_col = batch.column(STATE).to_pylist() if config.has_state else None
            keyed_cols = [cols[i] for i in key_idx]
            for i, values in enumerate(zip(*cols)):
                if single is not None:
                    key = (values[single],)
                elif keyed_cols:
                    key = tuple(values[j] for j in key_idx)
                else:
                    key = ()
                if key != self.key or self.key is None:
                    self.finish_key()
                    self.start_key(key)
                    self.out_key = key if cols is raw_cols else \
                        tuple(raw_cols[j][i] for j in key_idx)
                    if len(self.rows) >= _FLUSH_ROWS:
                        yield self.flush()
                if state_col is not None and state_col[i] is not None:
                    self.hold_state(state_col[i], batch.column(NEXT_ET)[i].as_py(),
                                    batch.column(NEXT_PT)[i].as_py(),
                                    batch.column(SIZE)[i].as_py(),
                                    batch.column(FORMAT)[i].as_py())
                    continue
                a = arrival_col[i]
                if a != last_arrival:
                    last_arrival = a
                    b = arrivals[a]
                    p = P[b]
                    horizon = None if p == MIN_TS else p + skew
                row = dict(zip(user_columns, values))
                raw = row if cols is raw_cols else \
                    dict(zip(user_columns, (col[i] for col in raw_cols)))
                if absent_col is not None and absent_col[i]:
                    for c in absent_col[i]:
                        row.pop(c, None)
                if b != self.b_open:
                    self.open_bundle(b)
                self.sub = seq_col[i] if seq_col is not None else self.sub + 1
                reason = reason_col[i]
                if reason is None:
                    ts = ts_col[i]
                    if horizon is not None and ts > horizon:
                        reason = "future_timestamp"
                    elif None in key:
                        reason = "missing_key"
                if reason is not None:
                    self.emit_element("reject", raw, reason, None)
                    continue
                driver = self.driver
                if driver is None:
                    driver = self.driver = self._new_driver()
                watermark = self.clock.watermark
                if driver.process_element(row, ts):
                    self.processed += 1
                else:
                    self.emit_element("late", raw, "too_late", _finite(watermark))
                self.since_check += 1
                if self.since_check >= check_every:
                    self.since_check = 0
                    self.check_state()
            if len(self.rows) >= _FLUSH_ROWS:
                yield self.flush()
        self.finish_key()
        self.b = 0
        self._bare_row("stats", self.no_keys, (None, None), None,
                       (None, None, None, self.processed, None))
        yield self.flush()


def _finite(t: int) -> int | None:
    """Clock values for output columns: the -inf/+inf sentinels become null."""
    return None if t in (MIN_TS, MAX_TS) else t
