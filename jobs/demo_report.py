"""What the demo shows at the end: per-pipeline numbers read back from the committed outputs,
example LATE firings with their pane sequence, and the table (``jobs/demo.py``).

Invariants: every number comes from the published outputs (``read_firings``, ``read_late``,
``read_rejects``) or the checkpoint's commit history (``run_history``) — never from what the demo
believes it did. Only small aggregates and a handful of example rows reach the driver.
"""

from __future__ import annotations

from typing import Any

TIMINGS = ("EARLY", "ON_TIME", "LATE")


def pipeline_numbers(job: Any, root: str, dag_runs: int) -> dict[str, Any]:
    """Firings by timing (retraction rows excluded and counted apart), late, rejects, commits
    and validation status of one pipeline, from its committed outputs."""
    from pyspark.sql import functions as F

    import windowlib as wl
    from windowlib.runs.status import run_history
    from windowlib.runs.summary import VALIDATION_STATUSES, validation_status

    _, output = job.locations(root)
    history = run_history(job, root)
    out: dict[str, Any] = {"pipeline": job.name, "dag_runs": dag_runs, "commits": len(history),
                           "output": output}
    if not history:
        return {**out, **{t: 0 for t in TIMINGS}, "retractions": 0, "late": 0, "rejects": 0,
                "validation": "no commits"}
    firings = wl.read_firings(output)
    retract = F.coalesce(F.col("retract"), F.lit(False)) if "retract" in firings.columns \
        else F.lit(False)
    row = firings.agg(*[F.sum(F.when(~retract & (F.col("timing") == t), 1).otherwise(0))
                        .alias(t) for t in TIMINGS],
                      F.sum(F.when(retract, 1).otherwise(0)).alias("retractions")).first()
    out.update({t: int(row[t] or 0) for t in TIMINGS})
    out["retractions"] = int(row["retractions"] or 0)
    out["late"] = wl.read_late(output).count()
    out["rejects"] = wl.read_rejects(output).count()
    statuses = [validation_status(h.get("validation")) for h in history]
    passed = statuses.count("passed")
    out["validation_passed"] = passed
    # passed / FAILED / off (turned off by the caller) / not run, each counted
    out["validation"] = ", ".join(
        f"{'FAILED' if s == 'failed' else s} {statuses.count(s)}/{len(history)}"
        for s in VALIDATION_STATUSES if s in statuses)
    out["watermark"] = history[-1].get("watermark")
    return out


def late_examples(job: Any, root: str, rerun_ids: list[str], limit: int = 3
                  ) -> list[list[dict[str, Any]]]:
    """Up to ``limit`` windows that fired ON_TIME and then LATE in a rerun (one of
    ``rerun_ids``, prefixes of commit run ids), each as its pane sequence (oldest first)."""
    from pyspark.sql import functions as F

    import windowlib as wl

    _, output = job.locations(root)
    firings = wl.read_firings(output)
    if "retract" in firings.columns:
        firings = firings.filter(~F.coalesce(F.col("retract"), F.lit(False)))
    window = [*job.pipeline.key_columns, "window_start", "window_end"]
    from_rerun = F.lit(False)
    for rid in rerun_ids:
        from_rerun = from_rerun | F.col("run_id").startswith(rid)
    late = firings.filter((F.col("timing") == "LATE") & from_rerun).select(*window).distinct()
    on_time = firings.filter(F.col("timing") == "ON_TIME").select(*window).distinct()
    chosen = late.join(on_time, window).orderBy(*window).limit(limit)
    rows = firings.join(chosen, window).orderBy(*window, "pane_index").collect()
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        d = r.asDict()
        grouped.setdefault(tuple(d[c] for c in window), []).append(d)
    return list(grouped.values())


def render_examples(console: Any, job: Any, examples: list[list[dict[str, Any]]],
                    rerun_labels: dict[str, str]) -> None:
    """Print each example window's panes: window, pane index, timing, result columns, run."""
    from rich.table import Table

    keys = list(job.pipeline.key_columns)
    meta = {"window_start", "window_end", "pane_index", "timing", "is_final", "watermark",
            "processing_time", "run_id", "retract", *keys}
    for panes in examples:
        first = panes[0]
        values = [c for c in first if c not in meta][:4]
        ws, we = first["window_start"], first["window_end"]
        title = (f"{', '.join(f'{k}={first[k]}' for k in keys)} · window "
                 f"[{ws:%Y-%m-%d %H:%M}, {we:%H:%M}) UTC")
        table = Table(title=title, title_justify="left", show_edge=False)
        for col in ("pane_index", "timing", *values, "published by"):
            table.add_column(col, justify="right" if col not in ("timing", "published by")
                             else "left")
        for p in panes:
            label = next((v for k, v in rerun_labels.items() if p["run_id"].startswith(k)),
                         _short(p["run_id"]))
            style = "bold yellow" if p["timing"] == "LATE" else None
            table.add_row(str(p["pane_index"]), p["timing"], *[_fmt(p[c]) for c in values],
                          label, style=style)
        console.print(table)


def summary_table(numbers: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="windowlib demo: NYC flights 2013 through Airflow", show_lines=False)
    for col in ("pipeline", "DAG runs", "commits", "EARLY", "ON_TIME", "LATE", "retractions",
                "late (dropped)", "rejects", "validation"):
        table.add_column(col, justify="left" if col in ("pipeline", "validation") else "right")
    for n in numbers:
        status = n["validation"]
        table.add_row(n["pipeline"], str(n["dag_runs"]), str(n["commits"]),
                      *[str(n[t]) for t in TIMINGS], str(n["retractions"]), str(n["late"]),
                      str(n["rejects"]),
                      f"[green]{status}[/]" if status.startswith("passed") and "," not in status
                      else f"[red]{status}[/]")
    return table


def _short(run_id: str) -> str:
    """``windowlib_x:scheduled__2013-07-10T14:00:00+00:00@v3`` -> ``run 2013-07-10T14:00 @v3``."""
    text = run_id.split(":", 1)[-1]
    for prefix in ("manual__", "scheduled__"):
        text = text.replace(prefix, "")
    return "run " + text.replace(":00+00:00", "").replace("_00_00", "")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    return "" if value is None else str(value)


__all__ = ["late_examples", "pipeline_numbers", "render_examples", "summary_table"]
