"""Hypothesis strategies shared by the property tests: random pipelines and random bundles.

``pipelines()`` draws a pipeline over rows ``{"key", "ts", "value"}`` (assigner, trigger tree,
accumulation mode, evictor, lateness, window function); ``bundle_lists()`` draws bundles with
out-of-order and late rows, explicit or strategy watermarks, processing times and a few bad
rows. The defaults are what the reference-engine property tests
(``unit/test_snapshot_restore.py``, ``unit/test_bundling_invariance.py``) were written for;
``wide=True`` / ``keys=`` / ``max_rows=`` widen them for the Spark differential tests.
``per_key()`` groups firings by key, the order every engine promises (SPEC §9).

The user functions live at module level so pipeline fingerprints are stable. Spark's Python
workers cannot import this module: a test that ships these functions to Spark registers it
with ``cloudpickle.register_pickle_by_value``.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

from hypothesis import strategies as st

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.triggers import DslTrigger
from windowlib.testing import Bundle

KEYS = ("a", "b", "c")
MANY_KEYS = ("a", "b", "c", "d", "e", "f")

# --- user functions the random pipelines use (module level: stable fingerprints) -------------

SEEN = wl.ValueStateDescriptor("seen", default=0)
FIRES = wl.ValueStateDescriptor("fires", default=0)
FIRES_MERGING = wl.ReducingStateDescriptor("fires", operator.add)


def add_values(a: dict, b: dict) -> dict:
    """A reduce function over rows."""
    return {"value": a["value"] + b["value"], "ts": max(a["ts"], b["ts"])}


def value_delta(a: dict, b: dict) -> float:
    return abs(a["value"] - b["value"])


def value_gap(element: dict) -> int:
    """A dynamic session gap: 3 to 12 ms by the element's value (nulls: 5)."""
    value = element.get("value")
    return 5 if value is None else 3 + int(value) % 10


@dataclasses.dataclass(frozen=True)
class SpanAggregate(wl.AggregateFunction):
    """An AggregateFunction whose accumulator is a (nested) tuple, not JSON's list."""

    def create_accumulator(self) -> tuple:
        return (0, 0, None)

    def add(self, value: dict, acc: tuple) -> tuple:
        n, total, span = acc
        ts = value["ts"]
        span = (ts, ts) if span is None else (min(span[0], ts), max(span[1], ts))
        return (n + 1, total + value["value"], span)

    def merge(self, a: tuple, b: tuple) -> tuple:
        if a[2] is None:
            return (a[0] + b[0], a[1] + b[1], b[2])
        if b[2] is None:
            return (a[0] + b[0], a[1] + b[1], a[2])
        return (a[0] + b[0], a[1] + b[1], (min(a[2][0], b[2][0]), max(a[2][1], b[2][1])))

    def get_result(self, acc: tuple) -> dict:
        return {"n": acc[0], "total": acc[1], "span": acc[2]}


@dataclasses.dataclass(frozen=True)
class PaneFn(wl.ProcessWindowFunction):
    """Yields the FLIP-2 pane facts, a per-key (global) ValueState counter and a per-window
    firing counter: a ValueState, or for merging windows a ReducingState (ValueState cannot
    merge; merged sessions sum their counters)."""

    merging: bool = False

    def process(self, key: Any, context: wl.Context, elements: list) -> Any:
        seen = context.global_state(SEEN)
        seen.update(seen.value() + len(elements))
        row = {"idx": context.pane.index, "when": context.pane.timing.value,
               "first": context.pane.is_first, "last": context.pane.is_last,
               "n": len(elements), "total": sum(e.get("value") or 0 for e in elements),
               "seen": seen.value()}
        if self.merging:
            fires = context.window_state(FIRES_MERGING)
            fires.add(1)
            row["fires"] = fires.get()
        else:
            fires = context.window_state(FIRES)
            fires.update(fires.value() + 1)
            row["fires"] = fires.value()
        yield row


@dataclasses.dataclass(frozen=True)
class CarelessFn(wl.ProcessWindowFunction):
    """A function that changes what it is given and what it yields: it changes the list of
    values in its row after the yield, and its elements' values in place. Every engine must
    give the same rows: results as yielded, each window holding its own elements (a change
    stays in that window, for its later firings)."""

    def process(self, key: Any, context: wl.Context, elements: list) -> Any:
        values = [e.get("value") for e in elements]
        yield {"values": values, "idx": context.pane.index}
        values.append(-1)
        for e in elements:
            e["value"] = (e.get("value") or 0) + 100


