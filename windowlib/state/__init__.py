"""Checkpoint storage: URIs, object stores, S3 settings, the versioned layout and the commit
protocol.

Every location is a :class:`Uri`. Small metadata (commit records, manifests) and listings go
through :class:`ObjectStore` (boto3 for S3); data files (pane state, outputs) are written by
Spark tasks under the URIs a :class:`Staging` hands out, with the Arrow filesystems of
``taskfs.py``. See ``checkpoint.py`` for the protocol.

Names load on first use (PEP 562), so code that only needs the URI type — the job registry at
DAG parse time — imports ``windowlib.state.uri`` without the store machinery.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CheckpointStore": "checkpoint", "Commit": "checkpoint", "RunRecord": "checkpoint",
    "Staging": "checkpoint", "FAULT_POINTS": "faults", "fault_point": "faults",
    "GcReport": "gc", "FORMAT_VERSION": "layout", "FileEntry": "manifest",
    "Manifest": "manifest", "FileStore": "objectstore", "ObjectInfo": "objectstore",
    "ObjectStore": "objectstore", "is_hidden": "objectstore", "validate_key": "paths",
    "validate_pipeline_name": "paths", "S3Settings": "s3config", "open_store": "stores",
    "Uri": "uri",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'windowlib.state' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"windowlib.state.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
