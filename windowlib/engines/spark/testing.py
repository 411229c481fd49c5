"""``run_bundles(..., engine="spark")``: test bundles through the Spark engine (``path``:
``auto`` = the planner's choice, ``native`` or ``general``).

The bundles become one DataFrame: a column per element field (typed when every value of the
field has one plain type; otherwise the values are ``codec``-encoded JSON strings the walker
decodes, so rows with mixed types still reach the driver exactly as written),
``__wl_arrival`` = the bundle index, ``__wl_seq`` = the element's position in its bundle (the
arrival order). Explicit bundle processing times and watermarks travel as a per-bundle override
table, never through data rows, so empty bundles still move time. The outputs (small, test-only)
are collected and returned in the reference engine's format: window bounds as int ms, dict
rows, results decoded from ``result_json`` (typed result columns and typed side outputs as
collected, maps as dicts), side outputs by tag, late and rejected elements as they were given.

Fields absent from an element are listed in ``__wl_absent`` and removed from the row the
driver sees; timestamps that Spark cannot type (mixed, strings, absent) are precomputed into
``__wl_ts``/``__wl_treason`` with the reference engine's rules. Non-mapping elements are
rejected (``schema_mismatch``) here, as the reference engine does.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from windowlib.core.codec import decode, encode
from windowlib.core.errors import InputError
from windowlib.core.loop import MISSING, bundle_time, timestamp_problem
from windowlib.core.pipeline import Pipeline
from windowlib.core.time import MIN_TS, timestamp_ms
from windowlib.core.watermarks import WatermarkStrategy
from windowlib.engines.base import BundleTimes
from windowlib.engines.spark.bundles import ARRIVAL, TREASON, TS
from windowlib.engines.spark.columns import SIDE_TYPED, VALUE, user_col
from windowlib.engines.spark.errors import reraise
from windowlib.engines.spark.general import (
    ABSENT,
    ELEMENT,
    KIND,
    PHASE,
    REASON,
    RESULT_JSON,
    SUB,
    B,
    N,
    run_general,
)
from windowlib.engines.spark.walk_values import naive_type

SEQ = "__wl_seq"
_EL = "__wl_el_"
_MISSING = object()
_INT64 = (-(2**63), 2**63 - 1)


def _infer(values: list) -> tuple[Any, bool]:
    """``(arrow type, as_json)`` for the non-null values of one field."""
    import pyarrow as pa

    if not values:
        return pa.string(), False
    kinds = {type(v) for v in values}
    if len(kinds) == 1:
        t = next(iter(kinds))
        if t is bool:
            return pa.bool_(), False
        if t is int and all(_INT64[0] <= v <= _INT64[1] for v in values):
            return pa.int64(), False
        if t is float:
            return pa.float64(), False
        if t is str:
            return pa.string(), False
        if t is _dt.datetime and all(v.tzinfo is None for v in values):
            return pa.timestamp("us", tz="UTC"), False
        if t is _dt.date:
            return pa.date32(), False
    return pa.string(), True


def bundles_to_table(pipeline: Pipeline, bundles: Sequence[Any]) -> tuple[Any, list, list,
                                                                           list]:
    """``(arrow table, json columns, elements by (b, seq), schema_mismatch rejects)``."""
    import pyarrow as pa

    logic = pipeline.compile()
    elements: list[list[dict | None]] = []
    mismatched: list[tuple[int, int, dict]] = []
    columns: dict[str, None] = {}
    for b, bundle in enumerate(bundles):
        rows: list[dict | None] = []
        for seq, el in enumerate(bundle.elements):
            if not isinstance(el, Mapping):
                mismatched.append((b, seq, {"value": el, "reason": "schema_mismatch"}))
                rows.append(None)
                continue
            row = dict(el)
            rows.append(row)
            columns.update(dict.fromkeys(row))
        elements.append(rows)
    # the columns the pipeline reads are there even when no element holds them (the
    # reference engine reads such a value as None)
    required = pipeline.required_columns()      # the timestamp, then the keys, then the rest
    aggregated = set(required) - {logic.timestamp, *logic.key_columns}
    for c in (*logic.key_columns, *required):
        columns.setdefault(c, None)
    names = list(columns)
    flat = [(b, seq, row) for b, rows in enumerate(elements)
            for seq, row in enumerate(rows) if row is not None]
    fields, arrays, json_columns = [], [], []
    any_absent = False
    for c in names:
        present = [row.get(c, _MISSING) for _, _, row in flat]
        any_absent = any_absent or any(v is _MISSING for v in present)
        values = [v for v in present if v is not _MISSING and v is not None]
        t, as_json = _infer(values)
        if not values and c in aggregated:
            t = pa.int64()      # no value to infer from: a type every aggregate reads
        if as_json:
            json_columns.append(c)
            col = [None if v is _MISSING or v is None
                   else json.dumps(encode(v), separators=(",", ":")) for v in present]
        else:
            col = [None if v is _MISSING else v for v in present]
        fields.append(pa.field(c, t))
        arrays.append(pa.array(col, type=t))
    ts_values = [row.get(logic.timestamp, _MISSING) for _, _, row in flat]
    if logic.timestamp in json_columns or any(v is _MISSING for v in ts_values):
        ms, reasons = [], []
        for v in ts_values:
            m, r = _event_time(v)
            ms.append(m)
            reasons.append(r)
        fields += [pa.field(TS, pa.int64()), pa.field(TREASON, pa.string())]
        arrays += [pa.array(ms, pa.int64()), pa.array(reasons, pa.string())]
    fields += [pa.field(ARRIVAL, pa.int64()), pa.field(SEQ, pa.int64())]
    arrays += [pa.array([b for b, _, _ in flat], pa.int64()),
               pa.array([s for _, s, _ in flat], pa.int64())]
    if any_absent:
        fields.append(pa.field(ABSENT, pa.list_(pa.string())))
        arrays.append(pa.array([[c for c in names if c not in row] for _, _, row in flat],
                               pa.list_(pa.string())))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    return table, json_columns, elements, mismatched


def _event_time(value: Any) -> tuple[int | None, str | None]:
    if type(value) is int:
        return value, None
    reason = timestamp_problem(MISSING if value is _MISSING else value)
    if reason is not None:
        return None, reason
    return timestamp_ms(value), None


def _overrides(bundles: Sequence[Any]) -> dict[int, BundleTimes]:
    out = {}
    for b, bundle in enumerate(bundles):
        pt = None if bundle.processing_time is None else bundle_time(bundle.processing_time,
                                                             "bundle processing_time")
        wm = None if bundle.watermark is None else bundle_time(bundle.watermark, "bundle watermark")
        out[b] = BundleTimes(pt, wm)
    return out


def run_bundles_on_spark(pipeline: Pipeline, bundles: Sequence[Any], finalize: bool = False,
                         watermark: WatermarkStrategy | None = None, spark: Any = None,
                         max_key_state: int | None = None, path: str = "auto",
                         with_side_outputs: bool = False) -> tuple:
    """Run test bundles on Spark; ``(firings, late, rejects)`` in the reference engine's
    format, and the side outputs (``{tag: [values]}``) with ``with_side_outputs``. ``path``:
    ``auto`` (the planner decides), ``native`` (``DefinitionError`` when the planner rejects
    the pipeline) or ``general``."""
    from windowlib.engines.spark.planner import choose_path
    from windowlib.engines.spark.session import get_or_create_session

    spark = spark if spark is not None else get_or_create_session()
    logic = pipeline.compile()
    overrides = _overrides(bundles)
    if not logic.event_time:   # as the reference engine: non-row elements count too
        p = MIN_TS
        for b, bundle in enumerate(bundles):
            given = overrides[b].processing_time
            p = p if given is None else max(p, given)
            if bundle.elements and p == MIN_TS:
                raise InputError("processing-time windows need a processing_time on every "
                                 "bundle that has elements", code="NO_PROCESSING_TIME")
    table, json_columns, elements, mismatched = bundles_to_table(pipeline, bundles)
    df = spark.createDataFrame(table).coalesce(1)   # tiny: one partition, no shuffle
    choice = choose_path(pipeline, path, df.schema, json_columns=json_columns)
    value = _decoder(json_columns)
    if choice.path == "native":
        out3 = _run_native(pipeline, df, overrides, finalize, watermark, elements, mismatched,
                           value)
        return (*out3, {}) if with_side_outputs else out3
    kwargs = {} if max_key_state is None else {"max_key_state": max_key_state}
    try:
        if choice.path == "panes":
            from windowlib.engines.spark.panes import run_panes

            run = run_panes(pipeline, df, ARRIVAL, watermark=watermark, finalize=finalize,
                            order_by=[SEQ], overrides=overrides, json_columns=json_columns,
                            seq_column=SEQ, persist=False, partitions=1, **kwargs)
            element_rows = None     # late and rejects are tagged rows, but sessions' rejects
            if "rejects" not in run.in_tagged:
                late_rejects = _element_frames(run).toArrow()
                element_rows = late_rejects.cast(_naive_schema(late_rejects.schema)).to_pylist()
        else:
            run = run_general(pipeline, df, ARRIVAL, watermark=watermark, finalize=finalize,
                              order_by=[SEQ], overrides=overrides, json_columns=json_columns,
                              seq_column=SEQ, persist=False, single_partition=True, **kwargs)
            element_rows = None
        out = run.tagged.toArrow()
    except Exception as exc:
        reraise(exc)
    firings, side = _firings_and_sides(run, out, logic.key_columns, value)
    tagged = out.cast(_naive_schema(out.schema)).to_pylist()

    def element(r: dict) -> dict:
        original = elements[r[B]][r[SUB]]
        got = r[ELEMENT]
        return {c: value(c, got[c]) for c in original}

    late_rows = sorted((r for r in tagged if r[KIND] == "late"), key=lambda r: (r[B], r[SUB]))
    late = [{**element(r), "reason": r[REASON]} for r in late_rows]
    if element_rows is not None:     # the pane path's sessions: rejects in SQL
        _, rejects = _late_and_rejects(element_rows, elements, mismatched, value)
        return (firings, late, rejects, side) if with_side_outputs else (firings, late, rejects)
    reject_rows = [(r[B], r[SUB], {**element(r), "reason": r[REASON]})
                   for r in tagged if r[KIND] == "reject"]
    rejects = [rec for _, _, rec in sorted(reject_rows + mismatched, key=lambda x: x[:2])]
    return (firings, late, rejects, side) if with_side_outputs else (firings, late, rejects)


def _firings_and_sides(run: Any, out: Any, key_columns: Sequence[str],
                       value: Callable[[str, Any], Any]) -> tuple[list, dict[str, list]]:
    """The firings and side outputs of a collected tagged frame (general or pane path), in
    the reference engine's format and order."""
    out = out.cast(_naive_schema(out.schema))
    tagged = out.to_pylist()
    plain = {name: _plain_values(out.schema.field(name).type)
             for name in (*run.result_columns, SIDE_TYPED) if name in out.schema.names}

    def key_of(r: dict) -> tuple:
        return tuple(value(c, r[c]) for c in key_columns)

    def in_order(kind: str) -> list[dict]:
        rows = [r for r in tagged if r[KIND] == kind]
        return sorted(rows, key=lambda r: (r[B], r[PHASE], r[SUB], repr(key_of(r)), r[N]))

    firings = []
    for r in in_order("firing"):
        f = dict(zip(key_columns, key_of(r)))
        f["window_start"] = r["window_start"]
        f["window_end"] = r["window_end"]
        f["pane_index"] = r["pane_index"]
        f["timing"] = r["timing"]
        if run.result_mode == "json":
            f.update(decode(json.loads(r[RESULT_JSON])))
        else:
            for c in run.result_columns:
                f[c] = plain[c](r[c])
        f["is_final"] = r["is_final"]
        if run.retracting:
            f["retract"] = r["retract"]
        firings.append(f)
    side: dict[str, list] = {}
    for r in in_order("side"):
        tag = r[REASON]
        typed = r.get(SIDE_TYPED)
        side.setdefault(tag, []).append(decode(json.loads(r[VALUE])) if r[VALUE] is not None
                                        else plain[SIDE_TYPED](typed)[tag])
    return firings, side


