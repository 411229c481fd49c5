"""Semantic transcripts: YAML scenarios turned into pipelines, bundles and expected firings.

Each ``tests/transcripts/*.yaml`` file is a YAML stream of documents (``---``), one scenario
each, in the spirit of Beam's ``testing/data/trigger_transcripts.yaml``. The expectations are
written by hand from SPEC.md; they are the independent check of every engine, never the
recorded output of one.

Document vocabulary
===================

Top level::

    name: tumbling_5_minutes             # [a-z0-9_]+, unique in its file; test id file::name
    why: free text                       # the reasoning when the expectation is subtle
    keys: [key]                          # key columns (default [key]); ignored with window_all
    window_all: true                     # non-keyed pipeline (default false)
    assigner: ...                        # see "Assigners"; or
    count_window: 3 | {size: 3, slide: 2}
    trigger: ...                         # optional, see "Triggers"
    evictor: ...                         # optional, see "Evictors"
    allowed_lateness: 1 minute           # optional duration
    accumulation: discarding             # optional pipeline-level mode
    function: ...                        # required, see "Functions"
    watermark_strategy: ...              # optional: monotonous | {bounded_out_of_orderness: d}
                                         #   | {processing_time_lag: d}
    steps: [...]                         # bundles, see "Steps"
    finalize: false | true | {expect: [...], late: [...]}
                                         # true/mapping: end of input after the last step
                                         # (watermark +inf); expect = firings it causes
    build_error: {type: DefinitionError, code: LATENESS_NEGATIVE}
                                         # instead of steps: building the pipeline must fail

Times and durations
-------------------
Timestamps and window bounds: an int (ms since the epoch), a clock string ``"HH:MM"``,
``"HH:MM:SS"`` or ``"HH:MM:SS.mmm"`` on 1970-01-01 (prefix ``"Nd "`` for N days later,
a leading ``-`` for before the epoch, e.g. ``"-00:00:00.001"`` is -1), or an ISO-8601 string
(``"2024-03-10T05:00:00Z"``; naive means UTC). The loader disables YAML 1.1's sexagesimal
ints and implicit timestamps, so ``12:05`` is the string ``"12:05"``, never 725.
Durations: an int (ms) or a string such as ``"5 minutes"``, ``"-8 hours"``, ``"10ms"``,
``"1h 30m"``. The loader converts both itself and hands the engine plain ints.

Assigners
---------
``{tumbling: size, offset: o}``, ``{sliding: size, slide: s, offset: o}``,
``{session: gap}``, ``{session_dynamic: column}`` (gap read from the element's column),
``global``, ``{tumbling_processing: size}``, ``{sliding_processing: size, slide: s}``,
``{session_processing: gap}``, ``{calendar: day, tz: America/New_York}``.

Triggers
--------
Classic: ``event_time``, ``processing_time``, ``never``, ``{count: n}``,
``{purging: <trigger>}``, ``{continuous_event_time: d}``, ``{continuous_processing_time: d}``,
``{delta: threshold}`` (delta = abs difference of ``value``), ``{custom: marker}`` (a custom
``Trigger`` subclass that FIRE_AND_PURGEs on an element whose ``marker`` column is true).
FLIP-9 DSL: ``{at_least: n}``, ``{all: [t, ...]}``, ``{any: [t, ...]}``,
``after_end_of_window`` or ``{after_end_of_window: {early: t, late: t, fire_empty_on_time: b}}``,
``{event_time_after_first_element: d}``, ``{processing_time_after_first_element: d}``,
``{processing_time_after_end_of_window: {early: t}}``. Any DSL mapping may add
``mode: accumulating | discarding | accumulating_and_retracting``.

Evictors
--------
``{count: n}``, ``{delta: threshold}`` (abs difference of ``value``), ``{time: d}``; each may
add ``after: true`` (``do_evict_after``).

Functions
---------
``collect`` — a ``ProcessWindowFunction`` yielding one row ``{values: [value, ...] (pane
order), ctx_index, ctx_timing, ctx_is_first, ctx_is_last, ctx_window: [start, end] | null,
ctx_key, ctx_watermark, ctx_processing_time}`` read from the FLIP-2 context. ``explode`` — one
row per element ``{value, pos}``.
``{aggregate: [{sum: value, as: total}, {count: null, as: n}], process: f}`` — declarative
aggregates (``count, sum, min, max, mean, first, last, approx_count_distinct, collect_list``;
``as`` defaults to ``count`` / ``<kind>_<column>``).
``{reduce: sum | min | max, process: f}`` — reduce over rows by ``value`` (``min``/``max``
keep the whole row, as the Flink guide's example). ``{aggregate_fn: average, process: f}`` —
an ``AggregateFunction`` whose result is ``{value: mean}``. ``{fold: concat}`` — fold from
``{text: ""}`` appending ``str(value)``. ``{apply: count_with_window}`` — a
``WindowFunction`` yielding ``{n, ctx_window, ctx_key}``. ``{process: collect | explode}``.
``process: f`` after reduce/aggregate hands the single pre-aggregated result to ``f``.

Steps
-----
Each step is one bundle::

    - input: [[a, "12:01", 1], {key: b, ts: "12:02", value: 5, gap: 3}]   # arrival order
      processing_time: "12:03"       # optional; the bundle's processing time
      watermark: "12:05"             # optional; the watermark after the bundle
      expect:                        # firings emitted while THIS bundle is processed
        - {key: a, window: ["12:00", "12:05"], pane: 0, timing: ON_TIME, final: true,
           total: 3}
      late: [[a, "11:59", 7]]        # elements sent to the late output during this bundle

A list element ``[k, ts, value]`` means ``{key: k, ts: ts, value: value}``. A firing names
the key column(s), ``window: [start, end]`` (``global`` for global windows), ``pane``
(pane_index), ``timing``, ``final`` (is_final), optionally ``retract`` (default false) and
any result columns. Metadata (key columns, window, pane, timing, final, retract) is always
compared; of the result columns only those the expectation names (the engine may add
others, e.g. a reduce's ``ts``). Late records are compared on the columns the expectation
names plus ``reason: too_late``; late output is checked only when the document mentions
``late:`` somewhere.

How a transcript is checked: see ``test_transcripts.py``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import windowlib as wl
from windowlib.core.time import duration_ms, timestamp_ms
from windowlib.testing import Bundle

HERE = Path(__file__).resolve().parent


class TranscriptError(ValueError):
    """A transcript document does not follow the vocabulary above."""


# --- YAML -----------------------------------------------------------------------------------

class YamlLoader(yaml.SafeLoader):
    """SafeLoader without YAML 1.1 sexagesimal numbers and implicit timestamps."""


def _int_or_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    text = loader.construct_scalar(node)
    if ":" in text:
        return text
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _float_or_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    text = loader.construct_scalar(node)
    if ":" in text:
        return text
    return yaml.SafeLoader.construct_yaml_float(loader, node)


YamlLoader.add_constructor("tag:yaml.org,2002:int", _int_or_text)
YamlLoader.add_constructor("tag:yaml.org,2002:float", _float_or_text)
YamlLoader.add_constructor("tag:yaml.org,2002:timestamp",
                        lambda loader, node: loader.construct_scalar(node))


# --- times and durations ----------------------------------------------------------------------

_CLOCK = re.compile(r"(?P<neg>-)?(?:(?P<d>\d+)d\s*)?(?P<h>\d{1,2}):(?P<m>\d\d)"
                    r"(?::(?P<s>\d\d)(?:\.(?P<ms>\d{3}))?)?")


def ts_ms(value: Any) -> int:
    """A transcript timestamp as int ms since the epoch (see the module docstring)."""
    if isinstance(value, bool):
        raise TranscriptError(f"not a timestamp: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        m = _CLOCK.fullmatch(text)
        if m:
            ms = ((int(m["d"] or 0) * 24 + int(m["h"])) * 60 + int(m["m"])) * 60_000
            ms += int(m["s"] or 0) * 1_000 + int(m["ms"] or 0)
            return -ms if m["neg"] else ms
        with contextlib.suppress(wl.WindowlibError):  # ISO-8601: windowlib's own parser
            return timestamp_ms(text)
    raise TranscriptError(f"not a timestamp: {value!r}")


def dur_ms(value: Any) -> int:
    """A transcript duration as int ms (see the module docstring)."""
    if isinstance(value, bool):
        raise TranscriptError(f"not a duration: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):  # "5 minutes", "90s": windowlib's own parser
        with contextlib.suppress(wl.WindowlibError):
            return duration_ms(value)
    raise TranscriptError(f"not a duration: {value!r}")


def _window_bounds(value: Any) -> tuple[int | None, int | None]:
    if value == "global":
        return (None, None)
    if isinstance(value, list) and len(value) == 2:
        return (ts_ms(value[0]), ts_ms(value[1]))
    raise TranscriptError(f"a window is [start, end] or 'global', got {value!r}")


# --- canned functions -------------------------------------------------------------------------

def _value(element: Any) -> Any:
    """The ``value`` of an element row (unwrapping a TimestampedValue); other results as is."""
    if isinstance(element, wl.TimestampedValue):
        element = element.value
    if isinstance(element, dict):
        return element["value"] if "value" in element else plain(element)
    return plain(element)


def plain(x: Any) -> Any:
    """Tuples to lists, recursively, so results compare equal to YAML data."""
    if isinstance(x, tuple | list):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def _window_data(window: Any) -> list[int] | None:
    return None if window.start is None else [window.start, window.end]


class Collect(wl.ProcessWindowFunction):
    """One row per firing: the pane's values in pane order plus the FLIP-2 context."""

    def process(self, key, context, elements):
        pane = context.pane
        yield {"values": [_value(e) for e in elements], "ctx_index": pane.index,
               "ctx_timing": str(pane.timing.value), "ctx_is_first": pane.is_first,
               "ctx_is_last": pane.is_last, "ctx_window": _window_data(context.window),
               "ctx_key": plain(key), "ctx_watermark": context.current_watermark,
               "ctx_processing_time": context.current_processing_time}


