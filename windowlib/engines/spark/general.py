"""The general path: the semantic core's ``KeyDriver`` run per key inside Spark tasks.

Plan (DataFrame API only — no RDD or SparkContext — so it also runs over Spark Connect)::

    input ─► prepare_input (arrival key, event time ms, timestamp reject reason)
          ─► repartition(key columns)            (window_all: one partition)
          ─► sortWithinPartitions(keys, arrival, arrival order)
          ─► mapInArrow(walk)                     one Python call per partition, not per key
          ─► the tagged output: one row per firing, late element or reject (``__wl_kind``)

``walk`` (``walker.py``) reads the key-sorted Arrow batches, detects runs of equal keys and runs ONE
``KeyDriver`` per key over the bundle sequence (SPEC §1), exactly as the reference engine does:
for each bundle ``b`` in order: processing time ``P_b``, timers (step 1), the key's elements of
the bundle in arrival order (step 2), watermark ``W_b`` and its timers (steps 3-4); then
``finish()`` when the run is finalized. Bundles in which the key has no elements are skipped
unless one of its timers is due there: the driver's next event/processing timer is looked up
in the (monotone) ``W``/``P`` sequences by bisection, so the cost follows data and live state,
not keys x bundles. The bundle sequence (``P_b``, ``W_b``; see ``bundles.py``) is a small list
shipped in the task closure.

Rows are rejected with the reference engine's reasons (``core.loop``: the event time's,
``future_timestamp``, ``missing_key``, ``non_finite``); elements
dropped for every window are emitted as late (with the watermark they met).

**Memory.** A key's elements are streamed: the walker holds one Arrow batch, the current key's
driver (its live window state: accumulators, or buffered elements for evictors and
``process``/``apply`` functions; timers; per-key state) and a bounded output buffer. Spark's
sort spills to disk, so the partition size is not bounded by memory. A key whose live state
grows beyond ``max_key_state`` entries (buffered elements + open windows; checked every few
thousand elements) fails the run with ``ExecutionError(KEY_STATE_LIMIT)`` naming the key and
the limit, instead of exhausting the Python worker.

**Result columns** (``result_types.py``). For declarative aggregates
(``aggregate(wl.aggregates.sum(...), ...)`` without a process function) the result columns are
typed from the input schema. A Python window function that declares its rows (a
``result_schema`` attribute, yield hints, or ``result_schema=`` of the run; ``core/schema.py``)
gets those columns: the core conforms every row before the walker sees it, so a value that
does not fit fails exactly as on the reference engine (``RESULT_SCHEMA_MISMATCH`` naming field,
key and window). Functions that declare nothing get a JSON string ``result_json``
(``codec.to_json(row)``, so any plain-data result survives).

**Side outputs.** ``context.output`` values go to the ``side_outputs`` rows: a tag declared
with a schema (``OutputTag(name, schema=...)`` as an attribute of the function) in the struct
column ``value_typed`` (one field per typed tag), any other in ``value_json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from windowlib.core.errors import InputError
from windowlib.core.loop import RunClock
from windowlib.core.outputs import OUTPUTS, OutputColumns
from windowlib.core.pipeline import Pipeline
from windowlib.core.schema import sql_identifier
from windowlib.core.time import MIN_TS
from windowlib.core.watermarks import WatermarkStrategy, effective_strategy
from windowlib.engines.base import BundleTimes
from windowlib.engines.spark.bundles import (
    ARRIVAL,
    INTERNAL_PREFIX,
    TREASON,
    TS,
    BundlePlan,
    arrival_key_column,
    event_time_columns,
    plan_bundles,
    readable_event_times,
)
from windowlib.engines.spark.columns import (
    ABSENT,
    DEFAULT_MAX_KEY_STATE,
    ELEMENT,
    FORMAT,
    KIND,
    NEXT_ET,
    NEXT_PT,
    PHASE,
    PHASE_ELEMENTS,
    PHASE_FINISH,
    PHASE_TIMERS_WM,
    REASON,
    RESULT_JSON,
    SIDE_TYPED,
    SIZE,
    SRC,
    STATE,
    SUB,
    VALUE,
    B,
    N,
    user_col,
)
from windowlib.engines.spark.outputs import OutputPart, SparkOutputs, render
from windowlib.engines.spark.result_types import (
    result_fields,
    spark_type,
    with_result_schema,
)
from windowlib.engines.spark.session import large_var_types, shuffle_partitions
from windowlib.engines.spark.state import STATE_FORMAT_VERSION, STATE_KIND, check_state_frame
from windowlib.engines.spark.walk_values import WalkConfig
from windowlib.engines.spark.walker import make_walker
from windowlib.engines.spark.walker_files import WalkerFiles, walker_output

# re-exported: the native path, the engine and the test harness import these from here
__all__ = ["ABSENT", "DEFAULT_MAX_KEY_STATE", "ELEMENT", "KIND", "PHASE", "PHASE_ELEMENTS",
           "PHASE_FINISH", "PHASE_TIMERS_WM", "REASON", "RESULT_JSON", "SUB", "B",
           "GeneralRun", "N", "arrival_order", "prepare_input", "result_fields", "run_general",
           "tagged_schema"]


@dataclass
class GeneralRun:
    """What ``run_general`` returns: the tagged output and what it was computed from."""

    tagged: Any              # DataFrame (files or persisted: ``walker_files.py``)
    plan: BundlePlan
    key_columns: tuple[str, ...]
    result_columns: tuple[str, ...]   # typed result columns ("result_json" for JSON mode)
    result_mode: str                  # "typed" | "json" | "schema"
    retracting: bool
    element_columns: tuple[str, ...]
    emit_state: bool = False
    persisted: bool = False
    typed_tags: tuple[str, ...] = ()  # side outputs with a declared schema
    files: WalkerFiles | None = None  # the walker's output as files (``walker_files.py``)

    def outputs(self, run_id: str | None) -> SparkOutputs:
        """The run's outputs (``outputs.py``): one part over the tagged frame, routed by its
        kind: firings, late, rejects, side outputs, the new pane state (``state.py`` schema,
        one row per live key: ``state_kind`` ``general-keys``) and the walkers' counts."""
        from pyspark.sql import functions as F

        names = OutputColumns(self.key_columns, self.element_columns, self.result_columns,
                              self.retracting, self.typed_tags)
        part = tagged_part(self.tagged, names, run_id, OUTPUTS)
        keys = [(c, user_col(c)) for c in self.key_columns]
        columns = dict(part.columns)
        columns["state"] = [*keys, ("state", F.col(STATE)),
                            ("next_event_timer", F.col(NEXT_ET)),
                            ("next_processing_timer", F.col(NEXT_PT)), ("entries", F.col(SIZE)),
                            ("format_version", F.lit(STATE_FORMAT_VERSION).cast("int"))]
        columns["stats"] = [("processed", F.col(SIZE))]
        return SparkOutputs(names, [OutputPart(self.tagged, part.route, columns)],
                            state_kind=STATE_KIND,
                            cached=[self.tagged] if self.persisted else [],
                            files=[self.files] if self.files is not None else [])


