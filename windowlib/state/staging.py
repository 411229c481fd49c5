"""``Staging``: a run in progress — a unique prefix its files are written under, invisible
until :meth:`windowlib.state.checkpoint.CheckpointStore.commit` publishes it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from windowlib.core.errors import DefinitionError
from windowlib.state import layout as L
from windowlib.state.records import Commit

if TYPE_CHECKING:
    from windowlib.state.checkpoint import CheckpointStore

_NAME = re.compile(r"[a-z0-9_]{1,64}")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class Staging:
    """A run in progress: a unique prefix for its files. Not visible until committed."""

    checkpoint: CheckpointStore
    version: int
    generation: int
    run_id: str
    token: str
    parent: Commit | None
    names: set[str] = field(default_factory=set)
    state: str = "open"  # open | committed | aborted

    @property
    def key(self) -> str:
        """The staging prefix, relative to the pipeline root."""
        return self.checkpoint._line_key(L.staging_prefix(self.version, self.token))

    def key_for(self, name: str) -> str:
        """Where data set ``name`` is staged: ``{key}/{name}``, or for a table output
        (``layout.TABLE_OUTPUTS``) ``tables/{name}/{key}``, below its table's root."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise DefinitionError(f"staged prefix name {name!r} must match [a-z0-9_]+",
                                  code="NAME_INVALID")
        if name in L.TABLE_OUTPUTS:
            return f"{L.table_prefix(name)}/{self.key}"
        return f"{self.key}/{name}"

    def uri(self, name: str) -> str:
        """Absolute URI (no trailing slash) where this run writes the data set ``name``."""
        key = self.key_for(name)
        self.names.add(name)
        return self.checkpoint.pipeline_store.uri_for(key)

    def write_json(self, name: str, obj: Any) -> str:
        """Stage a small JSON document ``<staging>/<name>.json``; returns its key."""
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in L.TABLE_OUTPUTS:
            raise DefinitionError(f"staged document name {name!r} must match [a-z0-9_]+ and "
                                  "name no output", code="NAME_INVALID")
        key = f"{self.key}/{name}.json"
        self.checkpoint.pipeline_store.write_bytes(key, json.dumps(obj, sort_keys=True).encode())
        return key

    def abort(self) -> int:
        """Delete everything staged (idempotent); returns how many objects were removed."""
        self.state = "aborted"
        store = self.checkpoint.pipeline_store
        return sum(store.delete_prefix(prefix) for prefix in L.run_prefixes(self.key))