class Explode(wl.ProcessWindowFunction):
    """One row per element of the pane, with its position."""

    def process(self, key, context, elements):
        for pos, e in enumerate(elements):
            yield {"value": _value(e), "pos": pos}


class Average(wl.AggregateFunction):
    """Mean of ``value``; accumulator ``[sum, count]``; result ``{value: mean}``."""

    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        return [accumulator[0] + value["value"], accumulator[1] + 1]

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]

    def get_result(self, accumulator):
        return {"value": accumulator[0] / accumulator[1] if accumulator[1] else None}


def count_with_window(key, window, elements):
    """The Flink guide's WindowFunction: how many elements, in which window, for which key."""
    return [{"n": len(list(elements)), "ctx_window": _window_data(window), "ctx_key": plain(key)}]


def _reduce_sum(a: dict, b: dict) -> dict:
    return {**a, "value": a["value"] + b["value"]}


def _reduce_min(a: dict, b: dict) -> dict:
    return b if a["value"] > b["value"] else a   # the guide's example keeps the whole row


def _reduce_max(a: dict, b: dict) -> dict:
    return b if b["value"] > a["value"] else a


def _fold_concat(acc: dict, row: dict) -> dict:
    return {"text": acc["text"] + str(row["value"])}


def abs_delta(a: Any, b: Any) -> float:
    """Delta function of DeltaTrigger / DeltaEvictor: |value(b) - value(a)|."""
    return abs(_value(b) - _value(a))


