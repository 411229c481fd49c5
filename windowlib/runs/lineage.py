"""OpenLineage content of windowlib runs: datasets and facets from what a run already records.

The one owner of lineage content (docs/lineage.md): the Airflow tasks (``dags/_windowlib_lineage``)
and the direct client path (``windowlib.runs.lineage_emit``) call these builders and never build
facets themselves. Each builder returns a :class:`Lineage` (inputs, outputs, run facets) made of
``openlineage-python`` objects.

Invariants:

* Nothing is read for lineage beyond small records: counts, bytes and schemas come from the commit
  record (``stats``, ``extra.frames``), the version's input-manifest entries, the plan and the
  validation JSON. No Spark job, no data on the driver.
* ``openlineage`` is imported inside functions only: importing this module costs nothing.
* Dataset names follow OpenLineage's naming: ``file`` + absolute path, ``s3://bucket`` + key.
  Locations and messages pass through ``state.uri.redact`` (no credentials in an event).
* Every facet names its schema URL. windowlib's own facets (``windowlib_run``,
  ``windowlib_input``, ``windowlib_error``) are described by ``docs/lineage/*.json``, published
  under :data:`SCHEMA_BASE`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from windowlib.core.errors import EXIT_FAILED, StateError, WindowlibError, exit_code
from windowlib.core.outputs import OUTPUTS
from windowlib.runs.protocol import CommitDetails, RunPlan
from windowlib.runs.summary import iso_ms
from windowlib.state.uri import Uri, redact

__all__ = ["FACET_SCHEMAS", "SCHEMA_BASE", "Lineage", "blocked_facets", "dataset_name",
           "error_facets", "for_audit", "for_commit", "for_gc", "for_plan", "for_report",
           "for_staged", "run_facet", "windowlib_facets"]

SCHEMA_BASE = "https://windowlib.org/spec/lineage/1-0-0/"
"""Where ``docs/lineage/<Facet>.json`` is published; a facet's ``_schemaURL`` is
``{SCHEMA_BASE}{Facet}.json#/$defs/{Facet}``."""
FACET_SCHEMAS = ("WindowlibRunFacet", "WindowlibInputFacet", "WindowlibErrorFacet")
RUN_KEY, INPUT_KEY, ERROR_KEY = "windowlib_run", "windowlib_input", "windowlib_error"
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")


@dataclass
class Lineage:
    """What one task or run reports: OpenLineage input/output datasets and run facets."""

    inputs: list[Any] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    run_facets: dict[str, Any] = field(default_factory=dict)

    def merge(self, other: Lineage) -> Lineage:
        return Lineage([*self.inputs, *other.inputs], [*self.outputs, *other.outputs],
                       {**self.run_facets, **other.run_facets})


def scrub(text: str) -> str:
    """``text`` with every URI in it redacted (``state.uri.redact``)."""
    return _URI.sub(lambda m: redact(m.group()), text)


def dataset_name(uri: str) -> tuple[str, str]:
    """OpenLineage ``(namespace, name)`` of a location: ``("file", "/abs/path")`` or
    ``("s3://bucket", "key")``."""
    loc = Uri.parse(uri)
    if loc.scheme == "file":
        return "file", "/" + loc.key
    return f"{loc.scheme}://{loc.bucket}", loc.key


@cache
def windowlib_facets() -> dict[str, type]:
    """windowlib's facet classes (attrs, subclasses of the client's bases), by schema name."""
    import attr
    from openlineage.client.generated.base import InputDatasetFacet, RunFacet

    def schema_of(name: str) -> Any:
        return staticmethod(lambda: f"{SCHEMA_BASE}{name}.json#/$defs/{name}")

    @attr.define
    class WindowlibRunFacet(RunFacet):
        """A windowlib run or task: ids, versions, watermarks and row counts."""

        pipeline: str
        stage: str
        runId: str | None = attr.field(default=None)
        fingerprint: str | None = attr.field(default=None)
        status: str | None = attr.field(default=None)
        checkpointVersionBefore: int | None = attr.field(default=None)
        checkpointVersionAfter: int | None = attr.field(default=None)
        watermarkBefore: str | None = attr.field(default=None)
        watermarkAfter: str | None = attr.field(default=None)
        counts: dict[str, Any] | None = attr.field(default=None)
        lateRerun: bool = attr.field(default=False)
        publishOnFailure: bool = attr.field(default=False)
        _get_schema = schema_of("WindowlibRunFacet")

    @attr.define
    class WindowlibInputFacet(InputDatasetFacet):
        """The partitions and files a run consumed from its source, and their rows."""

        partitions: list[dict[str, Any]]
        fileCount: int
        size: int
        rowCount: int | None = attr.field(default=None)
        badFiles: list[dict[str, Any]] = attr.field(factory=list)
        _get_schema = schema_of("WindowlibInputFacet")

    @attr.define
    class WindowlibErrorFacet(RunFacet):
        """A failed windowlib task: its error code, exit code and (redacted) message."""

        code: str
        exitCode: int
        message: str
        _get_schema = schema_of("WindowlibErrorFacet")

    return {c.__name__: c for c in (WindowlibRunFacet, WindowlibInputFacet, WindowlibErrorFacet)}


