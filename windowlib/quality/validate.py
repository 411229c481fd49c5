"""Validate a run's staged outputs with Great Expectations on Spark, before publishing.

``validate_outputs`` runs the checks of ``suites.build_plan`` on the firings and the derived
per-window frame: one GX suite and one validation per frame (built-in
checks and the pipeline's own expectations together), then ONE Data Docs build into
``context_dir`` (when given).

Cost model (measured: GX on Spark runs about one Spark job per metric bundle — over Spark
Connect 8 executions for a typical pipeline, the first one reading the staged files — and
Data Docs templates are compiled once per machine, ``datadocs.py``): the happy path runs every
suite with GX's ``BOOLEAN_ONLY`` result format (aggregate metrics only, no unexpected-value
samples) and builds Data Docs once — 49 Spark jobs per validation before, far fewer now.
Exact counts are computed only when something failed: ``frames.py`` for the built-in checks,
and a second GX pass with the ``BASIC`` format over just the failed pipeline expectations.

Invariants:

* The GX context is ephemeral (in-memory stores, analytics and progress bars off) with exactly
  one Data Docs site, at ``context_dir``; without ``context_dir`` Data Docs go to
  ``$WINDOWLIB_DATA_DOCS_DIR/<pipeline>`` when that variable is set (e.g. a local folder for a
  lake on S3), else nowhere (GX's default site would go to a random temporary directory).
* The firings frame is persisted for the duration of the call and unpersisted afterwards; the
  caller's DataFrame is not modified.
* ``success`` is GX's verdict. Unexpected counts of failed checks are exact (``frames.py`` for
  built-in checks, GX's full ``unexpected_count`` metric for the pipeline's own expectations;
  never the sampled ``partial_unexpected_counts``). A passed built-in check has
  ``unexpected_count == 0`` (none has ``mostly``); a passed pipeline expectation reports
  ``None`` (not counted; it may use ``mostly``). ``element_count`` is known on failure only.
* A data problem is a failed result; anything else GX raises (an expectation naming a column
  that does not exist, a broken context) is a ``QualityError`` with code
  ``QUALITY_UNAVAILABLE``: the run cannot be judged, so it must not publish.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from windowlib.core.errors import DefinitionError, QualityError, WindowlibError
from windowlib.core.pipeline import Pipeline
from windowlib.quality import frames
from windowlib.quality.suites import FRAMES, META_KEY, Check, SuitePlan, build_plan

_SITE = "windowlib"
DOCS_ENV = "WINDOWLIB_DATA_DOCS_DIR"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one expectation."""

    name: str
    expectation: str
    frame: str
    column: str | None
    success: bool
    unexpected_count: int | None
    element_count: int | None
    detail: str = ""

    def line(self) -> str:
        """One human-readable line for a failed check."""
        where = f"{self.frame}.{self.column}" if self.column else self.frame
        count = "" if self.unexpected_count is None else \
            f": {self.unexpected_count} unexpected of {self.element_count}"
        extra = f" ({self.detail})" if self.detail else ""
        return f"{self.name} [{self.expectation} on {where}]{count}{extra}"


@dataclass
class ValidationOutcome:
    """What ``validate_outputs`` found; ``to_dict()`` is small JSON (for XCom and the summary)."""

    success: bool
    results: list[CheckResult] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    data_docs_index: str | None = None
    data_docs_pages: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"success": self.success, "status": "passed" if self.success else "failed",
                "failed": list(self.failed),
                "data_docs": self.data_docs_index,
                "data_docs_pages": dict(self.data_docs_pages),
                "results": [asdict(r) for r in self.results]}