class MarkerTrigger(wl.Trigger):
    """A user-defined trigger: FIRE_AND_PURGE on an element whose ``marker`` is true."""

    def on_element(self, element, timestamp, window, ctx):
        if element.get("marker"):
            return wl.TriggerResult.FIRE_AND_PURGE
        return wl.TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        return None


PROCESS_FUNCTIONS = {"collect": Collect, "explode": Explode}
REDUCERS = {"sum": _reduce_sum, "min": _reduce_min, "max": _reduce_max}
AGGREGATE_FUNCTIONS = {"average": Average}
FOLDS = {"concat": ({"text": ""}, _fold_concat)}
WINDOW_FUNCTIONS = {"count_with_window": count_with_window}
CUSTOM_TRIGGERS = {"marker": MarkerTrigger}
_DECLARATIVE = ("count", "sum", "min", "max", "mean", "first", "last",
                "approx_count_distinct", "collect_list")


# --- builders -----------------------------------------------------------------------------------

def _one(spec: Any, what: str) -> tuple[str, Any, dict]:
    """Split ``{kind: arg, opt: ...}`` or ``kind`` into (kind, arg, options)."""
    if isinstance(spec, str):
        return spec, None, {}
    if isinstance(spec, dict) and spec:
        kind = next(iter(spec))
        return kind, spec[kind], {k: v for k, v in spec.items() if k != kind}
    raise TranscriptError(f"bad {what}: {spec!r}")