def window_rows(key: Any, window: Any, elements: list) -> Any:
    """An ``apply`` window function: one row per element (in pane order) plus a summary row."""
    start = getattr(window, "start", None)
    for i, e in enumerate(elements):
        yield {"i": i, "ts": e.get("ts"), "value": e.get("value"), "start": start}
    yield {"i": -1, "ts": None, "value": len(elements), "start": start}


@dataclasses.dataclass(frozen=True)
class ReducedPaneFn(wl.ProcessWindowFunction):
    """The process function of ``reduce(fn, process_fn)``: the single reduced row with the pane
    facts and the window bounds from the context."""

    def process(self, key: Any, context: wl.Context, elements: list) -> Any:
        (row,) = elements
        window = context.window
        yield {**row, "idx": context.pane.index, "when": context.pane.timing.value,
               "first": context.pane.is_first, "last": context.pane.is_last,
               "end": getattr(window, "end", None)}


DECLARATIVE = [agg.count(), agg.sum("value").alias("total"), agg.min("value"), agg.max("value"),
               agg.mean("value"), agg.first("value"), agg.last("value"),
               agg.collect_list("value"), agg.approx_count_distinct("value")]


# --- strategies -------------------------------------------------------------------------------

def _count_triggers(draw: Any) -> wl.Trigger:
    n = draw(st.integers(1, 4))
    return draw(st.sampled_from([
        wl.CountTrigger.of(n), wl.PurgingTrigger.of(wl.CountTrigger.of(n)),
        wl.CountTrigger.at_least(n)]))


def _early(draw: Any, timers: str) -> wl.Trigger | None:
    n, m = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    options: list[wl.Trigger | None] = [
        None, wl.CountTrigger.at_least(n),
        wl.All(wl.CountTrigger.at_least(n), wl.CountTrigger.at_least(m))]
    if timers != "window_end":
        delay = draw(st.integers(0, 20))
        options += [wl.EventTimeTrigger.after_first_element(delay),
                    wl.Any(wl.CountTrigger.at_least(n),
                           wl.EventTimeTrigger.after_first_element(delay))]
    if timers == "any":
        options.append(wl.Any(wl.CountTrigger.at_least(n),
                              wl.ProcessingTimeTrigger.after_first_element(draw(
                                  st.integers(0, 50)))))
    return draw(st.sampled_from(options))


def _event_trigger(draw: Any, merging: bool, timers: str) -> wl.Trigger | None:
    kind = draw(st.sampled_from(["default", "count", "dsl", "dsl", "dsl", "purging_event", "any"]
                                + ([] if timers == "window_end" else ["continuous"])
                                + ([] if merging else ["delta"])))
    n = draw(st.integers(1, 4))
    if kind == "default":
        return None
    if kind == "count":
        return _count_triggers(draw)
    if kind == "purging_event":
        return wl.PurgingTrigger.of(wl.EventTimeTrigger.create())
    if kind == "continuous":
        return wl.ContinuousEventTimeTrigger.of(draw(st.integers(3, 25)))
    if kind == "delta":
        return wl.DeltaTrigger.of(draw(st.integers(2, 8)), value_delta)
    if kind == "any":
        return wl.Any(wl.CountTrigger.at_least(n),
                      wl.CountTrigger.at_least(draw(st.integers(1, 4))))
    trigger = wl.EventTimeTrigger.after_end_of_window(fire_empty_on_time=draw(st.booleans()))
    early = _early(draw, timers)
    if early is not None:
        trigger = trigger.with_early_trigger(early)
    lates: list[wl.Trigger | None] = [
        None, wl.CountTrigger.at_least(n),
        wl.Any(wl.CountTrigger.at_least(n), wl.CountTrigger.at_least(n + 1))]
    if timers != "window_end":
        lates.append(wl.EventTimeTrigger.after_first_element(draw(st.integers(0, 20))))
    late = draw(st.sampled_from(lates))
    if late is not None:
        trigger = trigger.with_late_trigger(late)
    return trigger


