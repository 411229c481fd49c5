"""Output tables: each output of a pipeline is a Delta table (delta-rs) at
``{checkpoint}/{pipeline}/tables/{name}/`` (layout: :mod:`windowlib.state.layout`).

Invariants:

- The commit record stays the truth of windowlib's own protocol. A table shows one committed
  checkpoint version: :meth:`OutputTable.publish` brings it in step with **one** Delta log
  commit, so a table reader sees the previous or the new version, never a mix. No data moves:
  the commit registers the Parquet files the run's Spark tasks staged below the table root
  (sizes and row counts from the commit record) and removes the ones the version no longer
  shows (a rebuild replaces them all).
- Monotone and idempotent: every table commit carries the Delta application transaction
  ``windowlib`` = the checkpoint version it shows (plus ``windowlib.*`` commit metadata). A
  publish of a version the table already shows, or has passed, does nothing. Commits never
  retry blindly: when another writer committed first, ours fails, the new snapshot is read and
  the plan made again, so a slow publisher never undoes a newer one.
- A schema change (a rebuild with another definition) is one overwrite commit: new schema and
  files together. Delta's own time travel reads older table versions while their files exist
  (``gc`` keeps the current generation's outputs; a superseded generation's go after
  retention).
- Compaction (:meth:`OutputTable.small_files`, :meth:`OutputTable.replace_files`) changes
  how a version's rows are stored, never which rows: one commit removes small files and adds
  the files that hold exactly their rows (``dataChange=false``, commit metadata
  ``windowlib.compacted``), against the version it planned from (a concurrent publish makes
  it fail; it is then skipped). Removed files stay on storage: windowlib's commit records
  name them, and time travel to older table versions reads them.
- Tables are created with a Delta checkpoint every 10 commits (``TABLE_CONFIGURATION``), so
  opening one replays at most 10 log entries however many versions it has.
- On ``s3://`` delta-rs commits with S3's conditional put (no lock service); credentials are
  handed to it in memory from :class:`S3Settings`, never logged.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from windowlib.core.errors import DefinitionError, StateError
from windowlib.state import layout as L
from windowlib.state.objectstore import ObjectStore
from windowlib.state.s3config import S3Settings
from windowlib.state.uri import Uri

__all__ = ["APP_ID", "META", "SMALL_FILE_BYTES", "OutputTable", "TableFile", "TableSnapshot",
           "TableState", "snapshot_files"]

APP_ID = "windowlib"        # the Delta application transaction naming the checkpoint version
META = "windowlib."         # prefix of windowlib's keys in Delta commit info and table properties
_ATTEMPTS = 8
SMALL_FILE_BYTES = 128 << 20   # files below this size are merged by compaction
# A Delta checkpoint every 10 commits (delta-rs' default is 100): opening a table replays the
# log since its last checkpoint, and a publish opens each table a few times, so with 100 its
# cost would grow over 100 publishes (measured: 1 -> 18 ms per open).
TABLE_CONFIGURATION = {"delta.checkpointInterval": "10"}


@dataclass(frozen=True)
class TableFile:
    """One data file of a table: ``path`` relative to the table root."""

    path: str
    bytes: int
    rows: int


@dataclass(frozen=True)
class TableSnapshot:
    """What a table must show for checkpoint ``version``: exactly ``files``, with ``schema``
    (a ``pyarrow.Schema``)."""

    version: int
    generation: int
    run_id: str
    files: tuple[TableFile, ...]
    schema: Any


@dataclass(frozen=True)
class TableState:
    """A table's current Delta version and the checkpoint version it shows."""

    delta_version: int
    checkpoint_version: int | None
    files: int