def build_assigner(spec: Any) -> Any:
    kind, arg, opt = _one(spec, "assigner")
    offset = dur_ms(opt.get("offset", 0))
    if kind == "tumbling":
        return wl.TumblingEventTimeWindows.of(dur_ms(arg), offset)
    if kind == "sliding":
        return wl.SlidingEventTimeWindows.of(dur_ms(arg), dur_ms(opt["slide"]), offset)
    if kind == "session":
        return wl.EventTimeSessionWindows.with_gap(dur_ms(arg))
    if kind == "session_dynamic":
        column = arg
        return wl.EventTimeSessionWindows.with_dynamic_gap(lambda row: dur_ms(row[column]))
    if kind == "global":
        return wl.GlobalWindows.create()
    if kind == "tumbling_processing":
        return wl.TumblingProcessingTimeWindows.of(dur_ms(arg), offset)
    if kind == "sliding_processing":
        return wl.SlidingProcessingTimeWindows.of(dur_ms(arg), dur_ms(opt["slide"]), offset)
    if kind == "session_processing":
        return wl.ProcessingTimeSessionWindows.with_gap(dur_ms(arg))
    if kind == "calendar":
        return wl.CalendarWindows.of(arg, opt.get("tz", "UTC"))
    raise TranscriptError(f"unknown assigner {kind!r}")


def _with_mode(trigger: Any, opt: dict) -> Any:
    mode = opt.get("mode")
    if mode is None:
        return trigger
    if mode not in ("accumulating", "discarding", "accumulating_and_retracting"):
        raise TranscriptError(f"unknown trigger mode {mode!r}")
    return getattr(trigger, mode)()


def build_trigger(spec: Any) -> Any:
    kind, arg, opt = _one(spec, "trigger")
    simple = {
        "event_time": wl.EventTimeTrigger.create,
        "processing_time": wl.ProcessingTimeTrigger.create,
        "never": wl.NeverTrigger.create,
    }
    if kind in simple:
        return simple[kind]()
    if kind == "count":
        return wl.CountTrigger.of(int(arg))
    if kind == "purging":
        return wl.PurgingTrigger.of(build_trigger(arg))
    if kind == "continuous_event_time":
        return wl.ContinuousEventTimeTrigger.of(dur_ms(arg))
    if kind == "continuous_processing_time":
        return wl.ContinuousProcessingTimeTrigger.of(dur_ms(arg))
    if kind == "delta":
        return wl.DeltaTrigger.of(arg, abs_delta)
    if kind == "custom":
        return CUSTOM_TRIGGERS[arg]()
    # FLIP-9 DSL
    if kind == "at_least":
        return _with_mode(wl.CountTrigger.at_least(int(arg)), opt)
    if kind in ("all", "any"):
        combinator = wl.All if kind == "all" else wl.Any
        return _with_mode(combinator(*[build_trigger(t) for t in arg]), opt)
    if kind in ("after_end_of_window", "processing_time_after_end_of_window"):
        arg = dict(arg or {})
        if kind == "after_end_of_window":
            t = wl.EventTimeTrigger.after_end_of_window(
                fire_empty_on_time=bool(arg.get("fire_empty_on_time", False)))
        else:
            t = wl.ProcessingTimeTrigger.after_end_of_window()
        if arg.get("early") is not None:
            t = t.with_early_trigger(build_trigger(arg["early"]))
        if arg.get("late") is not None:
            t = t.with_late_trigger(build_trigger(arg["late"]))
        return _with_mode(t, {**opt, **({"mode": arg["mode"]} if "mode" in arg else {})})
    if kind == "event_time_after_first_element":
        return _with_mode(wl.EventTimeTrigger.after_first_element(dur_ms(arg)), opt)
    if kind == "processing_time_after_first_element":
        return _with_mode(wl.ProcessingTimeTrigger.after_first_element(dur_ms(arg)), opt)
    raise TranscriptError(f"unknown trigger {kind!r}")


def build_evictor(spec: Any) -> Any:
    kind, arg, opt = _one(spec, "evictor")
    after = bool(opt.get("after", False))
    if kind == "count":
        return wl.CountEvictor.of(int(arg), do_evict_after=after)
    if kind == "delta":
        return wl.DeltaEvictor.of(arg, abs_delta, do_evict_after=after)
    if kind == "time":
        return wl.TimeEvictor.of(dur_ms(arg), do_evict_after=after)
    raise TranscriptError(f"unknown evictor {kind!r}")


