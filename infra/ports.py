"""Loopback TCP ports for the local servers the project starts (S3, Spark Connect, Spark
standalone, Airflow): the one place that picks them.

A port from ``free_port`` is free when asked; the server that takes it binds it later, so
another process may take it in between (callers that start a server retry or fail loudly)."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A TCP port free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


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
