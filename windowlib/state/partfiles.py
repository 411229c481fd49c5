"""The Parquet part files one Spark task writes (``PartFiles``): named so that a retried task
attempt overwrites its own files, rolled over at a row limit, each recorded with its size and
SHA-256 (``checksums.py``). Runs inside tasks: pyarrow only."""

from __future__ import annotations

from typing import Any

from windowlib.state.checksums import HashingSink
from windowlib.state.taskfs import TaskFilesystem

__all__ = ["PartFiles"]


class PartFiles:
    """The Parquet part files one Spark task writes (inside the task): under each directory,
    ``part-{task:05d}-{token}-{seq:03d}.parquet`` — unique per write, deterministic per task, so
    a retried attempt overwrites its own files — rolled over at ``max_rows`` rows. ``close``
    returns one ``{"key", "path", "rows", "bytes", "sha256"}`` per file written (``key``: the
    caller's name for the directory's stream); the checksum is taken as the bytes are written
    (``checksums.HashingSink``)."""

    def __init__(self, fs: TaskFilesystem, task: int, token: str, max_rows: int) -> None:
        self.fs, self.task, self.token, self.max_rows = fs, task, token, max_rows
        self._filesystem: Any = None
        self._open: dict[str, list[Any]] = {}   # key -> [sink, writer, rows, seq, path]
        self._done: list[dict[str, Any]] = []

    def write(self, key: str, directory: str, batch: Any) -> None:
        import pyarrow.parquet as pq

        if self._filesystem is None:
            self._filesystem = self.fs.open()
        while batch.num_rows:
            state = self._open.get(key)
            if state is None or state[1] is None:
                seq = 0 if state is None else state[3] + 1
                if self.fs.scheme == "file":     # S3 has no directories to create
                    self._filesystem.create_dir(directory, recursive=True)
                path = f"{directory}/part-{self.task:05d}-{self.token}-{seq:03d}.parquet"
                sink = HashingSink(self._filesystem.open_output_stream(path))
                state = [sink, pq.ParquetWriter(sink, batch.schema), 0, seq, path]
                self._open[key] = state
            room = self.max_rows - state[2]
            state[1].write_batch(batch.slice(0, room))
            state[2] += min(room, batch.num_rows)
            batch = batch.slice(room)
            if state[2] >= self.max_rows:     # a file never holds more than max_rows
                self._close(key, state)

    def _close(self, key: str, state: list[Any]) -> None:
        sink, writer, rows, _, path = state
        writer.close()
        sink.close()
        state[1] = None
        self._done.append({"key": key, "path": path, "rows": rows, "bytes": sink.size,
                           "sha256": sink.sha256})

    def close(self) -> list[dict[str, Any]]:
        for key, state in self._open.items():
            if state[1] is not None:
                self._close(key, state)
        return self._done