def tagged_part(tagged: Any, names: OutputColumns, run_id: str | None,
                outputs: Sequence[str]) -> OutputPart:
    """The tagged frame as an output part: rows routed by their kind (``KIND_OUTPUTS``; an
    unknown kind fails a writer, never dropped), with the public columns of ``outputs``."""
    from pyspark.sql import functions as F

    route = None
    for kind, output in KIND_OUTPUTS.items():
        cond = F.col(KIND) == F.lit(kind)
        route = F.when(cond, F.lit(output)) if route is None else \
            route.when(cond, F.lit(output))
    route = route.otherwise(F.col(KIND))

    def value(name: str) -> Any:
        return F.col(_INTERNAL.get(name, sql_identifier(name)))

    def element(name: str) -> Any:
        return F.col(f"{ELEMENT}.{sql_identifier(name)}")

    return OutputPart(tagged, route, {output: render(names, output, value, run_id, element)
                                      for output in outputs})


# tagged kind -> output; public columns stored under internal names
KIND_OUTPUTS = {"firing": "firings", "late": "late", "reject": "rejects",
                "side": "side_outputs", "state": "state", "stats": "stats"}
_INTERNAL = {"reason": REASON, "tag": REASON, "value_json": VALUE, "value_typed": SIDE_TYPED}


# --- schema ---------------------------------------------------------------------------------

def tagged_schema(key_fields: list, result: list, retracting: bool, element: Any,
                  side_typed: Any = None) -> Any:
    """The walker's output rows; ``side_typed``: the struct of typed side output values (one
    field per tag declared with a schema), when there are any."""
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
    if side_typed is not None:
        fields.append(T.StructField(SIDE_TYPED, side_typed, True))
    return T.StructType(fields)


def walker_schema(pipeline: Pipeline, schema: Any, user_columns: Sequence[str],
                  json_columns: Set[str]) -> tuple[str, list, Any]:
    """``(result mode, result fields, tagged schema)`` of a walker's output over input of
    ``schema`` (``json_columns``: test-harness columns whose type is not the data's)."""
    from pyspark.sql import types as T

    logic = pipeline.compile()
    types = {f.name: f.dataType for f in schema.fields}
    mode, result = result_fields(pipeline, {c: t for c, t in types.items()
                                            if c not in json_columns})
    # the driver never lets a result overwrite a key column (firing_row); neither do we
    result = [f for f in result if f.name not in logic.key_column_set]
    key_fields = [T.StructField(c, types[c], True) for c in logic.key_columns]
    element = T.StructType([T.StructField(c, types[c], True) for c in user_columns])
    side_types = logic.runner.side_types
    side_typed = T.StructType([T.StructField(tag, spark_type(t), True)
                               for tag, t in side_types.items()]) if side_types else None
    return mode, result, tagged_schema(key_fields, result, logic.retracting, element,
                                       side_typed)


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
    if TS in df.columns and TREASON in df.columns:
        return df.withColumn(ARRIVAL, key_col), kind
    ms, reason = event_time_columns(df, logic.timestamp)
    # one projection (each DataFrame operation is one analysis of the plan so far)
    df = df.withColumns({ARRIVAL: key_col, TS: ms, TREASON: reason})
    return readable_event_times(df, logic.timestamp, TREASON), kind