def validate_outputs(pipeline: Pipeline, firings_df: Any, summary: Mapping[str, Any], *,
                     extra_expectations: Iterable[Any] = (),
                     context_dir: str | os.PathLike[str] | None = None) -> ValidationOutcome:
    """Validate ``firings_df`` (staged firings) of the run ``summary`` describes
    (``RunSummary.to_dict()`` or an object with ``to_dict()``; its counts were already checked
    by the run, ``RunSummary.check_conservation``, and are not validated again here).

    ``extra_expectations`` are the pipeline's own GX expectations, applied to the firings.
    ``context_dir`` is where the Data Docs site goes (``<context_dir>/index.html``).
    """
    if not isinstance(summary, Mapping) and callable(getattr(summary, "to_dict", None)):
        summary = summary.to_dict()
    plan = build_plan(pipeline, extra_expectations)
    if context_dir is None and os.environ.get(DOCS_ENV):
        context_dir = Path(os.environ[DOCS_ENV]) / plan.pipeline
    docs_dir = _docs_dir(context_dir)
    missing = [c for c in plan.required_columns if c not in firings_df.columns]
    if missing:
        return _missing_columns(plan, missing)
    firings = frames.prepare_firings(plan, firings_df)
    owned = not firings.is_cached   # a frame the caller cached stays cached
    if owned:
        firings = firings.persist()
    try:
        data = {"firings": firings, "windows": frames.windows_frame(plan, firings)}
        pages: dict[str, str] = {}
        gx_results = _run_gx(plan, {f: plan.checks_for(f) for f in FRAMES}, data, docs_dir,
                             "BOOLEAN_ONLY", summary.get("run_id"), pages)
        failed = [c for c in plan.checks if not gx_results[c.name].success]
        counts: dict[str, dict[str, int]] = {f: {} for f in FRAMES}
        if failed:   # exact counts, only for a failed validation
            counts = {"firings": frames.firings_counts(plan, firings),
                      "windows": frames.windows_counts(data["windows"])}
            custom = [c for c in failed if not c.builtin]
            if custom:
                again = _run_gx(plan, {"firings": custom}, data, None, "BASIC",
                                summary.get("run_id"))
                for c in custom:
                    raw = (again[c.name].result or {}).get("unexpected_count")
                    if raw is not None:
                        counts["firings"][c.name] = int(raw)
    finally:
        if owned:
            firings.unpersist()
    results = [_result(check, gx_results[check.name], counts[check.frame])
               for check in plan.checks]
    index = docs_dir / "index.html" if docs_dir is not None else None
    success = all(r.success for r in results)
    return ValidationOutcome(
        success=success, results=results,
        failed=[r.line() for r in results if not r.success],
        data_docs_index=str(index) if index is not None and index.exists() else None,
        data_docs_pages=pages)


def _docs_dir(context_dir: str | os.PathLike[str] | None) -> Path | None:
    if context_dir is None:
        return None
    text = os.fspath(context_dir)
    if "\x00" in text or ".." in Path(text).parts:
        raise DefinitionError(f"context_dir must be a plain directory path without '..', got "
                              f"{text!r}", code="ARGUMENT_INVALID")
    path = Path(text).absolute()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _missing_columns(plan: SuitePlan, missing: list[str]) -> ValidationOutcome:
    results = [CheckResult(f"column_exists:{c}", "expect_column_to_exist", "firings", c, False,
                           None, None, "required column missing from the firings")
               for c in missing]
    return ValidationOutcome(False, results, [r.line() for r in results], None)


def _context(docs_dir: Path | None) -> Any:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    from windowlib.quality import datadocs

    sites = {} if docs_dir is None else {_SITE: datadocs.site(docs_dir)}
    defaults = InMemoryStoreBackendDefaults()
    config = DataContextConfig(store_backend_defaults=defaults,
                               stores=datadocs.stores(defaults, docs_dir),
                               analytics_enabled=False, data_docs_sites=sites,
                               progress_bars=ProgressBarsConfig(globally=False))
    return gx.get_context(mode="ephemeral", project_config=config)