def _processing_trigger(draw: Any) -> wl.Trigger | None:
    n = draw(st.integers(1, 4))
    return draw(st.sampled_from([
        None, wl.CountTrigger.of(n), wl.PurgingTrigger.of(wl.CountTrigger.of(n)),
        wl.ContinuousProcessingTimeTrigger.of(draw(st.integers(5, 40))),
        wl.ProcessingTimeTrigger.after_end_of_window().with_early_trigger(
            wl.CountTrigger.at_least(n))]))


@st.composite
def session_pane_pipelines(draw: Any) -> wl.Pipeline:
    """Random pipelines the pane path's session walker takes (``planner.session_reasons``):
    ``EventTimeSessionWindows`` with a static or a dynamic gap (``value_gap``), keyed or
    ``window_all``, the default
    trigger, accumulating or discarding, any lateness (late elements that merge into fired
    sessions, bridge them or are dropped), and a declarative aggregate, ``reduce``,
    ``aggregate`` (with or without a process function), an ``apply`` function or a ``process``
    function reading the pane context with per-key and merged per-window state."""
    base = wl.Pipeline("sessions", timestamp="ts")
    assigner = wl.EventTimeSessionWindows.with_gap(draw(st.integers(3, 30))) \
        if draw(st.integers(0, 3)) else wl.EventTimeSessionWindows.with_dynamic_gap(value_gap)
    p = base.key_by("key").window(assigner) if draw(st.integers(0, 5)) > 0 \
        else base.window_all(assigner)
    mode = draw(st.sampled_from([None, "accumulating", "discarding"]))
    if mode is not None:
        p = p.accumulation(mode)
    p = p.allowed_lateness(draw(st.sampled_from([0, 0, 7, 30, 60])))
    function = draw(st.sampled_from(["declarative", "declarative", "process", "apply",
                                     "reduce", "aggregate", "aggregate_process", "careless"]))
    return with_function(draw, p, function, merging=True)


def _time_window(draw: Any, event_time: bool) -> wl.WindowAssigner:
    size = draw(st.integers(5, 40))
    kind = draw(st.sampled_from(["tumbling", "sliding", "session"]))
    if kind == "tumbling":
        cls = wl.TumblingEventTimeWindows if event_time else wl.TumblingProcessingTimeWindows
        return cls.of(size, draw(st.integers(-size + 1, size - 1)))
    if kind == "sliding":
        slide = draw(st.integers(1, size))
        cls = wl.SlidingEventTimeWindows if event_time else wl.SlidingProcessingTimeWindows
        return cls.of(size, slide, draw(st.integers(-slide + 1, slide - 1)))
    cls = wl.EventTimeSessionWindows if event_time else wl.ProcessingTimeSessionWindows
    return cls.with_gap(draw(st.integers(3, 30)))


@st.composite
def pipelines(draw: Any, processing_time: bool = True, timers: str = "any",
              wide: bool = False) -> wl.Pipeline:
    """Random pipelines over rows ``{"key", "ts", "value"}``.

    ``processing_time=False`` leaves out processing-time assigners. ``timers`` narrows the
    triggers: ``"any"``; ``"event"`` (no processing-time timers); ``"window_end"`` (event-time
    timers only at window ends and cleanup: no continuous or after-first-element triggers).
    ``wide=True`` adds ``apply``, ``reduce(fn, process_fn)`` and global windows with their
    default ``NeverTrigger``, and draws processing-time assigners and ``process`` more often.
    """
    shapes = ["event", "event", "event", "global", "count_window"]
    if processing_time:
        shapes += ["processing", "processing"] if wide else ["processing"]
    shape = draw(st.sampled_from(shapes))
    base = wl.Pipeline("prop", timestamp="ts")
    keyed = draw(st.integers(0, 5)) > 0
    base = base.key_by("key") if keyed else base
    merging = False
    if shape == "count_window":
        size = draw(st.integers(1, 4))
        slide = draw(st.one_of(st.none(), st.integers(1, 4)))
        p = base.count_window(size, slide) if keyed else base.count_window_all(size, slide)
        trigger = None
    else:
        if shape == "global":
            assigner: wl.WindowAssigner = wl.GlobalWindows.create()
            trigger = _count_triggers(draw)
            if wide and draw(st.integers(0, 4)) == 0:
                trigger = None   # the default NeverTrigger
        elif shape == "event":
            assigner = _time_window(draw, event_time=True)
            merging = assigner.is_merging
            trigger = _event_trigger(draw, merging, timers)
        else:
            assigner = _time_window(draw, event_time=False)
            merging = assigner.is_merging
            trigger = _processing_trigger(draw)
        p = base.window(assigner) if keyed else base.window_all(assigner)
    mode = draw(st.sampled_from([None, "accumulating", "discarding",
                                 "accumulating_and_retracting"]))
    if mode is not None and isinstance(trigger, DslTrigger) \
            and draw(st.booleans()):
        trigger = getattr(trigger, mode)()
    elif mode is not None:
        p = p.accumulation(mode)
    if trigger is not None:
        p = p.trigger(trigger)
    if shape != "count_window":
        after = draw(st.booleans())
        evictor = draw(st.sampled_from([
            None, None, wl.CountEvictor.of(draw(st.integers(1, 3)), after),
            wl.TimeEvictor.of(draw(st.integers(0, 15)), after),
            wl.DeltaEvictor.of(draw(st.integers(3, 10)), value_delta, after)]))
        if evictor is not None:
            p = p.evictor(evictor)
    p = p.allowed_lateness(draw(st.sampled_from([0, 0, 7, 30, 60])))
    functions = ["declarative", "reduce", "aggregate", "aggregate_process", "process"]
    if wide:   # process twice: the pane context is where engines most easily diverge
        functions += ["apply", "reduce_process", "process", "careless"]
    return with_function(draw, p, draw(st.sampled_from(functions)), merging)


