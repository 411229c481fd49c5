"""Differential properties: the Spark engine equals the reference engine on random pipelines
and random bundles (issue 3, "Proof of equality"). Each pipeline takes the path the planner
chooses — mostly the general path; the native and pane paths where they apply (the pane path
has its own property in ``test_pane_path.py``).

One generated example = one random pipeline (``strategies.pipelines(wide=True)``: tumbling,
sliding and session windows in event and processing time, global and count windows; classic
and FLIP-9 triggers incl. All/Any/early/late; the three accumulation modes; lateness; evictors;
declarative aggregates, reduce, aggregate, process with the pane context, apply) run over
random bundles of up to six keys (out-of-order and late rows, explicit processing times and
watermarks, empty bundles, bad rows), a random watermark strategy, finalized or not.
``run_bundles(engine="spark")`` must equal ``run_bundles(engine="reference")``:

- firings: the same rows in the same order per key (SPEC §9 promises the order per key and
  window; both engines also order keys alike), and the same multiset overall;
- late records and rejects: equal lists;
- a run the reference engine refuses must fail on Spark with the same error class and code.

Cost: each example is one Spark run (two small jobs, ~0.3-1 s warm), so an example carries
several keys instead of one; examples run in one shared SparkSession. The number of examples
is ``SPARK_EXAMPLES``: 150 when ``CI`` is set (the "ci" profile), 25 otherwise;
``WINDOWLIB_SPARK_EXAMPLES`` overrides it.
"""

from __future__ import annotations

import sys

import pytest
import strategies
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from spark_session import ship_by_value, spark_examples

import windowlib as wl
from windowlib.core.errors import WindowlibError
from windowlib.testing import run_bundles

pytestmark = pytest.mark.spark

ship_by_value(strategies, sys.modules[__name__])

SPARK_EXAMPLES = spark_examples(ci=150, local=25)
SPARK_SETTINGS = settings(max_examples=SPARK_EXAMPLES, deadline=None, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])

WATERMARKS = [None, wl.BoundedOutOfOrderness(5), wl.MonotonousTimestamps(),
              wl.ProcessingTimeLag(20)]


def _outcome(p: wl.Pipeline, bundles: list, engine: str, **kwargs) -> tuple:
    try:
        return "ok", run_bundles(p, bundles, engine=engine, with_late=True, with_rejects=True,
                                 **kwargs)
    except WindowlibError as exc:
        return "error", (type(exc).__name__, exc.code)


def _canonical(row: dict) -> str:
    return repr(sorted(row.items()))


def assert_spark_equals_reference(p: wl.Pipeline, bundles: list, **kwargs) -> tuple:
    """Run both engines and assert equal outputs; returns the reference outcome."""
    ref = _outcome(p, bundles, "reference", **kwargs)
    got = _outcome(p, bundles, "spark", **kwargs)
    if ref[0] == "error" or got[0] == "error":
        assert got == ref, "both engines must accept the run, or fail with the same error"
        return ref
    (rf, rl, rr), (gf, gl, gr) = ref[1], got[1]
    assert strategies.per_key(p, gf) == strategies.per_key(p, rf), "firings per key, in order"
    # a row's repr names its fields in order; equal rows may list them in another order
    assert sorted(map(_canonical, gf)) == sorted(map(_canonical, rf)), "firings (multiset)"
    assert gl == rl, "late records"
    assert gr == rr, "rejects"
    return ref


@SPARK_SETTINGS
@given(p=strategies.pipelines(wide=True), data=st.data())
def test_spark_general_path_equals_reference_on_random_pipelines(spark, p, data):
    needs_pt = not p.window_assigner.is_event_time
    bundles = data.draw(strategies.bundle_lists(processing_time=needs_pt,
                                                keys=strategies.MANY_KEYS, max_rows=12),
                        label="bundles")
    finalize = data.draw(st.booleans(), label="finalize")
    watermark = data.draw(st.sampled_from(WATERMARKS), label="watermark")
    outcome = assert_spark_equals_reference(p, bundles, finalize=finalize, watermark=watermark)
    # coverage, shown by --hypothesis-show-statistics
    event(f"assigner {type(p.window_assigner).__name__}")
    event(f"function {p.function.kind}{'+process' if p.function.process_fn else ''}")
    if outcome[0] == "error":
        event(f"both engines refuse: {outcome[1][1]}")
        return
    firings, late, rejects = outcome[1]
    event("fires" if firings else "fires nothing")
    for timing in sorted({f["timing"] for f in firings}):
        event(f"timing {timing}")
    if any(f.get("retract") for f in firings):
        event("retractions")
    if late:
        event("late records")
    if rejects:
        event("rejects")