def _run_gx(plan: SuitePlan, checks: Mapping[str, Sequence[Check]], data: Mapping[str, Any],
            docs_dir: Path | None, result_format: str, run_id: Any = None,
            pages: dict[str, str] | None = None) -> dict[str, Any]:
    """One GX validation per frame of ``checks`` (frame -> checks), named by windowlib's
    ``run_id``, then one Data Docs build of this run's pages and the index when ``docs_dir`` is
    given (each frame's page path goes into ``pages``); GX results by check name."""
    try:
        import great_expectations as gx
        from great_expectations.core.run_identifier import RunIdentifier

        from windowlib.quality.datadocs import run_name

        ctx = _context(docs_dir)
        run = RunIdentifier(run_name=run_name(run_id),
                            run_time=dt.datetime.now(dt.UTC))
        source = ctx.data_sources.add_spark(name=f"{plan.pipeline}_staged", persist=False)
        found: dict[str, Any] = {}
        for frame, chosen in checks.items():
            if not chosen:
                continue
            batch = source.add_dataframe_asset(name=frame) \
                .add_batch_definition_whole_dataframe(f"{frame}_whole")
            suite = ctx.suites.add(plan.frame_suite(frame, chosen))
            vd = ctx.validation_definitions.add(gx.ValidationDefinition(
                name=f"{plan.pipeline}.{frame}", data=batch, suite=suite))
            validation = vd.run(batch_parameters={"dataframe": data[frame]},
                                result_format=result_format, run_id=run)
            for r in validation.results:
                found[(r.expectation_config.meta or {}).get(META_KEY)] = r
        if docs_dir is not None:
            _build_docs(ctx, run, pages if pages is not None else {})
    except WindowlibError:
        raise
    except Exception as exc:   # GX/Spark failures that are not data problems
        raise QualityError(f"Great Expectations could not validate pipeline "
                           f"{plan.pipeline!r}: {type(exc).__name__}: {exc}",
                           code="QUALITY_UNAVAILABLE") from exc
    for check in (c for chosen in checks.values() for c in chosen):
        r = found.get(check.name)
        if r is None:
            raise QualityError(f"Great Expectations returned no result for check "
                               f"{check.name!r} of pipeline {plan.pipeline!r}",
                               code="QUALITY_UNAVAILABLE")
        message = _raised(r.exception_info)
        if message is not None:
            raise QualityError(
                f"expectation {check.name!r} of pipeline {plan.pipeline!r} could not be "
                f"evaluated (a definition problem, not a data problem): {message}",
                code="QUALITY_UNAVAILABLE")
    return found


def _build_docs(ctx: Any, run: Any, pages: dict[str, str]) -> None:
    """Render this run's validation pages, the suites and the index (which lists every run in
    the site's results store); ``pages``: frame -> local path of this run's page."""
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
    )

    store = ctx.validation_results_store
    keys = [k for k in store.list_keys()
            if k.run_id.run_name == run.run_name and k.run_id.run_time == run.run_time]
    suites = [ExpectationSuiteIdentifier(name=s.name) for s in ctx.suites.all()]
    ctx.build_data_docs(site_names=[_SITE], resource_identifiers=[*keys, *suites])
    for key in keys:
        frame = key.expectation_suite_identifier.name.rsplit(".", 1)[-1]
        for entry in ctx.get_docs_sites_urls(resource_identifier=key, site_name=_SITE):
            url = entry.get("site_url") or ""
            if url.startswith("file://"):
                pages[frame] = url_to_path(url)


def url_to_path(url: str) -> str:
    """The local path of a ``file://`` URL GX returns."""
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(url).path)


def _raised(info: Any) -> str | None:
    """The exception message in a GX ``exception_info`` (flat, or keyed by metric), if any."""
    if not isinstance(info, Mapping):
        return None
    candidates = [info, *(v for v in info.values() if isinstance(v, Mapping))]
    for entry in candidates:
        if entry.get("raised_exception") or entry.get("exception_traceback"):
            return _first_line(str(entry.get("exception_message") or "unknown error"))
    return None


def _first_line(text: str) -> str:
    return re.sub(r"\s+", " ", str(text).strip().splitlines()[0] if text.strip() else "")[:300]


def _result(check: Check, gx_result: Any, counts: Mapping[str, int]) -> CheckResult:
    result = gx_result.result or {}
    ok = bool(gx_result.success)
    unexpected: int | None = counts.get(check.name)
    if unexpected is None and ok and check.builtin:
        unexpected = 0
    detail = ""
    if unexpected is None and "observed_value" in result:
        detail = f"observed {result['observed_value']!r}"
    return CheckResult(
        name=check.name, expectation=check.expectation.expectation_type, frame=check.frame,
        column=check.column, success=ok, unexpected_count=unexpected,
        element_count=counts.get("__rows__"), detail=detail)


__all__ = ["CheckResult", "ValidationOutcome", "validate_outputs"]
