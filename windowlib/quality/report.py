"""The windowlib run report: one self-contained HTML page per pipeline, from its run history.

``write_run_report(pipeline_name, history, path)`` draws, with altair, firings by timing per run
(stacked bars), late and rejected counts per run, the lateness distribution (summed over the
history's ``lateness_histogram``), state rows and bytes over runs, and a table of validation
status per run (``runs.summary.validation_status``: passed, failed — or failed and published by
override —, off when the caller turned validation off, not run), under a header with the
pipeline's description, last watermark, version and validation status.

Invariants:

* Self-contained: charts are rendered to inline SVG by ``vl-convert`` (no JavaScript, no fonts,
  no images, no CDN); the page contains no ``http://``/``https://`` reference at all (the SVG
  namespace declarations, implied for inline SVG in HTML5, are dropped). GX's Data Docs, by
  contrast, load their styles from CDNs and render unstyled offline.
* Every value from a summary is HTML-escaped; a missing field renders as empty/zero, never
  raises, so a partial history still gives a report.
* History entries are ``RunSummary.to_dict()`` dicts, oldest first; they are not mutated.
"""

from __future__ import annotations

import datetime as dt
import html
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from windowlib.core.errors import DefinitionError
from windowlib.runs.summary import validation_status

TIMING_ORDER = ("EARLY", "ON_TIME", "LATE")
_COLORS = {"EARLY": "#7aa6d6", "ON_TIME": "#2e7d32", "LATE": "#e08a1e"}
_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem;color:#222;
max-width:1100px}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.meta{color:#555}.grid{display:flex;flex-wrap:wrap;gap:1.5rem}
figure{margin:0}figcaption{font-weight:600;margin-bottom:.3rem}
table{border-collapse:collapse;margin-top:.5rem}td,th{border:1px solid #ddd;padding:.3rem .6rem;
text-align:left;font-size:.9rem}th{background:#f4f4f4}
.ok,.fail,.forced,.off{padding:.1rem .5rem;border-radius:.6rem;color:#fff;font-size:.8rem}
.ok{background:#2e7d32}.fail{background:#c62828}.forced{background:#e08a1e}.off{background:#757575}
code{background:#f4f4f4;padding:0 .2rem}
"""


def write_run_report(pipeline_name: str, history: Sequence[Mapping[str, Any]],
                     path: str | os.PathLike[str], *, description: str | None = None) -> Path:
    """Write the report for ``pipeline_name`` to ``path`` (a file); returns its path.

    ``history``: run summaries, oldest first (may be empty). ``description``: text for the
    header (e.g. the pipeline's ``explain()`` or docs); defaults to the last run's
    ``description`` field when present.
    """
    if not isinstance(pipeline_name, str) or not re.fullmatch(r"[a-z0-9_]+", pipeline_name):
        raise DefinitionError(f"pipeline name must match [a-z0-9_]+, got {pipeline_name!r}",
                              code="ARGUMENT_INVALID")
    target = Path(os.fspath(path))
    if ".." in target.parts:
        raise DefinitionError(f"report path must not contain '..', got {str(target)!r}",
                              code="ARGUMENT_INVALID")
    runs = [dict(r) for r in history]
    page = render_report(pipeline_name, runs, description=description)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(target)
    return target


def render_report(pipeline_name: str, runs: Sequence[Mapping[str, Any]], *,
                  description: str | None = None) -> str:
    """The report's HTML text (see ``write_run_report``)."""
    e = html.escape
    last = runs[-1] if runs else {}
    desc = description if description is not None else str(last.get("description") or "")
    head = [f"<h1>windowlib report: <code>{e(pipeline_name)}</code></h1>",
            f"<p class=meta>{e(desc)}</p>" if desc else "",
            "<p class=meta>"
            f"runs: {len(runs)} · last run: <code>{e(str(last.get('run_id', '')))}</code> · "
            f"last version: {e(str(last.get('version', '')))} · "
            f"generation: {e(str(last.get('generation', '')))} · "
            f"last watermark: {e(str(last.get('watermark', '')))} · "
            f"last validation: {e(validation_status(last.get('validation')) if runs else '')} · "
            f"generated {e(dt.datetime.now(dt.UTC).strftime('%Y-%m-%dT%H:%M:%SZ'))}</p>"]
    if runs:
        body = [
            "<h2>Firings</h2><div class=grid>",
            _figure("Firings by timing per run", _firings_chart(runs)),
            _figure("Late and rejected elements per run", _late_chart(runs)),
            "</div><h2>Lateness and state</h2><div class=grid>",
            _figure("Lateness of dropped elements (watermark - event time, all runs)",
                    _lateness_chart(runs)),
            _figure("State size over runs", _state_chart(runs)),
            "</div><h2>Validation</h2>", _validation_table(runs)]
    else:
        body = ["<p>No runs yet.</p>"]
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>windowlib · {e(pipeline_name)}</title><style>{_CSS}</style></head>"
            f"<body>{''.join(head)}{''.join(body)}</body></html>\n")


def _label(run: Mapping[str, Any], i: int) -> str:
    version = run.get("version")
    return f"v{version}" if version is not None else f"run {i + 1}"


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


def _validation_table(runs: Sequence[Mapping[str, Any]]) -> str:
    e = html.escape
    lines = ["<table><tr><th>run</th><th>run id</th><th>finished</th><th>inputs</th>"
             "<th>firings</th><th>validation</th><th>published</th><th>failed checks</th>"
             "<th>data docs</th></tr>"]
    for i, run in reversed(list(enumerate(runs))):
        validation = run.get("validation") or {}
        status = validation_status(run.get("validation"))
        published = bool(run.get("published"))
        if status == "passed":
            badge = "<span class=ok>passed</span>"
        elif status == "off":
            badge = "<span class=off>off</span>"
        elif status == "not run":
            badge = "not run"
        elif published and run.get("publish_on_failure"):
            badge = "<span class=forced>failed, published by override</span>"
        else:
            badge = "<span class=fail>failed</span>"
        failed = "<br>".join(e(str(f)) for f in validation.get("failed") or ())
        docs = validation.get("data_docs")
        docs_cell = f"<code>{e(str(docs))}</code>" if docs else ""
        lines.append(
            f"<tr><td>{e(_label(run, i))}</td><td><code>{e(str(run.get('run_id', '')))}"
            f"</code></td><td>{e(str(run.get('finished_at', '')))}</td>"
            f"<td>{e(str(run.get('inputs', '')))}</td><td>{e(str(run.get('firings', '')))}</td>"
            f"<td>{badge}</td><td>{'yes' if published else 'no'}</td><td>{failed}</td>"
            f"<td>{docs_cell}</td></tr>")
    lines.append("</table>")
    return "".join(lines)


_NS = re.compile(r'\s+xmlns(:xlink)?="[^"]*"')


def _figure(caption: str, spec: dict) -> str:
    import vl_convert as vlc

    svg = _NS.sub("", vlc.vegalite_to_svg(spec), count=2)
    return f"<figure><figcaption>{html.escape(caption)}</figcaption>{svg}</figure>"


__all__ = ["render_report", "write_run_report"]