def _element_frames(run: Any) -> Any:
    """The late and rejects frames of a native or pane run as one tagged frame (element
    columns renamed: no type clashes with other columns)."""
    from pyspark.sql import functions as F

    def elements_of(frame: Any) -> Any:
        return frame.select(*[user_col(c).alias(_EL + c) if c in run.element_columns
                              else user_col(c) for c in frame.columns])

    late = elements_of(run.late).withColumn(KIND, F.lit("late"))
    return late.unionByName(elements_of(run.rejects).withColumn(KIND, F.lit("reject")),
                            allowMissingColumns=True)


def _late_and_rejects(rows: list[dict], elements: list, mismatched: list,
                      value: Callable[[str, Any], Any]) -> tuple[list, list]:
    """Late and rejected elements among the collected rows of ``_element_frames``, as they
    were given."""

    def element(r: dict) -> dict:
        return {c: value(c, r[_EL + c]) for c in elements[r[B]][r[SUB]]}

    late = [{**element(r), "reason": r["reason"]}
            for r in sorted((r for r in rows if r[KIND] == "late"),
                            key=lambda r: (r[B], r[SUB]))]
    rejected = [(r[B], r[SUB], {**element(r), "reason": r["reason"]})
                for r in rows if r[KIND] == "reject"]
    rejects = [rec for _, _, rec in sorted(rejected + mismatched, key=lambda x: x[:2])]
    return late, rejects