def with_function(draw: Any, p: wl.Pipeline, function: str, merging: bool = False
                  ) -> wl.Pipeline:
    """``p`` with the window function named ``function`` (see ``pipelines``)."""
    if function == "apply":
        return p.apply(window_rows)
    if function == "reduce_process":
        return p.reduce(add_values, ReducedPaneFn())
    if function == "batch":
        return p.process_panes(PaneStats())
    if function == "careless":
        return p.process(CarelessFn())
    if function == "declarative":
        aggs = draw(st.lists(st.sampled_from(DECLARATIVE), min_size=1, max_size=3,
                             unique_by=lambda a: a.name))
        return p.aggregate(*aggs)
    if function == "reduce":
        return p.reduce(add_values)
    if function == "aggregate":
        return p.aggregate(SpanAggregate())
    if function == "aggregate_process":
        return p.aggregate(SpanAggregate(), PaneFn(merging=merging))
    return p.process(PaneFn(merging=merging))


def _rows(draw: Any, keys: tuple[str, ...], now: int, with_processing_time: bool,
          max_rows: int = 8) -> list[dict]:
    good = st.builds(lambda k, t, v: {"key": k, "ts": t, "value": v},
                     st.sampled_from(keys), st.integers(now - 40, now + 25), st.integers(-5, 20))
    bad = st.sampled_from([{"key": "a", "ts": None, "value": 1}, {"ts": 3, "value": 1},
                           {"key": "b", "ts": 10**12, "value": 1}])
    row = st.one_of(good, good, good, good, good, good, good, bad) if with_processing_time \
        else good
    size = draw(st.integers(0, max_rows))  # uniform sizes: st.lists alone favours short lists
    return draw(st.lists(row, min_size=size, max_size=size))


@st.composite
def bundle_lists(draw: Any, processing_time: bool = False, max_bundles: int = 6,
                 keys: tuple[str, ...] = KEYS, max_rows: int = 8) -> list[Bundle]:
    """Up to ``max_bundles`` bundles of up to ``max_rows`` rows over a prefix of ``keys``
    (default one to three keys).

    Event time drifts forward from -40 by up to 30 ms per bundle; rows scatter around it
    (out of order, some behind the watermark, a few bad rows). Each bundle has an explicit
    watermark near the drift, or ``None`` (the strategy decides), and a processing time —
    always when ``processing_time=True`` (processing-time windows need one), else sometimes.
    """
    keys = draw(st.sampled_from([keys[:1], keys[:2], keys]))
    now = -40
    bundles = []
    for _ in range(draw(st.integers(1, max_bundles))):
        now += draw(st.integers(0, 30))
        p_time = draw(st.integers(0, 300) if processing_time
                      else st.one_of(st.none(), st.integers(0, 300)))
        watermark = draw(st.one_of(st.none(), st.integers(now - 40, now + 10)))
        bundles.append(Bundle(elements=tuple(_rows(draw, keys, now, p_time is not None,
                                                   max_rows)),
                              processing_time=p_time, watermark=watermark))
    return bundles


