"""The pane path: Python once per firing, not per element (one-shot runs).

For a ``process``/``apply`` window function over windows and triggers the native path compiles
(``planner.pane_reasons``), which elements belong to which firing is decided in Spark SQL by
the native firing builders (``native_default.py``, ``native_counts.py``: the trigger's rules
have one owner) and only the function runs in Python::

    input ─► prepare_native (bundles, rejects, late, kept (element, window) rows)
          ─► firings without results (pane index, timing, is_final, clocks; the arrival order
             of the element that caused each EARLY/LATE firing carried along)
          ─► element rows + firing rows, repartition(key), sorted per key in the reference
             engine's order: bundle, step phase, arrival order, window, element before the
             firing it causes
          ─► mapInArrow(pane walker)          one Python call per firing (``pane_walker.py``)
          ─► the general path's tagged rows (firings, side outputs); late and rejects stay
             the native frames

Why it equals the reference engine: the firings are the native path's (proven equal by the
transcripts and differential tests); a firing's contents are exactly the window's kept
elements that arrived before it, since its last firing in discarding mode — which is what the
walker's per-window buffer holds, because rows arrive in the order the reference engine steps
through them. Function results, side outputs, ``window_state``/``global_state`` and errors go
through the same core code as on the other engines (``FunctionRunner``, ``Context``).

Cost: the native plan's window functions (a sort of the kept rows per window, only with count
triggers) and one shuffle and sort of (element, window) rows by key, then Python per firing
plus an append per element. Like the general path the tagged output is persisted, so reading
several outputs does not recompute the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from windowlib.core.outputs import OutputColumns
from windowlib.core.pipeline import Pipeline
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.engines.base import BundleTimes
from windowlib.engines.spark.bundles import TS, BundlePlan
from windowlib.engines.spark.columns import (
    ABSENT,
    DEFAULT_MAX_KEY_STATE,
    PHASE,
    PHASE_ELEMENTS,
    SUB,
    B,
)
from windowlib.engines.spark.general import (
    large_var_types,
    result_fields,
    shuffle_partitions,
    tagged_part,
    tagged_schema,
)
from windowlib.engines.spark.native import ORDER_N, RORDER, native_firings, prepare_native
from windowlib.engines.spark.native_parts import WS
from windowlib.engines.spark.outputs import OutputPart, SparkOutputs, render
from windowlib.engines.spark.pane_walker import FIRING_COLUMNS, PaneWalkConfig, make_pane_walker
from windowlib.engines.spark.result_types import spark_type, with_result_schema
from windowlib.engines.spark.walker import WalkConfig

__all__ = ["PaneRun", "run_panes"]

ORD = "__wl_ord"      # an element's arrival order inside its bundle (a struct)


@dataclass
class PaneRun:
    """What ``run_panes`` returns: the walker's tagged rows (firings and side outputs), the
    native late and rejects frames, and what they were computed from."""

    tagged: Any
    late: Any
    rejects: Any
    plan: BundlePlan
    key_columns: tuple[str, ...]
    result_columns: tuple[str, ...]
    result_mode: str
    element_columns: tuple[str, ...]
    typed_tags: tuple[str, ...] = ()
    persisted: bool = False
    retracting: bool = False

    def outputs(self, run_id: str | None) -> SparkOutputs:
        """Firings and side outputs from the tagged rows, late and rejects from the native
        frames (``outputs.py``)."""
        from pyspark.sql import functions as F

        names = OutputColumns(self.key_columns, self.element_columns, self.result_columns,
                              False, self.typed_tags)

        def value(name: str) -> Any:
            return F.col(f"`{name}`")

        parts = [tagged_part(self.tagged, names, run_id, ("firings", "side_outputs")),
                 OutputPart(self.late, "late", {"late": render(names, "late", value, run_id)}),
                 OutputPart(self.rejects, "rejects",
                            {"rejects": render(names, "rejects", value, run_id)})]
        return SparkOutputs(names, parts, cached=[self.tagged] if self.persisted else [])


def run_panes(pipeline: Pipeline, df: Any, arrival: str, *,
              watermark: WatermarkStrategy | None = None, finalize: bool = False,
              order_by: Sequence[str] | str | None = None, result_schema: Any = None,
              processing_time: Any = None, arrival_interval: Any = None,
              overrides: Mapping[Any, BundleTimes] | None = None,
              max_key_state: int = DEFAULT_MAX_KEY_STATE, json_columns: Sequence[str] = (),
              seq_column: str | None = None, persist: bool = True,
              partitions: int | None = None,
              bundle_stats: Mapping[Any, Any] | None = None) -> PaneRun:
    """Build the pane path's outputs for ``pipeline`` over ``df`` (the caller has checked
    ``planner.pane_reasons``); options as ``general.run_general`` (whose test-harness hooks
    ``json_columns``/``seq_column`` it shares)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    pipeline = with_result_schema(pipeline, result_schema)
    inputs = prepare_native(pipeline, df, arrival, watermark=watermark, finalize=finalize,
                            order_by=order_by, processing_time=processing_time,
                            arrival_interval=arrival_interval, overrides=overrides,
                            seq_column=seq_column, bundle_stats=bundle_stats,
                            aggregates=False)
    parts, logic, plan = inputs.parts, inputs.logic, inputs.plan
    user_columns = inputs.user_columns
    order = F.struct(*[c.alias(f"o{i}") for i, c in enumerate(parts.order)],
                     F.col(SUB).alias("s"))
    kept = parts.kept.withColumn(ORD, order)
    parts = replace(parts, kept=kept, carry=((ORD, kept.schema[ORD].dataType),))
    firings = native_firings(parts, logic.trigger)

    keys = [F.col(f"`{c}`") for c in logic.key_columns]
    head = [*keys, F.col(B), F.col(PHASE), F.col(ORD), F.col(ORDER_N), F.col(RORDER)]
    absent = [F.col(ABSENT)] if ABSENT in kept.columns else []
    elements = kept.select(
        *keys, F.col(B), F.lit(PHASE_ELEMENTS).alias(PHASE), F.col(ORD),
        F.col(WS).alias(ORDER_N), F.lit(-1).alias(RORDER), F.col(WS), F.col(SUB), F.col(TS),
        *[F.col(f"`{c}`") for c in user_columns if c not in logic.key_column_set], *absent)
    fired = firings.select(*head, F.col("window_start").alias(WS), F.col(SUB),
                           *[F.col(c) for c in FIRING_COLUMNS])
    rows = elements.unionByName(fired, allowMissingColumns=True)
    if keys:
        n = partitions if partitions is not None else shuffle_partitions(df)
        rows = rows.repartition(n, *keys) if n else rows.repartition(*keys)
    else:
        rows = rows.repartition(1)
    # the ordering columns stay in Spark: the walker reads the rows in order
    needed = [*keys, F.col(B), F.col(PHASE), F.col(WS), F.col(SUB), F.col(TS),
              *[F.col(f"`{c}`") for c in user_columns if c not in logic.key_column_set],
              *absent, *[F.col(c) for c in FIRING_COLUMNS]]
    rows = rows.sortWithinPartitions(*head).select(*needed)

    types = {f.name: f.dataType for f in df.schema.fields}
    json_set = set(json_columns)
    mode, result = result_fields(pipeline, {c: t for c, t in types.items()
                                            if c not in json_set})
    result = [f for f in result if f.name not in logic.key_column_set]
    key_fields = [T.StructField(c, types[c], True) for c in logic.key_columns]
    element = T.StructType([T.StructField(c, types[c], True) for c in user_columns])
    side_types = logic.runner.side_types
    side_typed = T.StructType([T.StructField(tag, spark_type(t), True)
                               for tag, t in side_types.items()]) if side_types else None
    out_schema = tagged_schema(key_fields, result, False, element, side_typed)
    config = WalkConfig(
        pipeline=pipeline, arrivals=plan.index, processing_times=plan.processing_times,
        watermarks=plan.watermarks, initial_watermark=plan.initial_watermark,
        finalize=finalize, user_columns=tuple(user_columns), json_columns=tuple(json_set),
        seq_column=seq_column, has_absent=bool(absent), result_mode=mode,
        result_names=tuple(f.name for f in result), typed_tags=tuple(side_types),
        max_key_state=max_key_state, out_schema_json=out_schema.json(),
        large_types=large_var_types(df))
    pane_config = PaneWalkConfig(walk=config, size_ms=parts.size, lateness_ms=parts.lateness,
                                 watermark_before=list(parts.W_before))
    tagged = rows.mapInArrow(make_pane_walker(pane_config), out_schema)
    if persist:
        tagged = tagged.persist()
    return PaneRun(tagged=tagged, late=inputs.late, rejects=inputs.rejects, plan=plan,
                   key_columns=logic.key_columns,
                   result_columns=tuple(f.name for f in result), result_mode=mode,
                   element_columns=tuple(user_columns), typed_tags=tuple(side_types),
                   persisted=persist)

