"""Fixtures for state tests: one object-store root per backend (file, moto, seaweed)."""

from __future__ import annotations

import pytest

from windowlib.state.stores import open_store

BACKENDS = [
    pytest.param("file", marks=pytest.mark.unit),
    pytest.param("moto", marks=pytest.mark.s3),
    pytest.param("seaweed", marks=pytest.mark.s3),
]
# moto enforces If-None-Match, but checks for the object and then writes it without a lock
# (moto/s3/responses.py, put_object): two concurrent conditional PUTs can both succeed. Races
# that assert mutual exclusion therefore run only where the conditional write is atomic.
ATOMIC_PUT_BACKENDS = [p for p in BACKENDS if p.values[0] != "moto"]


def pytest_generate_tests(metafunc) -> None:
    """Every test using ``root_uri`` (or ``store``) runs on all three backends, except that a
    test marked ``atomic_put`` skips moto (see ``ATOMIC_PUT_BACKENDS``)."""
    if "root_uri" in metafunc.fixturenames:
        atomic = metafunc.definition.get_closest_marker("atomic_put") is not None
        metafunc.parametrize("root_uri", ATOMIC_PUT_BACKENDS if atomic else BACKENDS,
                             indirect=True)


@pytest.fixture
def root_uri(request, tmp_path) -> str:
    """A fresh, empty root URI on the backend named by ``request.param``."""
    backend = request.param
    if backend == "file":
        return (tmp_path / "root").as_uri()
    server = request.getfixturevalue(f"{backend}_s3")
    return f"s3://{server.create_bucket()}/lake"


@pytest.fixture
def s3_settings(request):
    """S3Settings for the backend of ``root_uri`` (None for files)."""
    backend = request.node.callspec.params.get("root_uri")
    if backend in (None, "file"):
        return None
    return request.getfixturevalue(f"{backend}_s3").settings()


@pytest.fixture
def store(root_uri, s3_settings):
    return open_store(root_uri, s3_settings)