def _declarative(item: dict) -> Any:
    kinds = [k for k in item if k != "as"]
    if len(kinds) != 1 or kinds[0] not in _DECLARATIVE:
        raise TranscriptError(f"bad aggregate {item!r}")
    kind, column = kinds[0], item[kinds[0]]
    agg = wl.aggregates.count() if kind == "count" else getattr(wl.aggregates, kind)(column)
    alias = item.get("as") or ("count" if kind == "count" else f"{kind}_{column}")
    return agg.alias(alias)


def _process_fn(name: Any) -> Any:
    if name is None:
        return None
    if name not in PROCESS_FUNCTIONS:
        raise TranscriptError(f"unknown process function {name!r}")
    return PROCESS_FUNCTIONS[name]()


def apply_function(p: Any, spec: Any) -> Any:
    kind, arg, opt = _one(spec, "function")
    if kind in PROCESS_FUNCTIONS and arg is None:
        return p.process(PROCESS_FUNCTIONS[kind]())
    process = _process_fn(opt.get("process"))
    if kind == "process":
        return p.process(_process_fn(arg))
    if kind == "aggregate":
        aggs = [_declarative(item) for item in arg]
        return p.aggregate(*aggs, process_fn=process) if process else p.aggregate(*aggs)
    if kind == "aggregate_fn":
        agg = AGGREGATE_FUNCTIONS[arg]()
        return p.aggregate(agg, process) if process else p.aggregate(agg)
    if kind == "reduce":
        return p.reduce(REDUCERS[arg], process) if process else p.reduce(REDUCERS[arg])
    if kind == "fold":
        initial, fn = FOLDS[arg]
        return p.fold(initial, fn)
    if kind == "apply":
        return p.apply(WINDOW_FUNCTIONS[arg])
    raise TranscriptError(f"unknown function {kind!r}")


def build_watermark_strategy(spec: Any) -> Any:
    if spec is None:
        return None
    kind, arg, _ = _one(spec, "watermark strategy")
    if kind == "monotonous":
        return wl.MonotonousTimestamps()
    if kind == "bounded_out_of_orderness":
        return wl.BoundedOutOfOrderness(dur_ms(arg))
    if kind == "processing_time_lag":
        return wl.ProcessingTimeLag(dur_ms(arg))
    raise TranscriptError(f"unknown watermark strategy {kind!r}")


def build_pipeline(doc: dict) -> Any:
    """The ``wl.Pipeline`` a document describes (raises whatever the public API raises)."""
    p = wl.Pipeline(doc["name"], timestamp="ts")
    if "count_window" in doc:
        cw = doc["count_window"]
        size, slide = (cw, None) if isinstance(cw, int) else (cw["size"], cw.get("slide"))
        p = p.key_by(*key_columns(doc))
        p = p.count_window(size) if slide is None else p.count_window(size, slide)
    elif doc.get("window_all"):
        p = p.window_all(build_assigner(doc["assigner"]))
    else:
        p = p.key_by(*key_columns(doc)).window(build_assigner(doc["assigner"]))
    if doc.get("trigger") is not None:
        p = p.trigger(build_trigger(doc["trigger"]))
    if doc.get("evictor") is not None:
        p = p.evictor(build_evictor(doc["evictor"]))
    if doc.get("allowed_lateness") is not None:
        p = p.allowed_lateness(dur_ms(doc["allowed_lateness"]))
    if doc.get("accumulation") is not None:
        p = p.accumulation(doc["accumulation"])
    return apply_function(p, doc["function"])


def key_columns(doc: dict) -> list[str]:
    if doc.get("window_all"):
        return []
    return list(doc.get("keys") or ["key"])


# --- steps and expectations ---------------------------------------------------------------------

def _element(item: Any) -> dict:
    if isinstance(item, list):
        if len(item) != 3:
            raise TranscriptError(f"a list element is [key, ts, value], got {item!r}")
        return {"key": item[0], "ts": ts_ms(item[1]), "value": item[2]}
    if isinstance(item, dict):
        row = dict(item)
        row["ts"] = ts_ms(row["ts"])
        return row
    raise TranscriptError(f"bad element {item!r}")


_META = {"window": None, "pane": "pane_index", "timing": "timing", "final": "is_final",
         "retract": "retract"}


@dataclass(frozen=True)
class Firing:
    """One expected firing: its group (key values, window) and the row to compare."""

    group: tuple
    row: dict


