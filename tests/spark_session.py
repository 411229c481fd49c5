"""The shared SparkSession fixture (a pytest plugin, registered in ``tests/conftest.py``): one
local session for the whole test run, whichever tier asks for it first.

Starting a session costs 6-19 s here (see ``../shared/NOTES.md``), so it is session-scoped.

Test JVMs compile with C1 only (``-XX:TieredStopAtLevel=1`` in ``SPARK_SUBMIT_OPTS``, set when
this plugin loads, appended to any value already there): every JVM that ``spark-submit``
launches from the test processes and their subprocesses — this session, CLI and ``dag.test()``
subprocesses, Airflow task processes, Connect servers, submitted applications — but not the
standalone cluster's master, workers and executors. Test JVMs live seconds to minutes on
small data, where C2's compile threads cost more CPU than its code saves. Measured at load 7-13
(before -> after, one process): ``test_crash_safety`` 230 s -> 114 s (its process tree's CPU
129 s -> 74 s), ``test_native_path`` 158 s -> 107 s, ``test_connect`` (one server for 120
tests) 191 s -> 157 s, ``test_services_e2e`` CPU 334 s -> 256 s (its wall time is mostly
waiting on the services). ``-XX:+UseSerialGC`` on top saved nothing measurable. A C1-only JVM
reserves a 48 MB code cache where a tiered one reserves 240 MB; the suite's long-lived JVM,
which keeps windowlib's 400 generated classes (``session.LOCAL_CONF``), once ran out of it
("Out of space in CodeCache for adapters", with 1000 kept), so test JVMs reserve the
production size (``-XX:ReservedCodeCacheSize=240m``). Production code sets no JVM option;
``SPARK_SUBMIT_OPTS`` is a test-environment choice only. The same variable points every test
JVM at a class-data-sharing archive of Spark's classes (``jvm_archive.py``: a JVM start takes
about half the CPU with it), built in the background at the start of a run when missing.
Test modules whose functions run inside Spark tasks register themselves with
``cloudpickle.register_pickle_by_value`` (workers cannot import modules from ``tests/``):
``ship_by_value``. ``spark_examples`` sizes the Hypothesis properties that run Spark.
"""

from __future__ import annotations

import contextlib
import os
import sys

import pytest

_PY = sys.executable
for _name, _value in (("PYSPARK_PYTHON", _PY), ("PYSPARK_DRIVER_PYTHON", _PY),
                      ("SPARK_LOCAL_IP", "127.0.0.1")):
    os.environ.setdefault(_name, _value)
TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
if TEST_JVM_OPTS not in os.environ.get("SPARK_SUBMIT_OPTS", ""):
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
        filter(None, (os.environ.get("SPARK_SUBMIT_OPTS"), TEST_JVM_OPTS)))


def pytest_configure(config: pytest.Config) -> None:
    """Test JVMs share one class-data archive (``jvm_archive.py``). The first process of a
    run (the xdist controller, or the only one) points ``SPARK_SUBMIT_OPTS`` at it and, if it
    is missing, builds it in the background (about 40 s of CPU, once per checkout): JVMs that
    start before it is there run without it. Runs that start no JVM (collection only,
    ``-m unit``) do not build it; xdist workers inherit the option.
    ``WINDOWLIB_TEST_JVM_ARCHIVE=off`` runs without it."""
    import jvm_archive

    opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if ("-XX:SharedArchiveFile=" in opts or "-XX:ArchiveClassesAtExit=" in opts
            or os.environ.get("WINDOWLIB_TEST_JVM_ARCHIVE") == "off"):
        return
    archive = jvm_archive.archive_path()
    if archive is None:
        return
    if not (os.environ.get("PYTEST_XDIST_WORKER") or config.option.collectonly
            or (config.option.markexpr or "").strip() == "unit" or archive.exists()):
        _building.append(jvm_archive.build_in_background(archive, TEST_JVM_OPTS))
    os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} {jvm_archive.options(archive)}"


_building: list = []


def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave no archive-building JVM behind."""
    for thread in _building:
        thread.join(timeout=600)


def ship_by_value(*modules) -> None:
    """Let Spark's workers unpickle functions defined in ``modules``."""
    from pyspark import cloudpickle

    for module in modules:
        with contextlib.suppress(ValueError):   # already registered
            cloudpickle.register_pickle_by_value(module)


def spark_examples(ci: int, local: int) -> int:
    """Examples of a property that runs Spark: ``WINDOWLIB_SPARK_EXAMPLES`` when set, else
    ``ci`` under CI and ``local`` otherwise."""
    return int(os.environ.get("WINDOWLIB_SPARK_EXAMPLES")
               or (ci if os.environ.get("CI") else local))


def worker_sockets(session) -> set[tuple[str, str]]:
    """``{(socket, daemon)}`` reported by ``session``'s Python workers themselves: whether
    they talk to the JVM over a Unix domain socket (``"true"``) and which module forked them."""
    import pyarrow as pa

    def report(batches):
        import os
        import sys

        for _ in batches:
            pass
        main = getattr(sys.modules["__main__"], "__spec__", None)
        yield pa.record_batch({
            "uds": [os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED", "unset").lower()],
            "daemon": [main.name if main else "unknown"]})

    return {tuple(r) for r in session.range(0, 2, 1, 2)
            .mapInArrow(report, "uds string, daemon string").collect()}


def firings_on_paths(pipeline, df, arrival: str, paths=("panes", "general"),
                     **options) -> dict:
    """``{path: sorted firing tuples (without run_id)}`` of one-shot runs of ``pipeline`` over
    ``df`` on each Spark path (``run_dataframe(..., path=path, **options)``), each checked to
    have run where it was asked to."""
    from windowlib.engines.spark import run_dataframe

    got = {}
    for path in paths:
        result = run_dataframe(pipeline, df, arrival, path=path, **options)
        assert result.path == path
        got[path] = sorted(tuple(r) for r in result.firings.drop("run_id").collect())
        result.unpersist()
    return got


@pytest.fixture(scope="session")
def spark():
    from windowlib.engines.spark.session import get_or_create_session

    session = get_or_create_session(app_name="windowlib-tests",
                                    conf={"spark.sql.shuffle.partitions": "1"})
    yield session
    session.stop()
