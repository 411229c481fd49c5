"""Reference-engine throughput: a tumbling-window sum with the default trigger, on one core.

Prints elements/s for the reference engine and, as a same-process baseline, a hand-written
dict-based tumbling sum over the same elements (the ratio shows the cost of the full model:
triggers, timers, lateness, pane metadata). Goal (issues 2 and 16): >= 200,000 elements/s.
Issue 16's row is ``--elements 200000 --keys 1000 --run-bundles`` (through
``windowlib.testing.run_bundles``, finalized). The CPU time of the engine is printed too: on a
shared machine it moves less than wall time.

    .venv/bin/python benchmarks/reference_engine.py [--elements N] [--keys K] [--run-bundles]
"""

from __future__ import annotations

import argparse
import random
import time

import windowlib as wl
from windowlib.engines.reference import ReferenceEngine


def make_bundles(n: int, keys: int, per_bundle: int, seed: int = 7) -> list[list[dict]]:
    rng = random.Random(seed)
    bundles, ts = [], 0
    for start in range(0, n, per_bundle):
        rows = []
        for _ in range(min(per_bundle, n - start)):
            ts += rng.randint(0, 20)
            rows.append({"key": f"k{rng.randrange(keys)}", "ts": ts - rng.randint(0, 2_000),
                         "value": rng.randint(1, 100)})
        bundles.append(rows)
    return bundles


def bench_pipeline() -> wl.Pipeline:
    return (wl.Pipeline("bench", timestamp="ts").key_by("key")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(1)))
            .aggregate(wl.aggregates.sum("value")))


CPU: list[float] = []   # CPU seconds of each engine run (process time)


def run_engine(bundles: list[list[dict]]) -> tuple[float, int]:
    engine = ReferenceEngine(bench_pipeline(), watermark=wl.BoundedOutOfOrderness(1_000))
    t0, c0 = time.perf_counter(), time.process_time()
    for rows in bundles:
        engine.process_bundle(rows)
    engine.finish()
    CPU.append(time.process_time() - c0)
    return time.perf_counter() - t0, len(engine.sink.firings)


def run_via_run_bundles(bundles: list[list[dict]]) -> tuple[float, int]:
    """The same through ``windowlib.testing.run_bundles`` (finalized), as users call it."""
    from windowlib.testing import Bundle, run_bundles

    given = [Bundle(rows) for rows in bundles]
    t0, c0 = time.perf_counter(), time.process_time()
    firings = run_bundles(bench_pipeline(), given, finalize=True,
                          watermark=wl.BoundedOutOfOrderness(1_000))
    CPU.append(time.process_time() - c0)
    return time.perf_counter() - t0, len(firings)


def run_baseline(bundles: list[list[dict]]) -> tuple[float, int]:
    """Hand-written tumbling sum: no triggers, timers or lateness."""
    size = 60_000
    t0 = time.perf_counter()
    sums: dict[tuple[str, int], int] = {}
    for rows in bundles:
        for r in rows:
            ts = r["ts"]
            k = (r["key"], ts - ts % size)
            sums[k] = sums.get(k, 0) + r["value"]
    return time.perf_counter() - t0, len(sums)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--per-bundle", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--run-bundles", action="store_true",
                    help="time windowlib.testing.run_bundles instead of ReferenceEngine")
    args = ap.parse_args()
    bundles = make_bundles(args.elements, args.keys, args.per_bundle)
    run = run_via_run_bundles if args.run_bundles else run_engine
    engine_times, base_times = [], []
    for _ in range(args.repeat):
        t, firings = run(bundles)
        engine_times.append(t)
        b, windows = run_baseline(bundles)
        base_times.append(b)
    t, b = min(engine_times), min(base_times)
    print(f"elements: {args.elements:,}  keys: {args.keys:,}  bundles: {len(bundles)}")
    label = "run_bundles      " if args.run_bundles else "reference engine "
    print(f"{label}: {args.elements / t:>12,.0f} elements/s  ({t:.2f} s, "
          f"{firings:,} firings; CPU {min(CPU):.2f} s = "
          f"{args.elements / min(CPU):,.0f} elements per CPU-second)")
    print(f"hand-written sum : {args.elements / b:>12,.0f} elements/s  ({b:.2f} s, "
          f"{windows:,} windows)")
    print(f"ratio (engine time / hand-written time): {t / b:.1f}x")
    print(f"goal >= 200,000 elements/s: {'met' if args.elements / t >= 200_000 else 'NOT met'}")


if __name__ == "__main__":
    main()