def _check_existed(dt: Any, uri: Any, as_of: datetime | str) -> None:
    """``TABLE_VERSION_NOT_FOUND`` unless the table had a version at ``as_of`` (delta-rs
    would answer with its first version for any earlier time)."""
    when = datetime.fromisoformat(as_of) if isinstance(as_of, str) else as_of
    if when.tzinfo is None:
        raise DefinitionError(f"as_of {as_of!r} needs a time zone (e.g. ...+00:00)",
                         code="ARGUMENT_INVALID")
    first_ms = min((int(h["timestamp"]) for h in dt.history() if "timestamp" in h), default=None)
    if first_ms is not None and when.timestamp() * 1000 < first_ms:
        first = datetime.fromtimestamp(first_ms / 1000, tz=when.tzinfo)
        raise StateError(f"table {uri} did not exist yet at {when.isoformat()} (its first "
                         f"version is from {first.isoformat()})", code="TABLE_VERSION_NOT_FOUND")


def _unavailable(where: str, exc: BaseException) -> StateError:
    return StateError(f"output table {where}: {type(exc).__name__}: {exc}",
                      code="TABLE_UNAVAILABLE")


class OutputTable:
    """The Delta table of output ``name`` of the pipeline rooted at ``pipeline_store``."""

    def __init__(self, pipeline_store: ObjectStore, name: str,
                 settings: S3Settings | None = None) -> None:
        if name not in L.TABLE_OUTPUTS:
            raise StateError(f"unknown table {name!r}; one of {L.TABLE_OUTPUTS}",
                             code="STATE_INVALID")
        self.name = name
        self.location = Uri.parse(pipeline_store.uri_for(L.table_prefix(name)))
        self.settings = settings
        self._current: Any = None       # current()'s handle

    def __repr__(self) -> str:
        return f"OutputTable({self.uri!r})"

    @property
    def uri(self) -> str:
        """The table's location (``file:///...`` or ``s3://...``): what Delta readers open."""
        return self.location.uri

    @property
    def delta_uri(self) -> str:
        """The location as delta-rs opens it (a local path for ``file://``)."""
        return self.location.arrow_path if self.location.scheme == "file" else self.location.uri

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs storage options for ``s3://`` (endpoint, region, credentials)."""
        if self.location.scheme == "file":
            return None
        settings = self.settings if self.settings is not None else S3Settings.resolve()
        opts = {"AWS_REGION": settings.region or "us-east-1"}
        if settings.endpoint_url:
            opts["AWS_ENDPOINT_URL"] = settings.endpoint_url
            if settings.endpoint_url.startswith("http://"):
                opts["AWS_ALLOW_HTTP"] = "true"
        creds = settings.frozen_credentials()
        if creds is not None:
            opts["AWS_ACCESS_KEY_ID"], opts["AWS_SECRET_ACCESS_KEY"], token = creds
            if token:
                opts["AWS_SESSION_TOKEN"] = token
        return opts

    def relative(self, file_uri: str) -> str | None:
        """``file_uri``'s path below the table root, or ``None`` when it is not below it."""
        root = self.location.uri.rstrip("/") + "/"
        return file_uri[len(root):] if file_uri.startswith(root) else None

    def file_uri(self, path: str) -> str:
        return self.location.child(path).uri

    # -- reading ----------------------------------------------------------------------------

    def open(self, *, checkpoint_version: int | None = None, delta_version: int | None = None,
             as_of: datetime | str | None = None) -> Any:
        """The ``deltalake.DeltaTable`` (``None`` before the first publish), at its current
        version, or the one that showed ``checkpoint_version``, or Delta version
        ``delta_version``, or the one current at ``as_of`` (``TABLE_VERSION_NOT_FOUND``): a
        handle of the caller's own."""
        dt = self._load()
        if dt is None or (checkpoint_version is None and delta_version is None
                          and as_of is None):
            return dt
        if checkpoint_version is not None:
            found = {h.get(f"{META}version"): h["version"] for h in dt.history()}
            if checkpoint_version not in found:
                shown = sorted(v for v in found if isinstance(v, int))
                raise StateError(f"table {self.uri} never showed checkpoint version "
                                 f"{checkpoint_version} (it showed {shown})",
                                 code="TABLE_VERSION_NOT_FOUND")
            delta_version = found[checkpoint_version]
        if delta_version is None and as_of is not None:
            _check_existed(dt, self.uri, as_of)
        target = delta_version if delta_version is not None else as_of
        try:
            dt.load_as_version(target)
        except Exception as exc:
            raise StateError(f"table {self.uri} has no version {target!r} ({exc})",
                             code="TABLE_VERSION_NOT_FOUND") from None
        return dt

    def current(self) -> Any:
        """The table at its current version (``None`` before the first publish) as a handle
        this object keeps: opened once, then brought up to date by each call (reading only
        the log entries added since; an open replays the log from its last checkpoint). For
        one thread's sequential work, such as a publish and what follows it; a handle that
        must stay at its version while others commit comes from :meth:`open`."""
        self._current = self._updated(self._current)
        return self._current

    def _updated(self, dt: Any) -> Any:
        """``dt`` brought up to date (only the log entries since its version), or a new open
        when there is none or that fails (a replaced or damaged log: the open reports it)."""
        if dt is not None:
            try:
                dt.update_incremental()
                return dt
            except Exception:
                pass
        return self._load()

    def _load(self) -> Any:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.delta_uri, storage_options=self.storage_options())
        except TableNotFoundError:
            return None
        except Exception as exc:   # delta-rs errors: storage, a damaged log...
            raise _unavailable(self.uri, exc) from None

    def state(self, dt: Any = None) -> TableState | None:
        """Where the table stands (``None`` before the first publish)."""
        dt = dt if dt is not None else self.open()
        if dt is None:
            return None
        return TableState(dt.version(), dt.transaction_version(APP_ID), len(self.files(dt)))

    def files(self, dt: Any) -> list[TableFile]:
        """The data files of ``dt``'s loaded version (from its log: no listing)."""
        import pyarrow as pa

        actions = pa.table(dt.get_add_actions(flatten=True))
        rows = actions.column("num_records").to_pylist() if "num_records" in \
            actions.column_names else [None] * actions.num_rows
        return [TableFile(p, int(b), int(r or 0)) for p, b, r in
                zip(actions.column("path").to_pylist(),
                    actions.column("size_bytes").to_pylist(), rows)]

    # -- publishing -------------------------------------------------------------------------

    def publish(self, snapshot: TableSnapshot) -> TableState:
        """Make the table show ``snapshot`` with one Delta commit (nothing when it already
        shows that checkpoint version or a newer one). Raises ``TABLE_UNAVAILABLE``."""
        from deltalake.exceptions import CommitFailedError

        last: BaseException | None = None
        for _ in range(_ATTEMPTS):
            dt = self.open()
            current = self.state(dt)
            if current is not None and current.checkpoint_version is not None \
                    and current.checkpoint_version >= snapshot.version:
                return current
            try:
                self._commit(dt, snapshot)
            except CommitFailedError as exc:    # another writer committed: plan again
                last = exc
                continue
            except Exception as exc:
                if dt is None and "already exists" in str(exc).lower():
                    last = exc                  # another writer created it: plan again
                    continue
                raise _unavailable(self.uri, exc) from None
            done = self._committed(dt)
            assert done is not None
            return done
        raise _unavailable(self.uri, last or RuntimeError("no attempt made"))

    def _committed(self, dt: Any = None) -> TableState | None:
        """The state after a commit of ours (through ``dt``, a handle of our own brought up
        to date here; else a new open); a table created without windowlib's configuration
        (an older windowlib) gets it, in one more commit."""
        dt = self._updated(dt)
        if dt is not None and any(dt.metadata().configuration.get(k) != v
                                  for k, v in TABLE_CONFIGURATION.items()):
            with contextlib.suppress(Exception):    # else the log replay stays longer
                dt.alter.set_table_properties(TABLE_CONFIGURATION)
            dt = self.open()
        return self.state(dt)

    def _commit(self, dt: Any, snapshot: TableSnapshot) -> None:
        from deltalake import Schema
        from deltalake.transaction import (
            AddAction,
            CommitProperties,
            RemoveAction,
            Transaction,
            create_table_with_add_actions,
        )

        now_ms = int(time.time() * 1000)
        props = CommitProperties(
            custom_metadata={f"{META}version": snapshot.version,
                             f"{META}generation": snapshot.generation,
                             f"{META}run_id": snapshot.run_id},
            max_commit_retries=0, app_transactions=[Transaction(APP_ID, snapshot.version)])
        schema = Schema.from_arrow(snapshot.schema)

        def add(f: TableFile) -> AddAction:
            return AddAction(f.path, f.bytes, {}, now_ms, True, f'{{"numRecords":{f.rows}}}')

        if dt is None:
            create_table_with_add_actions(
                self.delta_uri, schema, [add(f) for f in snapshot.files], mode="error",
                name=self.name, configuration=TABLE_CONFIGURATION,
                storage_options=self.storage_options(), commit_properties=props)
            return
        if dt.schema().to_json() != schema.to_json():
            dt.create_write_transaction([add(f) for f in snapshot.files], "overwrite", schema,
                                        commit_properties=props)
            return
        present = {f.path for f in self.files(dt)}
        wanted = {f.path for f in snapshot.files}
        actions: list[Any] = [add(f) for f in snapshot.files if f.path not in present]
        actions += [RemoveAction(p, True, now_ms) for p in sorted(present - wanted)]
        dt.create_write_transaction(actions, "append", schema, commit_properties=props)

    # -- compaction ---------------------------------------------------------------------------

    def small_files(self, dt: Any, budget: int) -> list[TableFile]:
        """What compaction merges: nothing while ``dt``'s version holds at most ``budget``
        files smaller than ``SMALL_FILE_BYTES``; beyond, the smallest of them, as many as
        bring the count down to half the budget (merged into one file). Merging the smallest
        first is size-tiered: a merged file is merged again only once it is among the
        smallest, so a row is rewritten a few times (about logarithmic in
        ``SMALL_FILE_BYTES`` over a run's file size), not at every compaction; files at or
        above the size are never rewritten."""
        small = sorted((f for f in self.files(dt) if f.bytes < SMALL_FILE_BYTES),
                       key=lambda f: (f.bytes, f.path))
        if len(small) <= budget:
            return []
        return small[:len(small) - budget // 2 + 1]

    def replace_files(self, dt: Any, removed: Sequence[TableFile],
                      added: Sequence[TableFile]) -> TableState | None:
        """One commit on top of ``dt``'s version: ``removed`` out, ``added`` (the same rows)
        in, the checkpoint version unchanged. ``None`` when another writer committed since
        ``dt`` was read (nothing changed; the caller drops ``added``). Raises
        ``TABLE_UNAVAILABLE``."""
        from deltalake.exceptions import CommitFailedError
        from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction

        present = {f.path for f in self.files(dt)}
        if not removed or not {f.path for f in removed} <= present \
                or sum(f.rows for f in removed) != sum(f.rows for f in added):
            raise StateError(f"table {self.uri}: a compaction must replace files of the "
                             "version with the same rows", code="STATE_INVALID")
        shown = dt.transaction_version(APP_ID)
        now_ms = int(time.time() * 1000)
        props = CommitProperties(
            custom_metadata={f"{META}compacted": len(removed), f"{META}shows": shown},
            max_commit_retries=0,
            app_transactions=[Transaction(APP_ID, shown)] if shown is not None else None)
        actions: list[Any] = [AddAction(f.path, f.bytes, {}, now_ms, False,
                                        f'{{"numRecords":{f.rows}}}') for f in added]
        actions += [RemoveAction(f.path, False, now_ms) for f in removed]
        try:
            dt.create_write_transaction(actions, "append", dt.schema(), commit_properties=props)
        except CommitFailedError:
            return None
        except Exception as exc:
            raise _unavailable(self.uri, exc) from None
        return self._committed()


def snapshot_files(table: OutputTable, uris: Sequence[tuple[str, int, int]]
                   ) -> tuple[TableFile, ...] | None:
    """``(uri, bytes, rows)`` of committed files as table files, or ``None`` when one is not
    below the table root (staged by a windowlib before tables: a rebuild brings the table)."""
    out = []
    for uri, size, rows in uris:
        rel = table.relative(uri)
        if rel is None:
            return None
        out.append(TableFile(rel, size, rows))
    return tuple(out)
