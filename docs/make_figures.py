"""Generate the figures of the docs from real runs of the reference engine.

    .venv/bin/python docs/make_figures.py            # writes docs/img/timeline.{json,svg}
    .venv/bin/python docs/make_figures.py --out DIR  # somewhere else (the docs test does this)

Invariants: the data of a figure comes only from running the reference engine (nothing is
hand-drawn); the JSON next to each SVG is exactly the data the chart was drawn from; the SVG is
rendered offline by vl-convert (no CDN, no network). ``tests/docs/test_figures.py`` regenerates
both into a temporary folder and fails when the committed files differ.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import windowlib as wl
from windowlib.engines.reference import ReferenceEngine

MINUTE = 60_000
HERE = Path(__file__).resolve().parent

# (processing minute of the bundle, [event minutes of its elements, in arrival order])
ARRIVALS: list[tuple[float, list[float]]] = [
    (1, [0.5]), (2, [1.2, 1.8]), (4, [3.4]), (5, [4.9]), (6, [6.0, 5.1]), (8, [7.5]),
    (10, [9.0]), (12, [11.0]), (13, [12.5]), (14, [8.2]), (16, [15.0]), (18, [22.5]),
    (19, [4.0]),
]
WINDOW = (0, 10 * MINUTE)          # the window whose firings the figure shows
LATENESS_MIN = 10


def timeline_pipeline() -> wl.Pipeline:
    """Tumbling 10 min, early firing every 3 elements, ON_TIME, LATE per late element."""
    return (wl.Pipeline("timeline", timestamp="ts").key_by("sensor")
            .window(wl.TumblingEventTimeWindows.of(wl.Time.minutes(10)))
            .trigger(wl.EventTimeTrigger.after_end_of_window()
                     .with_early_trigger(wl.CountTrigger.at_least(3)))
            .allowed_lateness(wl.Time.minutes(LATENESS_MIN))
            .aggregate(wl.aggregates.count()))


def timeline_data() -> dict[str, Any]:
    """Run the pipeline over ``ARRIVALS`` bundle by bundle and record what the figure shows:
    every element (arrival, event time, status), the watermark after every bundle, and the
    firings of ``WINDOW`` with the processing time of the bundle that caused them."""
    engine = ReferenceEngine(timeline_pipeline(),
                             watermark=wl.BoundedOutOfOrderness(wl.Time.minutes(2)))
    elements, watermarks, firings = [], [], []
    for p_min, events in ARRIVALS:
        late_before, fired_before = len(engine.sink.late), len(engine.sink.firings)
        rows = [{"sensor": "s1", "ts": round(e * MINUTE), "n": i} for i, e in enumerate(events)]
        engine.process_bundle(rows, processing_time=round(p_min * MINUTE))
        dropped = {row["n"] for row, _ in engine.sink.late[late_before:]}
        for row in rows:
            in_window = WINDOW[0] <= row["ts"] < WINDOW[1]
            status = ("dropped (too late)" if row["n"] in dropped
                      else "in the window" if in_window else "other windows")
            elements.append({"processing_min": p_min, "event_min": row["ts"] / MINUTE,
                             "status": status})
        watermarks.append({"processing_min": p_min,
                           "watermark_min": engine.clock.watermark / MINUTE})
        for f in engine.sink.firings[fired_before:]:
            if (f["window_start"], f["window_end"]) == WINDOW:
                firings.append({"processing_min": p_min, "pane_index": f["pane_index"],
                                "timing": f["timing"], "count": f["count"],
                                "label": f"#{f['pane_index']} {f['timing']} ({f['count']})"})
    return {"window_min": [WINDOW[0] / MINUTE, WINDOW[1] / MINUTE],
            "cleanup_watermark_min": WINDOW[1] / MINUTE + LATENESS_MIN,
            "elements": elements, "watermarks": watermarks, "firings": firings}


def timeline_chart(data: dict[str, Any]) -> Any:
    """The Vega-Lite chart (altair) of ``timeline_data()``."""
    import altair as alt

    x = alt.X("processing_min:Q", title="processing time (minutes; one bundle per dot column)",
              scale=alt.Scale(domain=[0, 20]))
    y_scale = alt.Scale(domain=[-2, 24])
    start, end = data["window_min"]
    band = alt.Chart(alt.Data(values=[{"y": start, "y2": end}])).mark_rect(
        color="#dfe8f3", opacity=0.7).encode(y=alt.Y("y:Q", scale=y_scale), y2="y2:Q")
    bounds = alt.Chart(alt.Data(values=[
        {"y": end, "what": "window end"},
        {"y": data["cleanup_watermark_min"], "what": "cleanup"}])).mark_rule(
        strokeDash=[2, 3], color="#555").encode(y=alt.Y("y:Q", scale=y_scale))
    bound_text = alt.Chart(alt.Data(values=[
        {"y": end, "what": "window end"},
        {"y": data["cleanup_watermark_min"], "what": "end + allowed lateness"}])
    ).mark_text(align="left", dx=6, color="#555").encode(
        x=alt.value(640), y=alt.Y("y:Q", scale=y_scale), text="what:N")
    watermark = alt.Chart(alt.Data(values=data["watermarks"])).mark_line(
        interpolate="step-after", color="#8e24aa", clip=True).encode(
        x=x, y=alt.Y("watermark_min:Q", scale=y_scale, title="event time (minutes)"))
    points = alt.Chart(alt.Data(values=data["elements"])).mark_point(
        filled=True, size=70).encode(
        x=x, y=alt.Y("event_min:Q", scale=y_scale),
        color=alt.Color("status:N", title="element", scale=alt.Scale(
            domain=["in the window", "other windows", "dropped (too late)"],
            range=["#1565c0", "#b0b0b0", "#d32f2f"])))
    colors = alt.Scale(domain=["EARLY", "ON_TIME", "LATE"],
                       range=["#7aa6d6", "#2e7d32", "#e08a1e"])
    fire_rules = alt.Chart(alt.Data(values=data["firings"])).mark_rule(
        strokeWidth=2).encode(x=x, color=alt.Color("timing:N", title="firing", scale=colors))
    fire_text = alt.Chart(alt.Data(values=data["firings"])).mark_text(
        angle=270, align="right", baseline="bottom", dx=-4, dy=-7, fontSize=11).encode(
        x=x, y=alt.value(4), text="label:N",
        color=alt.Color("timing:N", scale=colors, legend=None))
    wm_label = alt.Chart(alt.Data(values=data["watermarks"][-3:-2])).mark_text(
        align="left", dx=4, dy=-8, color="#8e24aa").encode(
        x=x, y=alt.Y("watermark_min:Q", scale=y_scale), text=alt.value("watermark"))
    return (band + bounds + bound_text + watermark + wm_label + fire_rules + points + fire_text
            ).properties(width=640, height=380,
                         title="One window [0, 10 min): EARLY, ON_TIME and LATE firings"
                         ).resolve_scale(color="independent").configure_legend(orient="bottom")


def render(out_dir: Path) -> list[Path]:
    """Write ``timeline.json`` and ``timeline.svg`` into ``out_dir``; return their paths."""
    import vl_convert as vlc

    out_dir.mkdir(parents=True, exist_ok=True)
    data = timeline_data()
    json_path, svg_path = out_dir / "timeline.json", out_dir / "timeline.svg"
    json_path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    svg_path.write_text(vlc.vegalite_to_svg(timeline_chart(data).to_dict()))
    return [json_path, svg_path]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "img", help="output folder")
    for path in render(parser.parse_args(argv).out):
        print(path)


if __name__ == "__main__":
    main()
