"""Shared pytest configuration.

Tiers are pytest markers (see pyproject.toml): ``unit`` runs without a JVM; ``spark``, ``s3``,
``airflow`` and ``e2e`` start real services. Every test module declares its tier.

``make test`` runs ``pytest -n N --dist loadgroup``: how tests are grouped and ordered across
the workers is decided in ``tests/xdist_costs.py`` (module groups, split modules, heaviest
first).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=200, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

pytest_plugins = [
    "s3_servers",      # moto_s3 / seaweed_s3 fixtures (tests/s3_servers.py)
    "spark_session",   # the shared session-scoped `spark` fixture
    "spark_clusters",  # spark_cluster: a standalone master + 2 workers (tests/spark_clusters.py)
    "xdist_costs",     # groups and heaviest-first order for `-n N --dist loadgroup`
]
