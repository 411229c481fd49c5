"""The windowlib run report: one self-contained HTML page per pipeline, from its run history.

``write_run_report(pipeline_name, history, path)`` draws, with altair, firings by timing per run
(stacked bars), late and rejected counts per run, the lateness distribution (summed over the
history's ``lateness_histogram``), state rows and bytes over runs, and a table of validation
status per run (``runs.summary.validation_status``: passed, failed — or failed and published by
override —, off when the caller turned validation off, not run), under a header with the
pipeline's description, last watermark, version and validation status.

Invariants:

* Rendered from Jinja2 templates shipped as package data (``templates/report.html.j2`` and
  ``templates/report.css``) with autoescaping on: every value from a summary is HTML-escaped
  (only the charts' SVG, produced by vl-convert, goes in as markup); a missing field renders as
  empty, never raises, so a partial history still gives a report.
* Self-contained: charts are rendered to inline SVG by ``vl-convert`` (no JavaScript, no fonts,
  no images, no CDN); the page contains no ``http://``/``https://`` reference at all (the SVG
  namespace declarations, implied for inline SVG in HTML5, are dropped).
* Fits the page: charts scale down, the validation table takes the page's width and wraps long
  run ids and messages (a narrow window scrolls the table, never the page).
* Each run links to its own validation: the Data Docs pages of that run (one per validated
  frame; ``ValidationOutcome.data_docs_pages``), or the site's index for runs recorded before
  pages were; links are relative to the report's folder.
* History entries are ``RunSummary.to_dict()`` dicts, oldest first; they are not mutated.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from windowlib.core.errors import DefinitionError
from windowlib.runs.summary import validation_status

TIMING_ORDER = ("EARLY", "ON_TIME", "LATE")
_COLORS = {"EARLY": "#7aa6d6", "ON_TIME": "#2e7d32", "LATE": "#e08a1e"}
TEMPLATES = Path(__file__).resolve().parent / "templates"
# the order of a run's Data Docs links ("run": a frame validated by earlier versions)
_FRAMES = ("firings", "windows", "run")


def write_run_report(pipeline_name: str, history: Sequence[Mapping[str, Any]],
                     path: str | os.PathLike[str], *, description: str | None = None) -> Path:
    """Write the report for ``pipeline_name`` to ``path`` (a file); returns its path.

    ``history``: run summaries, oldest first (may be empty). ``description``: text for the
    header (e.g. the pipeline's ``explain()`` or docs); defaults to the last run's
    ``description`` field when present. Links to Data Docs pages are relative to ``path``'s
    folder (the report and the site move together under a root).
    """
    if not isinstance(pipeline_name, str) or not re.fullmatch(r"[a-z0-9_]+", pipeline_name):
        raise DefinitionError(f"pipeline name must match [a-z0-9_]+, got {pipeline_name!r}",
                              code="ARGUMENT_INVALID")
    target = Path(os.fspath(path))
    if ".." in target.parts:
        raise DefinitionError(f"report path must not contain '..', got {str(target)!r}",
                              code="ARGUMENT_INVALID")
    runs = [dict(r) for r in history]
    page = render_report(pipeline_name, runs, description=description,
                         links_from=target.absolute().parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(target)
    return target


def render_report(pipeline_name: str, runs: Sequence[Mapping[str, Any]], *,
                  description: str | None = None,
                  links_from: str | os.PathLike[str] | None = None) -> str:
    """The report's HTML text (see ``write_run_report``), rendered from
    ``templates/report.html.j2`` with autoescaping. ``links_from``: the folder Data Docs links
    are made relative to (``None``: the recorded paths as they are)."""
    last = runs[-1] if runs else {}
    desc = description if description is not None else str(last.get("description") or "")
    figures = []
    if runs:
        figures = [_figure("Firings by timing per run", _firings_chart(runs)),
                   _figure("Late and rejected elements per run", _late_chart(runs)),
                   _figure("Lateness of dropped elements (watermark - event time, all runs)",
                           _lateness_chart(runs)),
                   _figure("State size over runs", _state_chart(runs))]
    header = {k: _text(last.get(k)) for k in ("run_id", "version", "generation", "watermark")}
    header["validation"] = validation_status(last.get("validation")) if runs else ""
    return _template().render(
        pipeline=pipeline_name, description=desc, runs=runs, last=header, figures=figures,
        rows=[_row(run, i, links_from) for i, run in reversed(list(enumerate(runs)))],
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        css=Markup((TEMPLATES / "report.css").read_text(encoding="utf-8")))


def _template() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True,
                      undefined=StrictUndefined, keep_trailing_newline=True)
    return env.get_template("report.html.j2")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _row(run: Mapping[str, Any], i: int, links_from: Any) -> dict[str, Any]:
    """One line of the validation table; ``docs``: links to the run's own Data Docs pages
    (``data_docs_pages``), else to the site's index (runs validated before pages were
    recorded)."""
    validation = run.get("validation") or {}
    pages = validation.get("data_docs_pages") or {}
    docs = [{"text": f, "href": _href(pages[f], links_from)} for f in _FRAMES if pages.get(f)]
    if not docs and validation.get("data_docs"):
        docs = [{"text": "index", "href": _href(validation["data_docs"], links_from)}]
    return {"label": _label(run, i), "run_id": _text(run.get("run_id")),
            "finished_at": _text(run.get("finished_at")), "inputs": _text(run.get("inputs")),
            "firings": _text(run.get("firings")),
            "status": validation_status(run.get("validation")),
            "published": bool(run.get("published")),
            "forced": bool(run.get("published") and run.get("publish_on_failure")),
            "failed": [str(f) for f in validation.get("failed") or ()], "docs": docs}


def _href(path: Any, links_from: Any) -> str:
    """A link to the local file ``path``: relative to ``links_from`` when given, URL-quoted."""
    text = str(path)
    if links_from is not None and os.path.isabs(text):
        text = os.path.relpath(text, os.fspath(links_from))
    return quote(text.replace(os.sep, "/"), safe="/")


def _label(run: Mapping[str, Any], i: int) -> str:
    version = run.get("version")
    label = f"v{version}" if version is not None else f"run {i + 1}"
    return f"{label} (rebuild)" if run.get("rebuild") else label


def _num(value: Any) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def _count_axis(values: Sequence[float]) -> Any:
    """An axis for counts: integer ticks only (at most as many ticks as the largest count, so
    a chart whose counts are all 0 or 1 shows 0 and 1, not 0, 0.5, 1)."""
    import altair as alt

    top = int(max(values, default=0))
    return alt.Axis(format="d", tickMinStep=1, tickCount=max(1, min(top, 8)))


def _firings_chart(runs: Sequence[Mapping[str, Any]]) -> dict:
    rows = []
    for i, run in enumerate(runs):
        by_timing = run.get("firings_by_timing") or {}
        for order, timing in enumerate(TIMING_ORDER):
            rows.append({"run": _label(run, i), "i": i, "timing": timing, "order": order,
                         "firings": _num(by_timing.get(timing))})
    import altair as alt

    return alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("run:N", sort=alt.EncodingSortField("i"), title="run", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("firings:Q", stack="zero", title="firings", axis=_count_axis(
            [sum(_num((r.get("firings_by_timing") or {}).get(t)) for t in TIMING_ORDER)
             for r in runs])),
        color=alt.Color("timing:N", scale=alt.Scale(domain=list(TIMING_ORDER),
                                                    range=[_COLORS[t] for t in TIMING_ORDER])),
        order=alt.Order("order:Q"), tooltip=["run:N", "timing:N", "firings:Q"],
    ).properties(width=420, height=220).to_dict()


def _late_chart(runs: Sequence[Mapping[str, Any]]) -> dict:
    import altair as alt

    rows = [{"run": _label(run, i), "i": i, "kind": kind, "count": _num(run.get(kind))}
            for i, run in enumerate(runs) for kind in ("late", "rejects")]
    return alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("run:N", sort=alt.EncodingSortField("i"), title="run", axis=alt.Axis(labelAngle=0)),
        xOffset="kind:N", y=alt.Y("count:Q", title="elements",
                                  axis=_count_axis([r["count"] for r in rows])),
        color=alt.Color("kind:N", scale=alt.Scale(domain=["late", "rejects"],
                                                  range=["#e08a1e", "#c62828"])),
    ).properties(width=420, height=220).to_dict()


def _lateness_chart(runs: Sequence[Mapping[str, Any]]) -> dict:
    import altair as alt

    totals: dict[str, float] = {}
    for run in runs:
        for pair in run.get("lateness_histogram") or ():
            if isinstance(pair, Sequence) and len(pair) == 2:
                totals[str(pair[0])] = totals.get(str(pair[0]), 0.0) + _num(pair[1])
    rows = [{"bucket": b, "i": i, "count": c} for i, (b, c) in enumerate(totals.items())]
    return alt.Chart(alt.Data(values=rows)).mark_bar(color="#e08a1e").encode(
        x=alt.X("bucket:N", sort=alt.EncodingSortField("i"), title="lateness",
                axis=alt.Axis(labelAngle=0)),
        y=alt.Y("count:Q", title="dropped elements",
                axis=_count_axis([r["count"] for r in rows])),
    ).properties(width=420, height=220).to_dict()


def _state_chart(runs: Sequence[Mapping[str, Any]]) -> dict:
    import altair as alt

    rows = [{"run": _label(run, i), "i": i, "rows": _num(run.get("state_rows")),
             "MiB": _num(run.get("state_bytes")) / 2**20} for i, run in enumerate(runs)]
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("run:N", sort=alt.EncodingSortField("i"), title="run", axis=alt.Axis(labelAngle=0)))
    left = base.mark_line(point=True, color="#3b6ea8").encode(
        y=alt.Y("rows:Q", title="state rows",
                axis=alt.Axis(titleColor="#3b6ea8", tickMinStep=1, format="d")))
    right = base.mark_line(point=True, color="#8e44ad", strokeDash=[4, 3]).encode(
        y=alt.Y("MiB:Q", title="state MiB", axis=alt.Axis(titleColor="#8e44ad")))
    return alt.layer(left, right).resolve_scale(y="independent") \
        .properties(width=420, height=220).to_dict()


_NS = re.compile(r'\s+xmlns(:xlink)?="[^"]*"')


def _figure(caption: str, spec: dict) -> dict[str, Any]:
    """A chart as inline SVG (vl-convert's output: its text is already escaped)."""
    import vl_convert as vlc

    return {"caption": caption, "svg": Markup(_NS.sub("", vlc.vegalite_to_svg(spec), count=2))}


__all__ = ["render_report", "write_run_report"]
