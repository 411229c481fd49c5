"""Pytest plugin: a real Spark standalone cluster on 127.0.0.1 (registered in
``tests/conftest.py``).

``spark_cluster`` (session scope, started on first use): one master and two workers of one
core and 1 GiB each (``infra.spark_cluster.start_cluster``), every port free and on loopback,
each worker with its own work and local directories and an environment without ``AWS_*``
variables or ``PYTHONPATH``. Stopped (every process group killed, directory removed) at the end
of the session, checked to leave nothing behind. Applications run in subprocesses: a test
process already holds the local ``spark`` session, and a process has one SparkContext.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infra.spark_cluster import SparkCluster, start_cluster


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkCluster]:
    cluster = start_cluster(2, cores=1, memory="1g")
    try:
        yield cluster
    finally:
        cluster.stop()
    # nothing left behind: every process (executors die with their worker's group), the dirs
    assert all(p.poll() is not None for p in cluster.processes)
    assert not cluster.workdir.exists()
