"""Starting the local S3 server when a port it was given is taken between the pick and the
bind (another process, or an outgoing connection's ephemeral port): an automatically chosen
port is picked again, and a failure names SeaweedFS's own reason instead of only a log path
(the log may sit on a disk that is gone by the time anyone reads it)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

import infra.local_s3 as local_s3
from infra.local_s3 import LocalSeaweed
from windowlib.core.errors import StateError

pytestmark = pytest.mark.s3


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def test_a_chosen_port_taken_before_the_server_binds_it_is_chosen_again(
        tmp_path: Path, busy_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[int] = []
    pick = local_s3.free_port

    def first_one_taken() -> int:            # the master's port is the first one picked
        port = busy_port if not handed else pick()
        handed.append(port)
        return port

    monkeypatch.setattr(local_s3, "free_port", first_one_taken)
    with LocalSeaweed(data_dir=tmp_path / "s3", min_free_mib=1, buckets=("retried",)) as server:
        client = server.client()
        client.put_object(Bucket="retried", Key="k", Body=b"v")
        assert client.get_object(Bucket="retried", Key="k")["Body"].read() == b"v"
    assert handed.count(busy_port) == 1 and len(handed) > 8   # a second set of ports


def test_a_taken_port_the_caller_asked_for_fails_with_seaweeds_reason(
        tmp_path: Path, busy_port: int) -> None:
    server = LocalSeaweed(data_dir=tmp_path / "s3", min_free_mib=1, s3_port=busy_port)
    with pytest.raises(StateError) as caught:
        server.start(timeout_s=30)
    message = str(caught.value)
    assert caught.value.code == "S3_SERVER_FAILED"
    assert f"{busy_port}" in message and "already in use" in message
    assert server.secret_access_key not in message
    assert server._proc is None