# --- datasets ----------------------------------------------------------------------------------

def _files_by_partition(files: Sequence[Any]) -> list[dict[str, Any]]:
    parts: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        entry = f if isinstance(f, Mapping) else asdict(f)
        listed = {"path": redact(str(entry["path"])), "size": int(entry["size"])}
        if entry.get("rows") is not None:   # from the footer the run read
            listed["rows"] = int(entry["rows"])
        parts.setdefault(str(entry.get("partition")), []).append(listed)
    return [{"partition": p, "files": fs} for p, fs in sorted(parts.items())]


def source_dataset(source: Any, files: Sequence[Any] = (), *, partitions: Sequence[str] = (),
                   rows: int | None = None, bad_files: Sequence[Mapping[str, Any]] = ()) -> Any:
    """The source as an input dataset; with ``files`` (``FileEntry`` or their dicts) the
    ``windowlib_input`` facet lists them by partition, plus the standard input statistics."""
    from openlineage.client.event_v2 import InputDataset
    from openlineage.client.facet_v2 import input_statistics_input_dataset as stats

    namespace, name = dataset_name(source.uri)
    facets: dict[str, Any] = {}
    listed = _files_by_partition(files)
    known = {p["partition"] for p in listed}
    listed += [{"partition": str(p), "files": []} for p in partitions if str(p) not in known]
    if listed:
        size = sum(f["size"] for p in listed for f in p["files"])
        count = sum(len(p["files"]) for p in listed)
        facets[INPUT_KEY] = windowlib_facets()["WindowlibInputFacet"](
            partitions=listed, fileCount=count, size=size, rowCount=rows,
            badFiles=[{"path": redact(str(b.get("path"))), "rows": b.get("rows"),
                       "reason": scrub(str(b.get("reason") or b.get("error") or ""))}
                      for b in bad_files])
        facets["inputStatistics"] = stats.InputStatisticsInputDatasetFacet(
            rowCount=rows, size=size, fileCount=count)
    return InputDataset(namespace=namespace, name=name, inputFacets=facets)


def _schema_fields(spark_schema: Mapping[str, Any] | None) -> list[Any]:
    from openlineage.client.facet_v2 import schema_dataset as sd

    def field_of(f: Mapping[str, Any]) -> Any:
        kind = f["type"]
        if isinstance(kind, Mapping) and kind.get("type") == "struct":
            return sd.SchemaDatasetFacetFields(name=f["name"], type="struct",
                                               fields=[field_of(c) for c in kind["fields"]])
        text = kind if isinstance(kind, str) else str(kind.get("type"))
        return sd.SchemaDatasetFacetFields(name=f["name"], type=text)

    return [field_of(f) for f in (spark_schema or {}).get("fields", [])]


def table_datasets(cs: Any, frames: Mapping[str, Any] | None = None, *,
                   version: int | None = None, as_inputs: bool = False) -> list[Any]:
    """The pipeline's output tables (Delta, ``runs/tables.py``) as datasets: schema, storage and
    the ``latest`` view as symlinks; ``frames`` (a commit's ``extra.frames``) add the rows,
    bytes and files this run wrote; ``version`` the checkpoint version the tables show."""
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import dataset_version_dataset as dv
    from openlineage.client.facet_v2 import output_statistics_output_dataset as os_
    from openlineage.client.facet_v2 import schema_dataset as sd
    from openlineage.client.facet_v2 import storage_dataset as st
    from openlineage.client.facet_v2 import symlinks_dataset as sy

    from windowlib.runs.tables import spark_names
    from windowlib.state.tables import OutputTable

    names = spark_names(cs.pipeline)
    out = []
    for name in OUTPUTS:
        namespace, path = dataset_name(OutputTable(cs.pipeline_store, name).uri)
        info = (frames or {}).get(name)
        facets: dict[str, Any] = {
            "storage": st.StorageDatasetFacet(storageLayer="delta", fileFormat="parquet")}
        links = [sy.Identifier(namespace="spark_catalog", name=names[name], type="TABLE")]
        if name == "firings":
            links.append(sy.Identifier(namespace="spark_catalog", name=names["latest"],
                                       type="VIEW"))
        facets["symlinks"] = sy.SymlinksDatasetFacet(identifiers=links)
        if info and info.get("schema"):
            facets["schema"] = sd.SchemaDatasetFacet(fields=_schema_fields(info["schema"]))
        if version is not None:
            facets["version"] = dv.DatasetVersionDatasetFacet(datasetVersion=str(version))
        if as_inputs:
            out.append(InputDataset(namespace=namespace, name=path, facets=facets))
            continue
        stats = {}
        if info is not None:
            stats["outputStatistics"] = os_.OutputStatisticsOutputDatasetFacet(
                rowCount=int(info.get("rows") or 0), size=int(info.get("bytes") or 0),
                fileCount=len(info.get("files") or []))
        out.append(OutputDataset(namespace=namespace, name=path, facets=facets,
                                 outputFacets=stats))
    return out


