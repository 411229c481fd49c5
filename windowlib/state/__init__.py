"""Checkpoint storage: object stores, S3 settings, the versioned layout and the commit protocol.

Every location is a :class:`Uri`. Small metadata (commit records, manifests) and listings go
through :class:`ObjectStore` (boto3 for S3); data files (pane state, outputs) are written by
Spark tasks under the URIs a :class:`Staging` hands out, with the Arrow filesystems of
``taskfs.py``. See ``checkpoint.py`` for the protocol.
"""

from windowlib.state.checkpoint import CheckpointStore, Commit, RunRecord, Staging
from windowlib.state.faults import FAULT_POINTS, fault_point
from windowlib.state.gc import GcReport
from windowlib.state.layout import FORMAT_VERSION
from windowlib.state.manifest import FileEntry, Manifest
from windowlib.state.objectstore import FileStore, ObjectInfo, ObjectStore, is_hidden
from windowlib.state.paths import validate_key, validate_pipeline_name
from windowlib.state.s3config import S3Settings
from windowlib.state.stores import open_store
from windowlib.state.uri import Uri

__all__ = [
    "FAULT_POINTS", "FORMAT_VERSION", "CheckpointStore", "Commit", "FileEntry", "FileStore",
    "GcReport", "Manifest", "ObjectInfo", "ObjectStore", "RunRecord", "S3Settings", "Staging",
    "Uri", "fault_point", "is_hidden", "open_store", "validate_key", "validate_pipeline_name",
]
