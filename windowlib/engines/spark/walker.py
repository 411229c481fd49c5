"""The general path's walker: runs in the Python workers over key-sorted Arrow batches.

One ``KeyDriver`` per key run (SPEC §1 per bundle: processing-time timers, the key's elements,
watermark timers; ``finish`` at the end of a finalized input); keys without elements in a
bundle are visited only when one of their timers is due there (bisection in the monotone
``P``/``W`` sequences). Saved pane state (``state.py``) is parsed only when the key has work to
do; otherwise it is copied through. Output rows are the tagged schema of ``general.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from windowlib.core.codec import to_json
from windowlib.core.driver import EVENT, PROCESSING, Clock, KeyDriver, Sink
from windowlib.core.errors import ExecutionError, StateError, rebuild_hint
from windowlib.core.loop import BundleClock, KeyWalk, future_horizon, non_finite, reject_reason
from windowlib.core.outputs import TOO_LATE, check_result_columns
from windowlib.engines.spark.bundles import ARRIVAL, TREASON, TS
from windowlib.engines.spark.columns import (
    ABSENT,
    CHECK_EVERY,
    FLUSH_ROWS,
    FORMAT,
    NEXT_ET,
    NEXT_PT,
    SIZE,
    STATE,
)
from windowlib.engines.spark.state import STATE_FORMAT_VERSION
from windowlib.engines.spark.walk_values import (
    WalkConfig,
    batch_columns,
    finite_clock,
    key_state_limit,
    naive_type,
    py_values,
    worker_memory_exceeded,
)
from windowlib.engines.spark.worker_collector import full_collections_paused

_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))   # snapshots are plain data already


def make_walker(config: Any, cls: type[Walker] | None = None,
                arrange: Callable[[Iterator[Any]], Iterator[Any]] | None = None) -> Any:
    """The ``mapInArrow`` function that walks each partition with a new ``cls(config)``
    (default ``Walker``: the general path; the pane path's walkers take their own configs),
    with the garbage collector's full collections paused (``worker_collector``).
    ``arrange``: puts the partition's batches in walking order first (``walker_sort.
    ArrowSort``; ``None``: Spark sorted them).
    A ``MemoryError`` in the walk, also one inside a user function (``FUNCTION_FAILED``
    caused by it), is ``WORKER_MEMORY_EXCEEDED`` naming the key (and the function)."""
    walker_cls = Walker if cls is None else cls

    def walk(batches: Iterator[Any]) -> Iterator[Any]:
        walker = walker_cls(config)
        failed = None
        if arrange is not None:
            batches = arrange(batches)
        try:
            with full_collections_paused():
                yield from walker.run(batches)
            return
        except MemoryError:    # raised below, once the failure's frames are released
            pass
        except ExecutionError as exc:
            if not isinstance(exc.__cause__, MemoryError):
                raise
            failed = exc.args[0]
        raise worker_memory_exceeded(walker, failed)

    return walk


class _WalkSink(Sink):
    """Routes the driver's firings to the walker (with the clock at emission time)."""

    def __init__(self, walker: Walker) -> None:
        super().__init__()
        self.walker = walker

    def firing(self, row: dict) -> None:
        self.walker.emit_firing(row)

    def late_element(self, row: dict, watermark: int) -> None:
        return None  # the walker emits late rows itself, with the element as read

    def side_output(self, tag: str, value: Any) -> None:
        self.walker.emit_side(tag, value)


