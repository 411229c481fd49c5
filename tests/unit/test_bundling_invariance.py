"""Results do not depend on how arrival is cut into bundles — exactly where SPEC §1 says so.

SPEC §1's event loop for a bundle: (1) processing time advances and processing-time timers
fire; (2) the elements are processed in order against the watermark *before* the bundle
(``W_{b-1}``: lateness, EventTimeTrigger's "late element fires at once"); (3) the watermark
advances to ``W_b`` and event-time timers ``t <= W_b`` fire; (4) cleanup. From this:

* Elements never see a watermark the bundle itself sets, so cutting a bundle in two leaves every
  element's view unchanged *if the first part does not move the watermark* (it carries
  ``W_{b-1}`` explicitly) and both parts share the processing time. What can still differ is
  *when timers fire relative to elements*: a timer that is already due when it is registered
  fires at the end of the part that registered it. Triggers whose event-time timers sit only at
  window ends and cleanup times are registered for windows that are not yet past the watermark,
  so they are never due on registration; count, delta and purging triggers act per element and
  depend only on order. For these the split is invariant. For ``after_first_element`` and
  ``ContinuousEventTimeTrigger`` it is not (pinned by an example below).
* An empty bundle that moves no clock does nothing: every event-time timer ``<= W`` already
  fired in step 3 of the bundle before, whatever trigger set it. (Processing-time timers are
  the exception: one registered at ``<= P`` during step 2 waits for the next bundle's step 1,
  so appending an empty bundle can fire it — hence event-time triggers only.)
* Reaching ``W_b`` in two steps (an intermediate watermark on the bundle, then an empty bundle
  with ``W_b``) fires the same timers in the same order per key: each key fires its timers in
  ascending time either way, a timer-caused firing's timing depends on the timer's time, not on
  where the watermark stopped, and no element arrives in between.

Firings are compared per key, in order (SPEC §9's promise); late records and rejects as lists.
Every bundle list also covers watermark-strategy bundles (``watermark=None``), processing
times, negative timestamps, bad rows, all accumulation modes, evictors and functions.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import bundle_lists, pipelines
from test_snapshot_restore import EXAMPLES, feed, outputs, per_key

import windowlib as wl
from windowlib import aggregates as agg
from windowlib.core.time import MIN_TS
from windowlib.engines.reference import ReferenceEngine
from windowlib.testing import Bundle

pytestmark = pytest.mark.unit


def run(p: wl.Pipeline, bundles: list[Bundle], finalize: bool) -> ReferenceEngine:
    engine = feed(ReferenceEngine(p), bundles)
    if finalize:
        engine.finish()
    return engine


def watermark_after(p: wl.Pipeline, bundles: list[Bundle]) -> int:
    """Where the watermark stands after ``bundles`` (``MIN_TS`` before any)."""
    return feed(ReferenceEngine(p), bundles).clock.watermark


def assert_same_outputs(p: wl.Pipeline, a: ReferenceEngine, b: ReferenceEngine) -> None:
    (fa, la, ra), (fb, lb, rb) = outputs(a), outputs(b)
    assert per_key(p, fb) == per_key(p, fa)
    assert len(fb) == len(fa)
    assert lb == la, "late records (row, watermark met)"
    assert rb == ra, "rejects"


@EXAMPLES
@given(p=pipelines(processing_time=False, timers="window_end"), data=st.data())
def test_cutting_a_bundle_in_two_whose_first_part_keeps_the_watermark_changes_nothing(p, data):
    """Bundle b = (E, P, W) becomes (E[:cut], P, W_{b-1}) then (E[cut:], P, W). Holds for
    event-time triggers whose timers are at window ends/cleanup, and count/delta/purging."""
    bundles = data.draw(bundle_lists(), label="bundles")
    b = data.draw(st.integers(0, len(bundles) - 1), label="b")
    n = len(bundles[b].elements)
    # interior cuts; a cut at either end is an empty bundle (see the next two properties)
    cut = data.draw(st.integers(1, n - 1) if n >= 2 else st.integers(0, n), label="cut")
    finalize = data.draw(st.booleans(), label="finalize")
    whole = bundles[b]
    split = [*bundles[:b],
             Bundle(whole.elements[:cut], whole.processing_time, watermark_after(p, bundles[:b])),
             Bundle(whole.elements[cut:], whole.processing_time, whole.watermark),
             *bundles[b + 1:]]
    assert_same_outputs(p, run(p, bundles, finalize), run(p, split, finalize))


@EXAMPLES
@given(p=pipelines(processing_time=False, timers="event"), data=st.data())
def test_an_empty_bundle_that_moves_no_clock_changes_nothing(p, data):
    """Inserted anywhere (also first or last), with ``watermark=W`` and the current or no
    processing time. Holds for every event-time trigger, continuous and after-first-element
    included."""
    bundles = data.draw(bundle_lists(), label="bundles")
    i = data.draw(st.integers(0, len(bundles)), label="i")
    finalize = data.draw(st.booleans(), label="finalize")
    prefix = feed(ReferenceEngine(p), bundles[:i])
    p_time = data.draw(st.sampled_from([None, prefix.clock.processing_time]), label="P")
    padded = [*bundles[:i], Bundle((), p_time, prefix.clock.watermark), *bundles[i:]]
    assert_same_outputs(p, run(p, bundles, finalize), run(p, padded, finalize))


@EXAMPLES
@given(p=pipelines(processing_time=False, timers="event"), data=st.data())
def test_advancing_the_watermark_in_two_steps_fires_the_same_panes(p, data):
    """Bundle b = (E, P, W) becomes (E, P, W') then an empty bundle with W, for any
    ``W_{b-1} <= W' <= W_b``. Holds for every event-time trigger."""
    bundles = data.draw(bundle_lists(), label="bundles")
    b = data.draw(st.integers(0, len(bundles) - 1), label="b")
    finalize = data.draw(st.booleans(), label="finalize")
    before = watermark_after(p, bundles[:b])
    after = watermark_after(p, bundles[:b + 1])
    low = before if before != MIN_TS else min(after, -100)
    midway = data.draw(st.integers(low, after) if after != MIN_TS else st.just(MIN_TS),
                       label="midway")
    whole = bundles[b]
    stepped = [*bundles[:b], Bundle(whole.elements, whole.processing_time, midway),
               Bundle((), None, after), *bundles[b + 1:]]
    assert_same_outputs(p, run(p, bundles, finalize), run(p, stepped, finalize))


# --- where SPEC §1 makes bundling visible ------------------------------------------------------

def test_cutting_a_bundle_shows_when_an_early_timer_is_already_due_on_registration():
    """after_first_element(0) registers a timer at the element's own time. With the watermark
    already past it, the timer fires at the end of the bundle that registered it: one early
    pane for the whole bundle, or one per part when the bundle is cut."""
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(100))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_early_trigger(wl.EventTimeTrigger.after_first_element(0)))
         .aggregate(agg.count()))
    start = Bundle([], watermark=50)
    rows = [{"key": "a", "ts": 10}, {"key": "a", "ts": 20}]

    def panes(bundles: list[Bundle]) -> list[tuple]:
        return [(r["pane_index"], r["timing"], r["count"])
                for r in run(p, bundles, finalize=False).sink.firings]

    assert panes([start, Bundle(rows, watermark=50)]) == [(0, "EARLY", 2)]
    assert panes([start, Bundle(rows[:1], watermark=50), Bundle(rows[1:], watermark=50)]) == \
        [(0, "EARLY", 1), (1, "EARLY", 2)]


def test_cutting_a_bundle_that_moves_the_watermark_in_both_parts_changes_lateness():
    """The second part's elements see the first part's watermark: an element that was on time
    in the whole bundle is late (and dropped with lateness 0) when the cut moves the watermark
    early. This is why the invariant above keeps W_{b-1} on the first part."""
    p = (wl.Pipeline("p", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count()))
    rows = [{"key": "a", "ts": 25}, {"key": "a", "ts": 5}]
    whole = run(p, [Bundle(rows)], finalize=True)
    cut = run(p, [Bundle(rows[:1]), Bundle(rows[1:])], finalize=True)
    assert [(r["window_start"], r["count"]) for r in whole.sink.firings] == [(0, 1), (20, 1)]
    assert [(r["window_start"], r["count"]) for r in cut.sink.firings] == [(20, 1)]
    assert [(row["ts"], met) for row, met in cut.sink.late] == [(5, 24)]