def arrival_order(user_columns: Sequence[str], order_by: Sequence[str] | str | None) -> list:
    """The arrival order inside a bundle as ascending sort expressions (every path's one rule):
    the ``order_by`` columns, else SPEC §1's default: event time (``__wl_ts``; a null one, a
    reject, first, as Spark sorts ascending), ties broken by a deterministic hash of the
    whole row."""
    from pyspark.sql import functions as F

    if order_by is not None:
        return [user_col(c) for c in ([order_by] if isinstance(order_by, str) else order_by)]
    cols = [user_col(c) for c in user_columns]
    return [F.col(TS), F.xxhash64(*cols), F.hash(*cols)]


# --- the run --------------------------------------------------------------------------------

def run_general(pipeline: Pipeline, df: Any, arrival: str, *,
                watermark: WatermarkStrategy | None = None, finalize: bool = False,
                order_by: Sequence[str] | str | None = None, result_schema: Any = None,
                processing_time: Any = None, arrival_interval: Any = None,
                overrides: Mapping[Any, BundleTimes] | None = None,
                max_key_state: int = DEFAULT_MAX_KEY_STATE,
                json_columns: Sequence[str] = (), seq_column: str | None = None,
                persist: bool = True, single_partition: bool = False,
                partitions: int | None = None, state: Any = None,
                clock: RunClock | None = None, emit_state: bool = False,
                bundle_stats: Mapping[Any, Any] | None = None) -> GeneralRun:
    """Plan the bundles (one small aggregate job, none when the caller gives exact
    ``bundle_stats``: see ``bundles.plan_bundles``) and build the tagged output DataFrame.

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

    pipeline = with_result_schema(pipeline, result_schema)
    logic = pipeline.compile()
    strategy = effective_strategy(watermark)
    clock = clock if clock is not None else RunClock()
    prepared, kind = prepare_input(df, pipeline, arrival)
    user_columns = [c for c in df.columns if not c.startswith(INTERNAL_PREFIX)]
    plan = plan_bundles(prepared, kind=kind, key_columns=logic.key_columns, strategy=strategy,
                        max_future_skew_ms=logic.max_future_skew_ms, overrides=overrides,
                        processing_time=processing_time, arrival_interval=arrival_interval,
                        arrival_name=arrival,
                        initial_watermark=clock.watermark,
                        initial_processing_time=clock.processing_time,
                        initial_max_event_ts=clock.max_event_ts, stats=bundle_stats)
    if not logic.event_time:
        for b, (count, p) in enumerate(zip(plan.counts, plan.processing_times)):
            if count and p == MIN_TS:
                raise InputError(
                    f"processing-time windows need a processing time on every bundle that has "
                    f"elements; bundle {b} (arrival {plan.arrivals[b]!r}) has none: pass "
                    "processing_time= or use a time-valued arrival column",
                    code="NO_PROCESSING_TIME")

    json_set = set(json_columns)
    mode, result, out_schema = walker_schema(pipeline, df.schema, user_columns, json_set)
    side_types = logic.runner.side_types

    order = arrival_order(user_columns, order_by)
    keys = [user_col(c) for c in logic.key_columns]
    has_state = state is not None
    sort_head: list = []
    if has_state:
        check_state_frame(state, logic.key_columns,
                          {f.name: f.dataType for f in df.schema.fields})
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
        n = partitions if partitions is not None else shuffle_partitions(df.sparkSession)
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
    arranged = arranged.select(*[user_col(c) for c in dict.fromkeys(needed)])
    large = large_var_types(df.sparkSession)
    config = WalkConfig(
        pipeline=pipeline, arrivals=plan.index, processing_times=plan.processing_times,
        watermarks=plan.watermarks, initial_watermark=plan.initial_watermark,
        finalize=finalize, user_columns=tuple(user_columns), json_columns=tuple(json_set),
        seq_column=seq_column, has_absent=ABSENT in prepared.columns,
        result_mode=mode, result_names=tuple(f.name for f in result),
        typed_tags=tuple(side_types), max_key_state=max_key_state,
        out_schema_json=out_schema.json(), large_types=large,
        has_state=has_state, emit_state=emit_state,
        initial_processing_time=clock.processing_time)
    tagged, files = walker_output(arranged, make_walker(config), out_schema, large, persist)
    return GeneralRun(tagged=tagged, plan=plan, key_columns=logic.key_columns,
                      result_columns=tuple(f.name for f in result), result_mode=mode,
                      retracting=logic.retracting, element_columns=tuple(user_columns),
                      emit_state=emit_state, persisted=persist and files is None,
                      typed_tags=tuple(side_types), files=files)
