"""Checkpoint storage: object stores, S3 settings, the versioned layout and the commit protocol.

Small metadata (commit records, manifests) goes through :class:`ObjectStore` (boto3 for S3);
data files (pane state, outputs) are written by Spark tasks under the URIs a :class:`Staging`
hands out, e.g. with ``S3Settings.arrow_filesystem()``. See ``checkpoint.py`` for the protocol.
"""

from windowlib.state.checkpoint import CheckpointStore, Commit, RunRecord, Staging
from windowlib.state.faults import FAULT_POINTS, fault_point
from windowlib.state.gc import GcReport
from windowlib.state.layout import FORMAT_VERSION
from windowlib.state.manifest import FileEntry, Manifest
from windowlib.state.objectstore import FileStore, ObjectInfo, ObjectStore, open_store
from windowlib.state.paths import split_uri, validate_key, validate_pipeline_name
from windowlib.state.s3config import S3Settings

__all__ = [
    "FAULT_POINTS", "FORMAT_VERSION", "CheckpointStore", "Commit", "FileEntry", "FileStore",
    "GcReport", "Manifest", "ObjectInfo", "ObjectStore", "RunRecord", "S3Settings", "Staging",
    "fault_point", "open_store", "split_uri", "validate_key", "validate_pipeline_name",
]
