"""GX Data Docs the way windowlib publishes them: every run kept, named by its run id, offline.

GX 1.24's ephemeral context keeps validation results in memory, so each Data Docs build listed
only the latest run (older pages stayed on disk, unlinked); its pages load Bootstrap,
bootstrap-table, jQuery, Font Awesome and Vega from CDNs and its navbar logo from S3; and a
``ValidationDefinition.run`` without a run id is named ``__none__``. Here:

* ``stores(docs_dir)``: the validation results store is a filesystem store under
  ``<docs_dir>/_validation_results`` (GX's own ``TupleFilesystemStoreBackend``), so every run
  validated into that site keeps its results and pages; each build renders only the new run's
  pages and the index, which lists the newest ``INDEX_RESULTS`` results (GX reads each listed
  result per build; older pages stay, and the run report links every run to its own);
* ``site(docs_dir)``: the site's page and index views are GX's Jinja views with windowlib's
  templates (``templates/datadocs``) first on the loader path: no ``<link>``, ``<script>`` or
  ``<img>`` refers to the network; tables GX draws with bootstrap-table are rendered to plain
  HTML when the page is built; a small bundled stylesheet replaces Bootstrap;
* every view compiles its templates once per machine, not once per view and process: their
  Jinja environments (all configured alike) share Jinja's file-system bytecode cache, in
  files of their own (keyed by template path, checked against the source's checksum; a build
  compiled every template again for each of its three views);
* ``run_name(run_id)``: the run name GX files and shows a validation under — windowlib's run
  id, with every character outside ``[A-Za-z0-9_.:@+=-]`` replaced by ``_`` (GX makes it a
  path segment).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

from great_expectations.render.view import DefaultJinjaIndexPageView, DefaultJinjaPageView
from jinja2 import ChoiceLoader, FileSystemBytecodeCache, FileSystemLoader

TEMPLATES = Path(__file__).resolve().parent / "templates" / "datadocs"
RESULTS_DIR = "_validation_results"
# GX's index reads every listed result on each build: the index lists the newest 200 results
# (100 runs of the two validated frames, firings and windows); older runs keep their pages,
# linked from the run report
INDEX_RESULTS = 200
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:@+=-]")


def run_name(run_id: Any) -> str:
    """The GX run name of windowlib run ``run_id`` (``unnamed`` when there is none)."""
    name = _UNSAFE.sub("_", str(run_id or "")).strip(".") or "unnamed"
    return name[:200]


class _TemplateCache(FileSystemBytecodeCache):
    """Jinja's compiled-template cache in its per-user directory; an optimisation only, so a
    cache file that cannot be written is skipped."""

    def dump_bytecode(self, bucket: Any) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


_CACHE: list[_TemplateCache | None] = []


def _template_cache() -> _TemplateCache | None:
    if not _CACHE:
        try:            # Jinja's default directory: <tmp>/_jinja2-cache-<uid>, 0700, owner checked
            _CACHE.append(_TemplateCache(pattern="__windowlib_datadocs_%s.cache"))
        except (OSError, RuntimeError):
            _CACHE.append(None)
    return _CACHE[0]


def _offline(env: Any) -> None:
    env.loader = ChoiceLoader([FileSystemLoader(str(TEMPLATES)), env.loader])
    env.bytecode_cache = _template_cache()


class OfflinePageView(DefaultJinjaPageView):
    """GX's page view (validation results, suites) with windowlib's offline templates."""

    def __init__(self, custom_styles_directory: str | None = None,
                 custom_views_directory: str | None = None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        _offline(self.env)


class OfflineIndexPageView(DefaultJinjaIndexPageView):
    """GX's site index view with windowlib's offline templates."""

    def __init__(self, custom_styles_directory: str | None = None,
                 custom_views_directory: str | None = None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        _offline(self.env)


def _view(cls: type) -> dict[str, str]:
    return {"module_name": __name__, "class_name": cls.__name__}


def site(docs_dir: Path) -> dict[str, Any]:
    """The ``SiteBuilder`` config of a Data Docs site at ``docs_dir`` (see the module
    docstring)."""
    page = _view(OfflinePageView)
    return {
        "class_name": "SiteBuilder", "show_how_to_buttons": False,
        "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                          "base_directory": str(docs_dir)},
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder",
                               "validation_results_limit": INDEX_RESULTS,
                               "view": _view(OfflineIndexPageView)},
        "site_section_builders": {"expectations": {"view": page},
                                  "validations": {"view": page},
                                  "profiling": "None"}}


def stores(defaults: Any, docs_dir: Path | None) -> dict[str, Any]:
    """GX store configs: ``defaults``' (in memory), with the validation results kept on disk
    under ``<docs_dir>/_validation_results`` when there is a site."""
    out = dict(defaults.stores)
    if docs_dir is not None:
        out[defaults.validation_results_store_name] = {
            "class_name": "ValidationResultsStore",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                              "base_directory": str(docs_dir / RESULTS_DIR)}}
    return out


__all__ = ["INDEX_RESULTS", "RESULTS_DIR", "OfflineIndexPageView", "OfflinePageView",
           "run_name", "site", "stores"]