class PaneStats(wl.BatchWindowFunction):
    """A batch function: per pane its element count, value total (nulls as 0), pane index
    and timing, computed with Arrow over every pane of the batch at once."""

    result_schema = "n long, total long, idx long, when string"

    def process_panes(self, panes: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        values = pc.fill_null(panes.column("value"), 0) if "value" in panes.column_names \
            else pc.multiply(panes.column("pane_id"), 0)
        table = panes.append_column("v", values.cast("int64"))
        grouped = table.group_by("pane_id").aggregate([
            ("v", "count"), ("v", "sum"), ("pane_index", "max"), ("timing", "max")])
        return pa.table({"pane_id": grouped.column("pane_id"), "n": grouped.column("v_count"),
                         "total": grouped.column("v_sum"),
                         "idx": grouped.column("pane_index_max"),
                         "when": grouped.column("timing_max")})


class KillsItsWorker(wl.ProcessWindowFunction):
    """Kills its own Python worker, as the system's out-of-memory killer or a native crash in
    a library would (Spark then reports that the worker "exited unexpectedly (crashed)")."""

    def process(self, key: Any, context: Any, elements: list) -> Any:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
        yield {"n": len(elements)}


class AllocatesTooMuch(wl.ProcessWindowFunction):
    """Asks for more memory than any machine has (1 PiB): a ``MemoryError`` raised inside the
    user's function, as a worker's capped memory gives one."""

    def process(self, key: Any, context: Any, elements: list) -> Any:
        buffer = bytearray(1 << 50)
        yield {"n": len(elements) + len(buffer)}


def per_key(p: wl.Pipeline, firings: list[dict]) -> dict[tuple, list[dict]]:
    """Firings grouped by key, each group in emission order (what SPEC §9 promises)."""
    out: dict[tuple, list[dict]] = {}
    for row in firings:
        out.setdefault(tuple(row.get(c) for c in p.key_columns), []).append(row)
    return out


def needs_processing_time(p: wl.Pipeline) -> bool:
    """Whether ``p``'s windows or trigger follow processing time (its bundles then need
    processing times: ``bundle_lists(processing_time=True)``)."""
    return not p.window_assigner.is_event_time or \
        "ProcessingTimeTrigger" in repr(p.effective_trigger)


@st.composite
def pane_pipelines(draw: Any) -> wl.Pipeline:
    """Random pipelines the pane path takes (``planner.pane_reasons``):

    - event-time tumbling or sliding windows with the default trigger,
      ``after_end_of_window()`` with count early/late triggers (early ones also
      ``after_first_element`` by event or processing time), a ``ContinuousEventTimeTrigger``,
      a ``ContinuousProcessingTimeTrigger``, a ``CountTrigger``, a ``DeltaTrigger``,
      ``after_first_element`` alone or a ``ProcessingTimeTrigger``;
    - ``GlobalWindows`` with a ``CountTrigger`` (count windows), a ``DeltaTrigger``, a
      ``ContinuousProcessingTimeTrigger`` or their default ``NeverTrigger``;
    - processing-time tumbling or sliding windows with their default trigger;

    purging or not, accumulating or discarding, any lateness, and a ``process`` function
    reading the pane context with per-key and per-window state (``PaneFn``), an ``apply``
    function, or a ``BatchWindowFunction`` (``PaneStats``); behind a count, time or delta
    evictor (before or after the function) also a declarative aggregate, ``reduce`` or
    ``aggregate``. Bundles need processing times when ``needs_processing_time``."""
    size = draw(st.integers(5, 40))
    count_window = draw(st.integers(0, 4)) == 0     # GlobalWindows
    processing = not count_window and draw(st.integers(0, 5)) == 0
    if count_window:
        assigner: wl.WindowAssigner = wl.GlobalWindows.create()
    elif processing:        # with their default ProcessingTimeTrigger
        slide = draw(st.integers(1, size))
        assigner = draw(st.sampled_from([
            wl.TumblingProcessingTimeWindows.of(size, draw(st.integers(-size + 1, size - 1))),
            wl.SlidingProcessingTimeWindows.of(size, slide,
                                               draw(st.integers(-slide + 1, slide - 1)))]))
    elif draw(st.booleans()):
        assigner = wl.TumblingEventTimeWindows.of(size, draw(st.integers(-size + 1, size - 1)))
    else:
        slide = draw(st.integers(1, size))
        assigner = wl.SlidingEventTimeWindows.of(size, slide,
                                                 draw(st.integers(-slide + 1, slide - 1)))
    base = wl.Pipeline("panes", timestamp="ts")
    p = base.key_by("key").window(assigner) if draw(st.integers(0, 5)) > 0 \
        else base.window_all(assigner)
    after = draw(st.booleans())
    evictor = draw(st.sampled_from([
        None, None, None, wl.CountEvictor.of(draw(st.integers(1, 3)), after),
        wl.TimeEvictor.of(draw(st.integers(0, 15)), after),
        wl.DeltaEvictor.of(draw(st.integers(3, 10)), value_delta, after)]))
    trigger: wl.Trigger | None = None
    kind = draw(st.sampled_from(["count", "delta", "never", "continuous_pt"])) if count_window \
        else "default" if processing \
        else draw(st.sampled_from(["default", "end", "early", "late", "both", "continuous",
                                   "count", "delta", "first", "continuous_pt", "proc_end"]))
    if kind == "proc_end":      # Flink's ProcessingTimeTrigger over event-time windows
        trigger = wl.ProcessingTimeTrigger.create()
    elif kind == "continuous_pt":     # (bundles then need processing times)
        trigger = wl.ContinuousProcessingTimeTrigger.of(draw(st.integers(1, 40)))
    elif kind == "first":     # by event or processing time (bundles then need one)
        trigger = draw(st.sampled_from([wl.EventTimeTrigger, wl.ProcessingTimeTrigger])
                       ).after_first_element(draw(st.integers(0, 40)))
    elif kind == "never":      # GlobalWindows' default: one final pane when finalized
        trigger = None if draw(st.booleans()) else wl.NeverTrigger.create()
    elif kind == "delta":
        trigger = wl.DeltaTrigger.of(draw(st.integers(0, 8)), value_delta)
    elif kind == "continuous":
        trigger = wl.ContinuousEventTimeTrigger.of(draw(st.integers(1, 15)))
    elif kind == "count":
        trigger = wl.CountTrigger.of(draw(st.integers(1, 4)))
    elif kind != "default":
        # an evictor can empty a pane before ON_TIME: fire_empty_on_time then stays general
        trigger = wl.EventTimeTrigger.after_end_of_window(
            fire_empty_on_time=evictor is None and draw(st.booleans()))
        counts = [wl.CountTrigger.at_least(draw(st.integers(1, 4))),
                  wl.CountTrigger.of(draw(st.integers(1, 4)))]
        if kind in ("early", "both"):     # or by time (processing time: bundles need one)
            delay = draw(st.integers(0, 40))
            trigger = trigger.with_early_trigger(draw(st.sampled_from([
                *counts, wl.EventTimeTrigger.after_first_element(delay),
                wl.ProcessingTimeTrigger.after_first_element(delay)])))
        if kind in ("late", "both"):
            trigger = trigger.with_late_trigger(draw(st.sampled_from(counts)))
    mode = draw(st.sampled_from([None, "accumulating", "discarding"]))
    empty_on_time = getattr(trigger, "fire_empty_on_time", False) \
        and getattr(trigger, "early", None) is not None
    if mode == "discarding" and empty_on_time:
        mode = "accumulating"   # empty discarding ON_TIME panes stay on the general path
    if not empty_on_time and draw(st.integers(0, 4)) == 0:   # FIRE_AND_PURGE: discarding
        trigger = wl.PurgingTrigger.of(trigger or assigner.default_trigger())
    if mode is not None:
        p = p.accumulation(mode)
    if trigger is not None:
        p = p.trigger(trigger)
    if evictor is not None:
        p = p.evictor(evictor)
    p = p.allowed_lateness(draw(st.sampled_from([0, 0, 7, 30, 60])))
    functions = ["process", "process", "apply", "batch", "careless"]
    if evictor is not None:
        functions += ["declarative", "reduce", "aggregate", "aggregate_process"]
    return with_function(draw, p, draw(st.sampled_from(functions)))
