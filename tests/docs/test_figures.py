"""The docs' figure is generated from a real reference-engine run and is up to date: the script
regenerates it into a temporary folder and both files must equal the committed ones."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[2] / "docs"


def load_make_figures():
    spec = importlib.util.spec_from_file_location("make_figures", DOCS / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_timeline_figure_is_up_to_date(tmp_path):
    paths = load_make_figures().render(tmp_path)
    assert [p.name for p in paths] == ["timeline.json", "timeline.svg"]
    for fresh in paths:
        committed = DOCS / "img" / fresh.name
        assert committed.read_text() == fresh.read_text(), (
            f"docs/img/{fresh.name} is stale: run .venv/bin/python docs/make_figures.py")


def test_timeline_shows_every_timing_and_a_dropped_element():
    data = load_make_figures().timeline_data()
    assert [f["timing"] for f in data["firings"]] == ["EARLY", "EARLY", "EARLY", "ON_TIME",
                                                      "LATE"]
    assert [f["pane_index"] for f in data["firings"]] == list(range(5))
    assert [e["status"] for e in data["elements"]].count("dropped (too late)") == 1
    marks = [w["watermark_min"] for w in data["watermarks"]]
    assert marks == sorted(marks), "the watermark never moves backwards"
