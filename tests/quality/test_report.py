"""The run report: charts present as inline SVG, no external reference of any kind, well-formed
structure, escaped values; rendered in headless Chromium when it is installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from windowlib.core.errors import DefinitionError
from windowlib.quality.report import write_run_report

pytestmark = pytest.mark.unit

VOID = {"meta", "br", "img", "link", "input", "hr", "col", "source", "wbr", "area", "base"}


def history() -> list[dict]:
    runs = []
    for i in range(5):
        early, on_time, late = 40 + 5 * i, 12 + i, 3 * i
        runs.append({
            "pipeline": "flights_delay", "run_id": f"scheduled__2013-01-01T0{i}", "version": i + 1,
            "generation": 1, "started_at": f"2013-01-01T0{i}:05:00Z",
            "finished_at": f"2013-01-01T0{i}:05:21Z", "watermark": f"2013-01-01T0{i}:00:00Z",
            "processing_time": f"2013-01-01T0{i + 1}:00:00Z", "inputs": 1000 + i,
            "processed": 990, "late": 7 + i, "rejects": 3 + 0 * i,
            "firings": early + on_time + late,
            "firings_by_timing": {"EARLY": early, "ON_TIME": on_time, "LATE": late},
            "retractions": 0, "files_consumed": 2, "state_rows": 5000 + 700 * i,
            "state_bytes": (3 + i) * 2**20,
            "lateness_histogram": [["<1h", 5], ["1-6h", i], ["6-24h", 1], [">1d", 0]],
            "validation": {"success": i != 3,
                           "failed": [] if i != 3 else ["pane_unique [...]: 4 unexpected <b>"],
                           "data_docs": f"/data/gx/run{i}/index.html"},
            "published": i != 3, "publish_on_failure": False})
    return runs


class Structure(HTMLParser):
    """Checks that every non-void element is closed in order and collects tags/attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "flights_delay" / "report.html"
    out = write_run_report("flights_delay", history(), path,
                           description="Mean departure delay per origin, 1 h tumbling windows")
    return out, out.read_text(encoding="utf-8")


def test_report_has_four_inline_svg_charts_and_a_header(report):
    path, text = report
    assert path.name == "report.html"
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("<svg") == 4
    assert "Mean departure delay per origin" in text
    assert "last version: 5" in text and "last watermark: 2013-01-01T04:00:00Z" in text
    for caption in ("Firings by timing per run", "Late and rejected elements per run",
                    "Lateness of dropped elements", "State size over runs"):
        assert caption in text
    # the stacked-bar chart shows the three timings and every run label
    assert all(t in text for t in ("EARLY", "ON_TIME", "LATE"))
    assert all(f">v{i}<" in text for i in range(1, 6))


def test_report_is_self_contained(report):
    _, text = report
    assert "http://" not in text and "https://" not in text and "//cdn" not in text
    parser = Structure()
    parser.feed(text)
    assert parser.errors == [] and parser.stack == []
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    for name, value in parser.attrs:
        if name in ("src", "href", "xlink:href"):
            assert not re.match(r"[a-z]+:", value or ""), (name, value)


def test_validation_table_shows_status_and_escapes_messages(report):
    _, text = report
    assert text.count("<span class=ok>passed</span>") == 4
    assert text.count("<span class=fail>failed</span>") == 1
    assert "4 unexpected &lt;b&gt;" in text and "unexpected <b>" not in text
    assert "/data/gx/run3/index.html" in text


def test_validation_off_and_not_run_are_told_apart_from_passed():
    from windowlib.quality.report import render_report

    runs = history()[:3]
    runs[0]["validation"] = None                                           # never validated
    runs[1]["validation"] = {"success": True, "failed": [],                # the old "skipped"
                             "skipped": "great_expectations not installed"}
    runs[2]["validation"] = {"success": True, "status": "off", "failed": []}   # turned off
    text = render_report("flights_delay", runs)
    assert text.count("<span class=off>off</span>") == 1
    assert text.count("<td>not run</td>") == 2 and "class=ok" not in text.split("<table>")[1]
    assert "last validation: off" in text


def test_empty_history_and_bad_names(tmp_path):
    text = write_run_report("p1", [], tmp_path / "r.html").read_text()
    assert "No runs yet." in text and "<svg" not in text
    with pytest.raises(DefinitionError):
        write_run_report("../etc", [], tmp_path / "x.html")
    with pytest.raises(DefinitionError):
        write_run_report("p1", [], tmp_path / ".." / "x.html")


def test_report_renders_in_headless_chromium(report, tmp_path):
    browser = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else \
        shutil.which("chromium")
    if browser is None:
        pytest.skip("headless Chromium is not installed (/usr/bin/chromium missing)")
    path, _ = report
    shot = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", "--window-size=1200,1800", path.as_uri()],
                   check=True, timeout=120, capture_output=True)
    assert shot.exists() and shot.stat().st_size > 10_000


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def test_report_fits_the_viewport_and_links_each_run_to_its_validation(tmp_path):
    """The validation table used to overflow the page (long run ids in unbreakable cells) and
    named the Data Docs index as text; now it fits a narrow window and each run links to the
    Data Docs pages of its own validation (checked in headless Chromium)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("headless Chromium is not installed (/usr/bin/chromium missing)")
    root = tmp_path / "lake"
    runs = history()
    for i, run in enumerate(runs):
        run["run_id"] = f"windowlib_flights_delay:scheduled__2013-01-01T0{i}:00:00+00:00" * 2
        pages = {}
        for frame in ("firings", "windows", "run"):
            page = (root / "_windowlib" / "quality" / "flights_delay" / "validations" /
                    f"flights_delay.{frame}" / run["run_id"][:60] / f"{frame}.html")
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(f"<title>{frame} of run {i}</title>")
            pages[frame] = str(page)
        run["validation"]["data_docs_pages"] = pages
    runs[3]["validation"]["failed"] = ["pane_unique:" + "x" * 200]
    out = write_run_report("flights_delay", runs,
                           root / "_windowlib" / "reports" / "flights_delay.html")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_FLAGS)
        try:
            for width in (1280, 800):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(out.as_uri())
                box = page.locator("table").bounding_box()
                assert box is not None and box["x"] >= 0
                assert box["x"] + box["width"] <= width, (width, box)
                assert page.evaluate("document.documentElement.scrollWidth") <= width
            row = page.locator("tr").filter(
                has=page.locator("td:first-child", has_text=re.compile(r"^v4$")))
            row.get_by_role("link", name="firings").click()
            page.wait_for_load_state()
            assert page.title() == "firings of run 3"
        finally:
            browser.close()
