"""Loopback TCP ports for the local servers the project starts (S3, Spark Connect, Spark
standalone, Airflow): the one place that picks them.

A port from ``free_port`` is free when asked; the server that takes it binds it later, so
another process may take it in between (callers that start a server retry or fail loudly). It
comes from below the kernel's ephemeral range, where outgoing connections take their local
ports, so only another server's explicit bind can race for it."""

from __future__ import annotations

import random
import socket
from pathlib import Path

HOST = "127.0.0.1"

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 20000            # well above the ports system services listen on
_TRIES = 50
_RANDOM = random.SystemRandom()  # not the `random` module's state, which tests may seed


def free_port(host: str = HOST) -> int:
    """A TCP port free on ``host`` right now: a random one below the ephemeral range where
    the kernel has one, else one the OS picks."""
    span = _unclaimed_span()
    if span is not None:
        for _ in range(_TRIES):
            port = _candidate(*span)
            if is_port_free(port, host):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _unclaimed_span() -> tuple[int, int] | None:
    """``[_LOWEST, first ephemeral port)``, or ``None`` when it is unknown or too narrow."""
    try:
        first_ephemeral = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return (_LOWEST, first_ephemeral - 1) if first_ephemeral > _LOWEST + 1000 else None


def _candidate(low: int, high: int) -> int:
    return _RANDOM.randint(low, high)


def is_port_free(port: int, host: str = HOST) -> bool:
    """Whether ``port`` can be bound on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def accepts_connections(port: int, host: str = HOST, timeout_s: float = 1.0) -> bool:
    """Whether a server listens on ``host:port`` (a TCP connect within ``timeout_s``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        return s.connect_ex((host, port)) == 0
