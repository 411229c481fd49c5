"""Pytest plugin (registered in ``tests/conftest.py``): cost-aware scheduling for
``pytest -n N --dist loadgroup`` (what ``make test`` runs).

Groups: a test module is one group (run on one worker, so its module-scoped fixtures — servers,
the demo run — are set up once), except the modules in ``SPLIT`` (tests independent of each
other, only session-scoped fixtures), whose tests are one group each; ``SPLIT_FUNCTIONS`` splits
a module by test function instead. Order: heaviest group first (longest processing time first,
from the estimates in ``COST_S``), so no long module starts last while the other worker idles.
Prefetch: xdist must queue one more test behind the running one (a worker runs a test only
once it knows the next); a worker busy with a long group is given the cheapest waiting group,
not the next heavy one, so heavy groups stay free for a worker that is about to idle.

Why not xdist's own ``loadgroup``: with pytest 9.2 and xdist 3.8 the ``xdist_group`` mark has
no effect (xdist renames ``item._nodeid``; pytest 9 derives ``nodeid`` elsewhere), so groups
are computed here from the node ids — on workers to order the collection, on the controller to
cut it into work units. Without ``--dist loadgroup`` this plugin changes nothing.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest

# Estimated seconds of a module (``path``) or of one test function (``path::name``, all its
# parametrizations together): wall time per module in a CI-profile run with 2 workers on the
# shared 2-core machine (load 15-30, so ~2-3x a quiet machine), the airflow/jobs/incremental
# modules from earlier notes. Only the order they induce matters; unlisted tests count
# DEFAULT_TEST_S each. Re-measure with `--durations=0` when a module changes a lot.
# The figures predate C1-only test JVMs (tests/spark_session.py), which made the JVM-heavy
# modules measured 18-50 % cheaper in wall time (test_crash_safety most, test_connect's long-lived
# server least; the Airflow services module 23 % less CPU, its wall time mostly waits); they are
# kept as they are, since the order they induce is what counts, until re-measured in CI.
COST_S: dict[str, float] = {
    "tests/spark/test_connect.py": 950,
    "tests/spark/test_cluster.py": 520,     # a 2-worker cluster + SeaweedFS; 3 applications
    "tests/spark/test_transcripts_spark.py": 900,        # + 9 session transcripts (panes)
    "tests/spark/test_differential_properties.py": 380,    # 150 examples under CI
    "tests/spark/test_pane_path.py": 135,   # 30 examples under CI (+ 10 of sessions)
    "tests/spark/test_session_sql.py": 60,  # 15 examples under CI
    "tests/spark/test_hot_key_memory.py": 60,   # 1M-element key twice + a capped session
    "tests/state/test_state_crash.py": 600,    # 850 before the reference was shared
    "tests/spark/test_frames.py": 610,
    "tests/spark/test_native_path.py": 600,
    "tests/spark/test_incremental_splits.py::test_forty_eight_hourly_runs_equal_one_run": 450,
    "tests/spark/test_incremental_splits.py::test_any_grouping_of_partitions_into_runs_"
    "equals_one_run": 150,
    "tests/state/test_state_commit.py": 360,
    "tests/airflow/test_services_e2e.py": 340,
    "tests/spark/test_state_frames.py": 300,
    "tests/spark/test_crash_safety.py": 300,
    "tests/state/test_state_gc.py": 270,
    "tests/jobs/test_demo.py": 260,
    "tests/airflow/test_conflict_recovery.py": 240,
    "tests/airflow/test_dag_runs.py": 220,
    "tests/airflow/test_dag_operator_day.py": 200,    # a scheduled run and a backfill DAG run
    "tests/spark/test_incremental_s3.py": 200,
    "tests/spark/test_tables.py": 200,      # incremental runs, a rebuild, catalog + DuckDB
    "tests/state/test_state_tables.py": 150,    # Delta publishes on file, moto, SeaweedFS
    "tests/spark/test_general_differential.py": 170,
    "tests/airflow/test_dag_integrity.py": 145,    # one interpreter for the DAG files
    "tests/spark/test_incremental_concurrency.py": 160,
    "tests/airflow/test_dag_connect.py": 150,
    "tests/airflow/test_dag_runs_s3.py": 120,
    "tests/airflow/test_dag_spark_submit.py": 420,    # local[2], a cluster, Connect on it
    "tests/airflow/test_dag_connections.py": 75,      # SeaweedFS + the maintenance DAG
    "tests/docs/test_docs_examples.py": 105,
    "tests/quality/test_validate.py": 180,     # GX validations, two Data Docs sites
    "tests/spark/test_incremental.py": 100,
    "tests/spark/test_integrity_faults.py": 200,    # 8 damaged lakes; every case on SeaweedFS
    "tests/spark/test_corruption_property.py": 100,    # 12 trials + 1 example under CI
    "tests/spark/test_function_failures.py": 100,
    "tests/spark/test_lineage_direct.py": 90,    # three runs + an HTTP receiver (OpenLineage)
    "tests/spark/test_typed_outputs.py": 110,
    "tests/spark/test_incremental_native.py": 200,      # + early count pipelines
    "tests/spark/test_incremental_native_early.py": 90,   # 3 examples under CI
    "tests/spark/test_run_jobs.py": 90,      # warm native runs, jobs counted; 8 runs + gc
    "tests/state/test_state_objectstore.py": 80,
    "tests/unit/test_snapshot_restore.py": 70,
    "tests/state/test_state_s3config.py": 50,
    "tests/runs/test_cli.py": 25,     # CLI subprocesses, GX imported by run
    "tests/benchmarks/test_benchmark_scripts.py": 80,   # 5 scripts, a JVM each (tiny inputs)
}
DEFAULT_TEST_S = 0.5

# Modules whose tests are independent: each test is its own group.
SPLIT: frozenset[str] = frozenset({
    "tests/state/test_state_crash.py", "tests/state/test_state_commit.py",
    "tests/state/test_state_gc.py", "tests/state/test_state_objectstore.py",
    "tests/spark/test_frames.py", "tests/spark/test_crash_safety.py",
    "tests/spark/test_transcripts_spark.py", "tests/spark/test_general_differential.py",
    "tests/spark/test_native_path.py", "tests/spark/test_state_frames.py",
    "tests/spark/test_incremental_native.py", "tests/state/test_state_tables.py",
    "tests/benchmarks/test_benchmark_scripts.py",
})
# Modules split by test function (a function's parametrizations stay together).
SPLIT_FUNCTIONS: frozenset[str] = frozenset({"tests/spark/test_incremental_splits.py"})

# A worker whose queued tests are estimated above this is "busy": it prefetches cheap groups.
BUSY_S = 30.0


def _function_of(nodeid: str) -> str:
    path, _, rest = nodeid.partition("::")
    return f"{path}::{rest.split('[', 1)[0]}"


def group_of(nodeid: str) -> str:
    """The scheduling group of a test: its module, or itself / its function when split."""
    path = nodeid.split("::", 1)[0]
    if path in SPLIT:
        return nodeid
    if path in SPLIT_FUNCTIONS:
        return _function_of(nodeid)
    return path


def costs(nodeids: list[str]) -> dict[str, float]:
    """Estimated seconds per test: a ``COST_S`` entry shared evenly by the tests it names (the
    most specific entry: function before module), else ``DEFAULT_TEST_S``."""
    keys: dict[str, str | None] = {}
    for nodeid in nodeids:
        function, path = _function_of(nodeid), nodeid.split("::", 1)[0]
        keys[nodeid] = function if function in COST_S else path if path in COST_S else None
    shares: dict[str, int] = {}
    for key in keys.values():
        if key is not None:
            shares[key] = shares.get(key, 0) + 1
    return {n: COST_S[k] / shares[k] if k is not None else DEFAULT_TEST_S
            for n, k in keys.items()}


def _ours(config: pytest.Config) -> bool:
    """Whether this run is scheduled here: the controller sees ``--dist loadgroup``, an xdist
    worker sees ``loadgroup`` set by xdist (its own ``dist`` is reset to ``no``)."""
    return (getattr(config.option, "dist", "no") == "loadgroup"
            or bool(getattr(config.option, "loadgroup", False)))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist workers: order the collection heaviest group first (tests of a group keep
    their order). The controller cuts the work units in this order."""
    if not _ours(config):
        return
    cost = costs([item.nodeid for item in items])
    total: dict[str, float] = {}
    for item in items:
        group = group_of(item.nodeid)
        total[group] = total.get(group, 0.0) + cost[item.nodeid]
    rank = {g: i for i, g in enumerate(sorted(total, key=lambda g: -total[g]))}   # stable
    items.sort(key=lambda item: rank[group_of(item.nodeid)])


def _scheduler_class():
    from xdist.scheduler import LoadScopeScheduling

    class CostScheduling(LoadScopeScheduling):
        """LoadScope scheduling with ``group_of`` as the scope and cheap prefetches."""

        _cost: dict[str, float] | None = None

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

        def _pending_cost(self, node) -> float:
            if self._cost is None:
                self._cost = costs(list(self.collection or []))
            return sum(self._cost.get(n, DEFAULT_TEST_S)
                       for unit in self.assigned_work.get(node, {}).values()
                       for n, done in unit.items() if not done)

        def _assign_work_unit(self, node) -> None:
            busy = self._pending_cost(node) > BUSY_S
            queue: OrderedDict[str, dict[str, bool]] = self.workqueue
            scope, unit = queue.popitem(last=busy)   # busy: the cheapest (last) group
            self.assigned_work.setdefault(node, {})[scope] = unit
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(n) for n, done in unit.items()
                                    if not done])

    return CostScheduling


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if getattr(config.option, "dist", "no") != "loadgroup":
        return None
    config.option.loadscopereorder = False   # keep the workers' order (heaviest first)
    return _scheduler_class()(config, log)