def assertions_dataset(cs: Any, validation: Mapping[str, Any] | None,
                       frames: Mapping[str, Any] | None = None) -> Any:
    """The audited dataset (the firings table, staged) as an input carrying the GX validation
    as ``dataQualityAssertions``: one assertion per expectation, passed or failed."""
    from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq

    firings = table_datasets(cs, frames, as_inputs=True)[0]
    results = (validation or {}).get("results") or []
    firings.inputFacets = {"dataQualityAssertions": dq.DataQualityAssertionsDatasetFacet(
        assertions=[dq.Assertion(assertion=str(r.get("expectation")),
                                 success=bool(r.get("success")), column=r.get("column"),
                                 name=str(r.get("name")),
                                 actual=None if r.get("unexpected_count") is None
                                 else f"{r['unexpected_count']} unexpected of "
                                      f"{r.get('element_count')}")
                    for r in results])}
    return firings


# --- run facets ---------------------------------------------------------------------------------

def run_facet(pipeline: str, stage: str, *, fingerprint: str | None = None,
              summary: Mapping[str, Any] | None = None, before: Any = None, after: Any = None,
              version_before: int | None = None) -> dict[str, Any]:
    """``{"windowlib_run": ...}`` from a run summary (``RunSummary.to_dict()`` or a commit's
    ``stats``) and the commits before and after it (``Commit`` or ``None``)."""
    s = dict(summary or {})
    counts = {k: s[k] for k in ("inputs", "processed", "late", "rejects", "firings")
              if k in s}
    if counts:
        counts = {"input": counts.get("inputs", 0), **{k: v for k, v in counts.items()
                                                       if k != "inputs"},
                  "firingsByTiming": dict(s.get("firings_by_timing") or {})}
    late_firings = int((s.get("firings_by_timing") or {}).get("LATE", 0) or 0)
    if before is not None:
        version_before = before.version
    version_after = after.version if after is not None else s.get("version") \
        if s.get("published") else None
    facet = windowlib_facets()["WindowlibRunFacet"](
        pipeline=pipeline, stage=stage, runId=s.get("run_id"),
        fingerprint=fingerprint or (after.fingerprint if after is not None else None),
        status=None if s.get("status") is None else str(s.get("status")),
        checkpointVersionBefore=version_before, checkpointVersionAfter=version_after,
        watermarkBefore=iso_ms(before.watermark_ms) if before is not None else None,
        watermarkAfter=iso_ms(after.watermark_ms) if after is not None else s.get("watermark"),
        counts=counts or None, lateRerun=late_firings > 0,
        publishOnFailure=bool(s.get("publish_on_failure")))
    return {RUN_KEY: facet}


def error_facets(exc: BaseException) -> dict[str, Any]:
    """``{"windowlib_error": ...}``: the error's code (``WindowlibError.code``, else its class
    name), exit code (``core.errors.exit_code``) and message with URIs redacted."""
    code = exc.code if isinstance(exc, WindowlibError) else type(exc).__name__
    cause = exc.__cause__
    if not isinstance(exc, WindowlibError) and isinstance(cause, WindowlibError):
        code = cause.code     # AirflowFailException raised from a windowlib user error
    facet = windowlib_facets()["WindowlibErrorFacet"](
        code=str(code), exitCode=exit_code(cause if isinstance(cause, WindowlibError) else exc),
        message=scrub(str(exc))[:4000])
    return {ERROR_KEY: facet, **_message_facet(facet.message)}


def blocked_facets(pipeline: str, validation: Mapping[str, Any] | None) -> dict[str, Any]:
    """The error facets of a run whose audit failed (nothing published): code ``BLOCKED`` (a
    run status, not a raised error), exit code 1 as the CLI's, the failed expectations."""
    failed = "; ".join(map(str, (validation or {}).get("failed") or ["(no detail)"]))
    message = scrub(f"pipeline {pipeline!r}: the audit failed, nothing was published. "
                    f"Failed expectations: {failed}")[:4000]
    facet = windowlib_facets()["WindowlibErrorFacet"](code="BLOCKED", exitCode=EXIT_FAILED,
                                                      message=message)
    return {ERROR_KEY: facet, **_message_facet(message)}


