"""`make demo`: the main job on the embedded defaults.

The full demo (NYC flights 2013 through the Airflow DAGs, issue 6) is not built yet. Until it
lands this runs a small, real windowing example on the reference engine so that `make demo`
shows what the library does.
"""

from __future__ import annotations

import windowlib as wl
from windowlib.testing import Bundle, run_bundles


def main() -> None:
    print("demo not built yet: the NYC-flights demo through Airflow lands with issue 6.")
    print("Meanwhile, a 5-minute tumbling window with early and late firings:\n")
    p = (wl.Pipeline("demo", timestamp="ts").key_by("key")
         .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(5)))
         .trigger(wl.EventTimeTrigger.after_end_of_window()
                  .with_early_trigger(wl.CountTrigger.at_least(2)))
         .allowed_lateness(wl.Time.minutes(10))
         .aggregate(wl.aggregates.sum("value").alias("total"), wl.aggregates.count()))
    bundles = [
        Bundle([{"key": "a", "ts": 1_000, "value": 1}, {"key": "a", "ts": 2_000, "value": 2}]),
        Bundle([], watermark=400_000),
        Bundle([{"key": "a", "ts": 3_000, "value": 5}]),
        Bundle([{"key": "a", "ts": 4_000, "value": 7}], watermark=1_000_000),
    ]
    firings, late = run_bundles(p, bundles, finalize=True, with_late=True)
    print(f"{'key':4} {'window':>16} {'pane':>4} {'timing':8} {'total':>5} {'count':>5}")
    for f in firings:
        window = f"[{f['window_start']}, {f['window_end']})"
        print(f"{f['key']:4} {window:>16} {f['pane_index']:>4} {f['timing']:8} "
              f"{f['total']:>5} {f['count']:>5}")
    print(f"\nlate (dropped) elements: {late}")


if __name__ == "__main__":
    main()