def _plain_values(arrow_type: Any) -> Callable[[Any], Any]:
    """Collected values of ``arrow_type`` as the reference engine holds them: Arrow gives maps
    as lists of pairs; they become dicts (at any depth)."""
    import pyarrow as pa

    if pa.types.is_map(arrow_type):
        key, item = _plain_values(arrow_type.key_type), _plain_values(arrow_type.item_type)
        return lambda v: None if v is None else {key(k): item(x) for k, x in v}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        element = _plain_values(arrow_type.value_type)
        return lambda v: None if v is None else [element(x) for x in v]
    if pa.types.is_struct(arrow_type):
        fields = [(f.name, _plain_values(f.type)) for f in arrow_type]
        return lambda v: None if v is None else {n: conv(v[n]) for n, conv in fields}
    return lambda v: v


def _decoder(json_columns: Sequence[str]) -> Callable[[str, Any], Any]:
    """``value(column, v)``: a collected value as given (JSON-carried columns decoded)."""
    json_set = frozenset(json_columns)

    def value(c: str, v: Any) -> Any:
        return decode(json.loads(v)) if c in json_set and v is not None else v

    return value


def _run_native(pipeline: Pipeline, df: Any, overrides: dict, finalize: bool,
                watermark: WatermarkStrategy | None, elements: list, mismatched: list,
                value: Callable[[str, Any], Any]) -> tuple[list, list, list]:
    """The native path's outputs, collected (test-only) into the reference format."""
    from windowlib.engines.spark.native import ORDER_N, PHASE, RORDER, SUB, run_native

    try:
        run = run_native(pipeline, df, ARRIVAL, watermark=watermark, finalize=finalize,
                         order_by=[SEQ], overrides=overrides, seq_column=SEQ)
        from pyspark.sql import functions as F

        # one Spark job for the three outputs (tiny, test-only): tagged by kind
        out = run.firings.withColumn(KIND, F.lit("firing")).unionByName(
            _element_frames(run), allowMissingColumns=True).toArrow()
    except Exception as exc:
        reraise(exc)
    tagged = out.cast(_naive_schema(out.schema)).to_pylist()
    fired = [r for r in tagged if r[KIND] == "firing"]
    keys = run.key_columns
    fired.sort(key=lambda r: (r[B], r[PHASE], r[SUB], repr(tuple(r[c] for c in keys)),
                              r[ORDER_N], r[RORDER]))
    firings = []
    for r in fired:
        f = {c: r[c] for c in keys}
        for c in ("window_start", "window_end", "pane_index", "timing"):
            f[c] = r[c]
        for c in run.result_columns:
            f[c] = r[c]
        f["is_final"] = r["is_final"]
        if run.retracting:
            f["retract"] = r["retract"]
        firings.append(f)
    late, rejects = _late_and_rejects(tagged, elements, mismatched, value)
    return firings, late, rejects


def _naive_schema(schema: Any) -> Any:
    import pyarrow as pa

    return pa.schema([pa.field(f.name, naive_type(f.type), f.nullable) for f in schema])