def _firing(item: dict, keys: Sequence[str]) -> Firing:
    if not isinstance(item, dict):
        raise TranscriptError(f"a firing is a mapping, got {item!r}")
    for required in ("window", "pane", "timing", "final", *keys):
        if required not in item:
            raise TranscriptError(f"firing {item!r} lacks {required!r}")
    start, end = _window_bounds(item["window"])
    row: dict[str, Any] = {k: item[k] for k in keys}
    row.update(window_start=start, window_end=end, pane_index=item["pane"],
               timing=item["timing"], is_final=item["final"],
               retract=bool(item.get("retract", False)))
    for name, value in item.items():
        if name not in _META and name not in keys:
            row[name] = value
    if row["timing"] not in ("EARLY", "ON_TIME", "LATE"):
        raise TranscriptError(f"bad timing in {item!r}")
    return Firing((tuple(item[k] for k in keys), start, end), row)


@dataclass
class Step:
    """One bundle and what it must emit."""

    bundle: Bundle | None                 # None for the end-of-input step
    expect: list[Firing] = field(default_factory=list)
    late: list[dict] = field(default_factory=list)


@dataclass
class Case:
    """A compiled transcript."""

    file: str
    name: str
    doc: dict
    keys: list[str]
    steps: list[Step]
    finalize: bool
    check_late: bool
    watermark: Any

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"

    @property
    def bundles(self) -> list[Bundle]:
        return [s.bundle for s in self.steps if s.bundle is not None]

    def pipeline(self) -> Any:
        return build_pipeline(self.doc)


_TOP_KEYS = {"name", "why", "keys", "window_all", "assigner", "count_window", "trigger",
             "evictor", "allowed_lateness", "accumulation", "function", "watermark_strategy",
             "steps", "finalize", "build_error"}
_STEP_KEYS = {"input", "processing_time", "watermark", "expect", "late", "note"}


def compile_doc(doc: dict, file: str = "<inline>") -> Case:
    """Check a document against the vocabulary and compile its steps."""
    if not isinstance(doc, dict):
        raise TranscriptError(f"{file}: a document is a mapping")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise TranscriptError(f"{file}::{doc.get('name')}: unknown keys {sorted(unknown)}")
    name = doc.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]+", name):
        raise TranscriptError(f"{file}: bad or missing name {name!r}")
    if "function" not in doc and "build_error" not in doc:
        raise TranscriptError(f"{file}::{name}: no function")
    keys = key_columns(doc)
    steps: list[Step] = []
    check_late = False
    for i, raw in enumerate(doc.get("steps") or []):
        unknown = set(raw) - _STEP_KEYS
        if unknown:
            raise TranscriptError(f"{file}::{name} step {i + 1}: unknown keys {sorted(unknown)}")
        bundle = Bundle(
            elements=[_element(e) for e in raw.get("input") or []],
            processing_time=(None if raw.get("processing_time") is None
                             else ts_ms(raw["processing_time"])),
            watermark=None if raw.get("watermark") is None else ts_ms(raw["watermark"]))
        check_late = check_late or "late" in raw
        steps.append(Step(bundle, [_firing(f, keys) for f in raw.get("expect") or []],
                          [_element(e) for e in raw.get("late") or []]))
    fin = doc.get("finalize", False)
    if isinstance(fin, dict):
        check_late = check_late or "late" in fin
        steps.append(Step(None, [_firing(f, keys) for f in fin.get("expect") or []],
                          [_element(e) for e in fin.get("late") or []]))
    elif fin is True:
        steps.append(Step(None))
    elif fin is not False:
        raise TranscriptError(f"{file}::{name}: finalize is a bool or a mapping")
    if not steps and "build_error" not in doc:
        raise TranscriptError(f"{file}::{name}: no steps")
    return Case(file, name, doc, keys, steps, fin is not False, check_late,
                build_watermark_strategy(doc.get("watermark_strategy")))


def load_cases(directory: Path = HERE) -> list[Case]:
    """Every document of every ``*.yaml`` file in ``directory``, compiled, in file order."""
    cases: list[Case] = []
    for path in sorted(directory.glob("*.yaml")):
        seen: set[str] = set()
        with path.open(encoding="utf-8") as f:
            for doc in yaml.load_all(f, Loader=YamlLoader):
                if doc is None:
                    continue
                case = compile_doc(doc, path.name)
                if case.name in seen:
                    raise TranscriptError(f"{path.name}: duplicate name {case.name!r}")
                seen.add(case.name)
                cases.append(case)
    return cases