def _message_facet(message: str) -> dict[str, Any]:
    from openlineage.client.facet_v2 import error_message_run

    return {"errorMessage": error_message_run.ErrorMessageRunFacet(
        message=message, programmingLanguage="python")}


# --- one builder per step -------------------------------------------------------------------------

def for_plan(cs: Any, source: Any, plan: RunPlan | Mapping[str, Any]) -> Lineage:
    """The plan step: the source with the new files it found."""
    plan = plan if isinstance(plan, RunPlan) else RunPlan.from_dict(dict(plan))
    parent = cs.get(plan.parent_version) if plan.parent_version else None
    return Lineage([source_dataset(source, plan.files, partitions=plan.partitions)], [],
                   run_facet(cs.pipeline, "plan", fingerprint=cs.fingerprint,
                             summary={"run_id": plan.run_id}, before=parent,
                             version_before=plan.parent_version))


def for_staged(cs: Any, source: Any, plan: RunPlan | Mapping[str, Any],
               ref: Mapping[str, Any]) -> Lineage:
    """The run step: the plan's files in, the output tables staged (not yet visible)."""
    plan = plan if isinstance(plan, RunPlan) else RunPlan.from_dict(dict(plan))
    s = dict(ref.get("summary") or {})
    parent = cs.get(ref["parent_version"]) if ref.get("parent_version") else None
    inputs = [source_dataset(source, plan.files, partitions=plan.partitions,
                             rows=s.get("inputs"), bad_files=s.get("bad_files") or ())]
    frames = {"firings": ref["firings"]} if ref.get("firings") else None
    return Lineage(inputs, table_datasets(cs, frames),
                   run_facet(cs.pipeline, "run", fingerprint=cs.fingerprint, summary=s,
                             before=parent))


def for_audit(cs: Any, ref: Mapping[str, Any], validation: Mapping[str, Any] | None,
              stage: str = "audit") -> Lineage:
    """The audit: the staged firings with one assertion per expectation."""
    frames = {"firings": ref["firings"]} if ref.get("firings") else None
    return Lineage([assertions_dataset(cs, validation, frames)], [],
                   run_facet(cs.pipeline, stage, fingerprint=cs.fingerprint,
                             summary=ref.get("summary"),
                             version_before=ref.get("parent_version")))


def for_commit(cs: Any, source: Any, version: int, *, stage: str,
               summary: Mapping[str, Any] | None = None) -> Lineage:
    """A published version: the files it consumed (its input-manifest entries), the tables it
    wrote (rows, bytes, schema, version), its validation as assertions, the run facet."""
    commit = cs.get(int(version))
    if commit is None:
        return Lineage()
    stats = {**commit.stats, **dict(summary or {}), "version": commit.version,
             "published": True}
    parent_version = commit.record.get("parent_version")
    before = cs.get(parent_version) if parent_version else None
    try:   # a rebuild's generation commit carries its line's manifest: all of it is new
        files = [f for f in cs.manifest(commit)
                 if commit.kind != "run" or f.version == commit.version]
    except StateError:
        files = []
    details = CommitDetails.of(commit.extra)
    inputs = [source_dataset(source, files, partitions=stats.get("partitions") or (),
                             rows=stats.get("inputs"), bad_files=stats.get("bad_files") or ())]
    if details.validation is not None:
        inputs.append(assertions_dataset(cs, details.validation, details.frames))
    stats.setdefault("publish_on_failure", details.publish_on_failure)
    return Lineage(inputs, table_datasets(cs, details.frames, version=commit.version),
                   run_facet(cs.pipeline, stage, fingerprint=commit.fingerprint, summary=stats,
                             before=before, after=commit))


def for_report(cs: Any, report_uri: str) -> Lineage:
    """The report: the output tables at their current version in, the HTML page out."""
    from openlineage.client.event_v2 import OutputDataset

    head = cs.latest(check_fingerprint=False)
    namespace, name = dataset_name(report_uri)
    return Lineage(table_datasets(cs, version=head.version if head else None, as_inputs=True),
                   [OutputDataset(namespace=namespace, name=name)],
                   run_facet(cs.pipeline, "report", fingerprint=cs.fingerprint,
                             before=head))


def for_gc(cs: Any, done: Mapping[str, Any] | None) -> Lineage:
    """Housekeeping: the checkpoint it cleaned (an output: objects were removed)."""
    from openlineage.client.event_v2 import OutputDataset

    namespace, name = dataset_name(cs.pipeline_store.root_uri)
    counts = {k: len(v) if isinstance(v, list) else v for k, v in (done or {}).items()
              if k.startswith("removed") or k.startswith("pruned")}
    facet = run_facet(cs.pipeline, "gc", fingerprint=cs.fingerprint)
    facet[RUN_KEY].counts = counts or None
    return Lineage([], [OutputDataset(namespace=namespace, name=name)], facet)
