"""Ship windowlib and a pipeline's own modules to the executors of a Spark cluster.

On a ``local[...]`` master the Python workers are children of the driver's machine and
environment: they import what the driver imports, and nothing is shipped. On a cluster
(``spark://``, YARN, Kubernetes, or a Spark Connect server attached to one) an executor imports
only what its Python environment holds. ``ship_code(spark, modules)`` zips the top-level
package (or single-file module) of ``windowlib`` and of each named module, and adds the zip to
the application: ``SparkContext.addPyFile`` for a classic session, ``addArtifacts(...,
pyfile=True)`` for a Connect session. Spark's Python worker puts such files at the front of
``sys.path`` (before site-packages), so executors run the driver's code even when another
version is installed on them.

Invariants:
- Archives hold the ``.py`` files of the package only (no ``__pycache__``, no data files); one
  archive per package and content, named ``{package}-{sha256[:16]}.zip`` in a private temp
  directory, built at most once per process. Changed sources give a new name.
- Idempotent per session: shipping the same archive to the same session twice does nothing.
- ``code_digest(modules)`` names the code ``ship_code(spark, modules)`` ships (the same
  packages and the same digest rule as the archives' names): a long-lived session that ran
  one version of the code is reused only by callers with the same digest, because a session
  that already holds an older archive of a package may keep importing it.
- A module that cannot be found or has no source file on the driver is
  ``ExecutionError(MODULE_UNAVAILABLE)`` naming it (nothing is shipped for it).
- Executors that still miss a module report it as ``MODULE_UNAVAILABLE`` through
  ``errors.reraise`` (a ``ModuleNotFoundError`` in a task).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from windowlib.core.errors import ExecutionError

__all__ = ["code_archive", "code_digest", "is_local_master", "ship_code"]

_LOCK = threading.Lock()
_ARCHIVES: dict[tuple[str, str], Path] = {}      # (package, digest) -> zip
_SHIPPED: dict[str, set[str]] = {}                # application / Connect session id -> names
_DIR: Path | None = None


def is_local_master(spark: Any) -> bool:
    """Whether ``spark``'s master is ``local[...]`` (also asked of a Connect server)."""
    try:
        return str(spark.conf.get("spark.master", "local")).startswith("local")
    except Exception:   # pragma: no cover - restricted Connect servers: assume a cluster
        return False


def _sources(name: str) -> tuple[Path, list[tuple[Path, str]]]:
    """The top-level package of module ``name``: its root and ``(file, arcname)`` pairs."""
    top = name.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ExecutionError(f"cannot ship module {top!r} to the Spark executors: it is not "
                             "importable from Python source on the driver",
                             code="MODULE_UNAVAILABLE")
    origin = Path(spec.origin)
    if not spec.submodule_search_locations:            # a single-file module
        return origin.parent, [(origin, origin.name)]
    root = origin.parent
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return root.parent, [(p, p.relative_to(root.parent).as_posix()) for p in files]


def _digest(files: list[tuple[Path, str]]) -> str:
    digest = hashlib.sha256()
    for path, arcname in files:
        digest.update(arcname.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _packages(modules: Iterable[str]) -> list[str]:
    """The top-level packages ``ship_code`` ships for ``modules``: windowlib first."""
    return list(dict.fromkeys(["windowlib", *(m.split(".")[0] for m in modules if m)]))


def code_digest(modules: Iterable[str] = ()) -> str:
    """One digest of the sources of windowlib and ``modules``' top-level packages (what
    ``ship_code(spark, modules)`` ships); raises ``MODULE_UNAVAILABLE`` like it."""
    parts = [f"{name}-{_digest(_sources(name)[1])}" for name in _packages(modules)]
    return hashlib.sha256(" ".join(parts).encode()).hexdigest()[:16]


def code_archive(module: str) -> Path:
    """A zip of the top-level package (or module) of ``module``, built once per content."""
    global _DIR
    _, files = _sources(module)
    top = module.split(".")[0]
    key = (top, _digest(files))
    with _LOCK:
        cached = _ARCHIVES.get(key)
        if cached is not None and cached.exists():
            return cached
        if _DIR is None:
            _DIR = Path(tempfile.mkdtemp(prefix="windowlib-ship-"))
        target = _DIR / f"{top}-{key[1]}.zip"
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, arcname in files:
                zf.write(path, arcname)
        partial.replace(target)
        _ARCHIVES[key] = target
        return target


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (its server may run on another machine)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def ship_code(spark: Any, modules: Iterable[str] = (), *, force: bool = False) -> list[str]:
    """Make ``windowlib`` and ``modules`` importable on ``spark``'s executors.

    Does nothing on a local master unless ``force``. Returns the archive names added by this
    call (empty when everything was shipped before). Raises
    ``ExecutionError(MODULE_UNAVAILABLE)`` for a module the driver cannot import from source.
    """
    if not force and is_local_master(spark):
        return []
    archives = [code_archive(name) for name in _packages(modules)]
    connect = is_connect(spark)
    # an application (classic) or a Connect session; never id(): ids of dead objects recur
    holder = str(spark.session_id) if connect else str(spark.sparkContext.applicationId)
    added = []
    with _LOCK:
        done = _SHIPPED.setdefault(holder, set())
        for archive in archives:
            if archive.name in done:
                continue
            if connect:
                spark.addArtifacts(str(archive), pyfile=True)
            else:
                spark.sparkContext.addPyFile(str(archive))
            done.add(archive.name)
            added.append(archive.name)
    return added