class Walker:
    """Walks key runs of one partition; see the module docstring."""

    def __init__(self, config: WalkConfig) -> None:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType

        self.config = config
        self.logic = config.pipeline.compile()
        self.clock = Clock()
        self.clock.watermark = config.initial_watermark
        self.clock.processing_time = config.initial_processing_time
        self.sink = _WalkSink(self)
        self.times = BundleClock(config.initial_watermark, config.initial_processing_time,
                                 list(config.processing_times), list(config.watermarks))
        self.n_bundles = len(self.times)
        out_schema = StructType.fromJson(json.loads(config.out_schema_json))
        self.arrow_schema = to_arrow_schema(out_schema, timezone="UTC",
                                            prefers_large_types=config.large_types)
        self.pa = pa
        self.naive_schema: Any = None
        self.rows: list[tuple] = []
        self.n = 0
        key_columns = self.logic.key_columns
        self.key_columns = key_columns
        self.result_mode = config.result_mode
        self.result_names = config.result_names
        self.n_results = len(config.result_names)
        self.skip_in_json = frozenset(key_columns) | {
            "window_start", "window_end", "pane_index", "timing", "is_final", "retract"}
        self.retracting = self.logic.retracting
        self.no_keys = (None,) * len(key_columns)
        # per key
        self.key: tuple | None = None
        self.out_key: tuple = ()       # the key as read (JSON text for the test harness)
        self.walk: KeyWalk | None = None
        self.since_check = 0
        self.pending: tuple | None = None   # the key's saved state, not parsed yet
        self.processed = 0
        self.typed_tags = frozenset(config.typed_tags)
        # STATE .. VALUE (and SIDE_TYPED when a tag is typed) of rows that carry none of them
        self.tail_none = (None,) * (6 if self.typed_tags else 5)

    def naive_batch(self, batch: Any) -> Any:
        """An input batch with time zones dropped (UTC wall time), as the walk reads values;
        the target schema is taken from the first batch."""
        if self.naive_schema is None:
            self.naive_schema = self.pa.schema([
                self.pa.field(f.name, naive_type(f.type), f.nullable) for f in batch.schema])
        return batch if batch.schema == self.naive_schema else batch.cast(self.naive_schema)

    # --- output ----------------------------------------------------------------------------
    def _meta(self, kind: str) -> tuple:
        self.n += 1
        walk = self.walk
        if walk is None:
            return (kind, 0, 0, 0, self.n)
        return (kind, walk.b, walk.phase, walk.sub, self.n)

    def emit_firing(self, row: dict) -> None:
        """One firing row (``core.outputs.firing_row``) as a tagged output row."""
        self._firing(row["window_start"], row["window_end"], row["pane_index"], row["timing"],
                     row["is_final"], row.get("retract", False), row)

    def emit_result(self, window: Any, index: int, timing: str, is_final: bool,
                    result: dict) -> None:
        """``emit_firing(firing_row(...))`` of a result row without building the firing row
        (the pane walker's firings): the key and window come from the walk, and the result's
        own key columns are dropped as ``firing_row`` drops them."""
        check_result_columns(result)
        self._firing(window.start, window.end, index, timing, is_final, False, result)

    def _firing(self, start: Any, end: Any, index: int, timing: str, is_final: bool,
                retract: bool, values: dict) -> None:
        """The tagged row of a firing whose result columns are in ``values`` (with or
        without the key and window columns, which the row takes from its arguments)."""
        clock = self.clock
        head = self._meta("firing")
        meta = (start, end, index, timing, is_final)
        if self.retracting:
            meta = (*meta, retract)
        times = (finite_clock(clock.watermark), finite_clock(clock.processing_time))
        if self.result_mode == "json":
            skip = self.skip_in_json
            payload = values if skip.isdisjoint(values) else \
                {k: v for k, v in values.items() if k not in skip}
            results: tuple = (to_json(payload),)
        else:   # typed or declared: the core conformed declared rows already
            results = tuple(values.get(name) for name in self.result_names)
        self.rows.append((*head, *self.out_key, *meta, *times, *results, None, None,
                          *self.tail_none))

    def emit_element(self, kind: str, element: dict, reason: str, watermark: int | None
                     ) -> None:
        head = self._meta(kind)
        tail = (None,) * (5 + (1 if self.retracting else 0))
        p = self.times.processing_times[self.walk.b]
        self.rows.append((*head, *self.no_keys, *tail, watermark, finite_clock(p),
                          *((None,) * self.n_results), element, reason, *self.tail_none))

    def _bare_row(self, kind: str, keys: tuple, times: tuple, reason: str | None,
                  tail: tuple) -> None:
        head = self._meta(kind)
        meta = (None,) * (5 + (1 if self.retracting else 0))
        tail = (*tail, *self.tail_none[len(tail):])
        self.rows.append((*head, *keys, *meta, *times, *((None,) * self.n_results), None,
                          reason, *tail))

    def emit_side(self, tag: str, value: Any) -> None:
        """A ``context.output`` value: typed tags in SIDE_TYPED (conformed by the core), the
        others as JSON text."""
        clock = self.clock
        times = (finite_clock(clock.watermark), finite_clock(clock.processing_time))
        if tag in self.typed_tags:
            tail: tuple = (None, None, None, None, None, {tag: value})
        else:
            tail = (None, None, None, None, to_json(value))
        self._bare_row("side", self.out_key, times, tag, tail)

    def emit_state(self, text: str, next_et: int | None, next_pt: int | None, size: int
                   ) -> None:
        self._bare_row("state", self.out_key, (None, None), None, (text, next_et, next_pt, size))

    def flush(self) -> Any:
        pa = self.pa
        rows, self.rows = self.rows, []
        schema = self.arrow_schema
        columns = list(zip(*rows)) if rows else [()] * len(schema)
        arrays = [self.column_array(field, values) for field, values in zip(schema, columns)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def column_array(self, field: Any, values: Any) -> Any:
        """``values`` as the Arrow array of the output column ``field``; values it cannot
        hold are ``RESULT_SCHEMA_MISMATCH``."""
        pa = self.pa
        try:
            return pa.array(values, type=field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as exc:
            raise ExecutionError(
                f"output column {field.name!r} cannot hold the values the pipeline "
                f"produced ({exc})", code="RESULT_SCHEMA_MISMATCH") from exc

    # --- per key ---------------------------------------------------------------------------
    def start_key(self, key: tuple) -> None:
        self.key = key
        self.walk = KeyWalk(self.logic, key, self.clock, self.sink, self.times)
        self.pending = None
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
            self.walk.driver = KeyDriver.restore(self.logic, self.key, self.clock, self.sink,
                                                 data)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise StateError(f"pane state of key {self.key!r} is corrupt ({exc!r}); restore "
                             f"an intact checkpoint version, or {rebuild_hint()}",
                             code="CHECKPOINT_CORRUPT") from exc

    def _idle(self) -> bool:
        """True when the pending state has nothing due in this run (pass it through)."""
        if self.config.finalize or not self.n_bundles:
            return not self.config.finalize
        _, next_et, next_pt, _ = self.pending
        return ((next_et is None or next_et > self.times.watermark)
                and (next_pt is None or next_pt > self.times.processing_time))

    def open_bundle(self, b: int) -> None:
        if self.pending is not None:
            self._restore_pending()
        self.walk.open_bundle(b)

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
        walk = self.walk
        if self.config.finalize:
            walk.finish()
        else:
            walk.catch_up(self.n_bundles)
        driver = walk.driver
        if self.config.emit_state and driver is not None and not driver.is_empty():
            self.emit_state(_COMPACT_JSON.encode(driver.snapshot()),
                            driver.next_timer(EVENT), driver.next_timer(PROCESSING), self.live)
        walk.driver = None
        self.key = None

    @property
    def live(self) -> int | None:
        """Live entries of the key being walked (as the pane and session walkers count them):
        open windows + buffered elements, an accumulator counting 1; ``None`` between keys."""
        driver = None if self.walk is None else self.walk.driver
        if driver is None:
            return None
        return len(driver.records) + sum(len(c) if type(c) is list else 1
                                         for c in driver.contents.values())

    def check_state(self) -> None:
        size = self.live
        if size is not None and size > self.config.max_key_state:
            raise key_state_limit(self.key, size, self.config.max_key_state)

    # --- the partition loop ----------------------------------------------------------------
    def run(self, batches: Iterator[Any]) -> Iterator[Any]:
        config = self.config
        user_columns = config.user_columns
        json_columns = set(config.json_columns)
        key_idx = [user_columns.index(c) for c in self.key_columns]
        single = key_idx[0] if len(key_idx) == 1 else None
        arrivals = config.arrivals
        P = self.times.processing_times
        finite = self.logic.finite_columns
        skew = self.logic.max_future_skew_ms
        check_every = min(CHECK_EVERY, max(1, config.max_key_state))
        seq_column = config.seq_column
        last_arrival: Any = object()
        b = 0
        horizon: int | None = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            batch = self.naive_batch(batch)
            cols, raw_cols = batch_columns(batch, user_columns, json_columns)
            arrival_col = py_values(batch.column(ARRIVAL))
            ts_col = py_values(batch.column(TS))
            reason_col = py_values(batch.column(TREASON))
            seq_col = py_values(batch.column(seq_column)) if seq_column else None
            absent_col = py_values(batch.column(ABSENT)) if config.has_absent else None
            state_col = py_values(batch.column(STATE)) if config.has_state else None
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
                    if len(self.rows) >= FLUSH_ROWS:
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
                    horizon = future_horizon(P[b], skew)
                row = dict(zip(user_columns, values))
                raw = row if cols is raw_cols else \
                    dict(zip(user_columns, (col[i] for col in raw_cols)))
                if absent_col is not None and absent_col[i]:
                    for c in absent_col[i]:
                        row.pop(c, None)
                walk = self.walk
                if b != walk.b_open:
                    self.open_bundle(b)
                walk.sub = seq_col[i] if seq_col is not None else walk.sub + 1
                ts = ts_col[i]
                reason = reject_reason(reason_col[i], ts, key, horizon,
                                       bool(finite) and non_finite(row, finite))
                if reason is not None:
                    self.emit_element("reject", raw, reason, None)
                    continue
                watermark = self.clock.watermark
                if walk.process(row, ts):
                    self.processed += 1
                else:
                    self.emit_element("late", raw, TOO_LATE, finite_clock(watermark))
                self.since_check += 1
                if self.since_check >= check_every:
                    self.since_check = 0
                    self.check_state()
            if len(self.rows) >= FLUSH_ROWS:
                yield self.flush()
        self.finish_key()
        self.walk = None
        self._bare_row("stats", self.no_keys, (None, None), None,
                       (None, None, None, self.processed))
        yield self.flush()
