"""Ports for the local servers come from below the kernel's ephemeral range, which outgoing
connections (boto3, py4j, Spark's shuffle) draw from: such a connection can no longer take a
port between ``free_port`` and the server's bind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from infra import ports

pytestmark = pytest.mark.unit


def _ephemeral_range() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


linux_only = pytest.mark.skipif(not Path("/proc/sys/net/ipv4/ip_local_port_range").exists(),
                                reason="no Linux ephemeral port range to stay out of")


@linux_only
def test_a_picked_port_is_outside_the_ephemeral_range_and_can_be_bound() -> None:
    low, high = _ephemeral_range()
    picked = {ports.free_port() for _ in range(20)}
    assert all(not low <= port <= high for port in picked), picked
    assert len(picked) > 1                     # picked at random, not the same port each time
    for port in picked:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((ports.HOST, port))


@linux_only
def test_a_port_in_use_is_never_picked(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((ports.HOST, 0))
        taken.listen()
        busy = int(taken.getsockname()[1])
        first_two = [busy, busy]
        pick = ports._candidate
        monkeypatch.setattr(ports, "_candidate",
                            lambda low, high: first_two.pop() if first_two else pick(low, high))
        assert ports.free_port() != busy
        assert not first_two                   # both offers of the busy port were refused
