"""A class-data-sharing (CDS) archive of the classes a Spark driver loads, for the test JVMs.

A JVM that starts Spark loads and verifies thousands of classes from ``pyspark/jars``; with a
dynamic CDS archive (JDK 13+: ``-XX:ArchiveClassesAtExit`` once, ``-XX:SharedArchiveFile``
after) it maps them pre-parsed instead. Measured here (JDK 17, a ``local[2]`` session, one
query, ``stop()``; idle machine, two alternations): 9.9-11.4 s wall and 12 s of CPU without
the archive, 4.3-5.6 s and 5-6 s with it. The suite starts many driver JVMs (the shared
session, CLI and ``dag.test()`` subprocesses, Airflow task processes, Connect servers,
submitted applications), all through ``spark-submit``, so ``spark_session`` adds
``options()`` to ``SPARK_SUBMIT_OPTS`` with the C1 flags.

The archive is built once per checkout, JDK and set of jars (``.local/jvm-cds/``, about
180 MB) by a small ``spark-submit`` application (about 40 s, 43 s of CPU), atomically (a
lock, then a rename): a JVM that starts while it is built runs without it. The JVM
checks the archive itself: a JVM whose class path differs (another ``SPARK_CONF_DIR``), or a
stale archive, runs without it; ``-Xlog:cds*=off`` keeps its notices out of the output tests
read. Test-environment only: production code sets no JVM option.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHIVE_DIR = REPO / ".local" / "jvm-cds"
QUIET = "-Xlog:cds*=off"

# what the archive is made of: the classes a session loads to start, plan and run a query with
# a shuffle, write and read Parquet and run a Python (Arrow) task
WORKLOAD = """
import sys, tempfile
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.master("local[2]").appName("windowlib-cds").getOrCreate()
df = spark.range(0, 1000, 1, 2).withColumn("k", F.col("id") % 7)
with tempfile.TemporaryDirectory() as d:
    df.groupBy("k").agg(F.sum("id"), F.count(F.lit(1))).write.parquet(d + "/p")
    spark.read.parquet(d + "/p").orderBy("k").collect()
df.mapInArrow(lambda batches: batches, df.schema).count()
spark.stop()
"""


def _java() -> str | None:
    """The ``java`` that ``spark-submit`` runs (``spark-class``: ``$JAVA_HOME`` first)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def archive_path() -> Path | None:
    """Where the archive for this JDK and these jars is (built or not); ``None`` without a
    JDK or PySpark."""
    import pyspark

    java = _java()
    jars = Path(pyspark.__file__).parent / "jars"
    if java is None or not jars.is_dir():
        return None
    digest = hashlib.sha256()
    for path in [Path(java), *sorted(jars.iterdir())]:
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return ARCHIVE_DIR / f"spark-{digest.hexdigest()[:16]}.jsa"


def options(archive: Path) -> str:
    """The JVM options that use ``archive`` (silently none when it is missing or stale)."""
    return f"-XX:SharedArchiveFile={archive} {QUIET}"


def build(archive: Path, jvm_options: str) -> bool:
    """Build ``archive`` unless it exists (another process may be building it: the lock
    waits for it). Whether the archive exists afterwards; a failed build (no space, a
    read-only checkout) only costs speed."""
    try:
        return _build(archive, jvm_options)
    except OSError:
        return False


def _build(archive: Path, jvm_options: str) -> bool:
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists():
            return True
        import pyspark

        partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        with tempfile.TemporaryDirectory() as scratch:
            script = Path(scratch) / "cds_workload.py"
            script.write_text(WORKLOAD)
            env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
                   "SPARK_SUBMIT_OPTS": f"{jvm_options} -XX:ArchiveClassesAtExit={partial} "
                                        f"{QUIET}"}
            env.pop("SPARK_CONF_DIR", None)
            # spark-submit execs the JVM in the foreground: the archive is whole once it has
            # returned 0 (a killed or failed JVM's partial file is thrown away)
            done = None
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                done = subprocess.run([str(submit), "--master", "local[2]", str(script)],
                                      env=env, cwd=scratch, capture_output=True, timeout=600)
        if done is not None and done.returncode == 0 and partial.exists():
            os.replace(partial, archive)
        partial.unlink(missing_ok=True)
        return archive.exists()


def build_in_background(archive: Path, jvm_options: str) -> threading.Thread:
    """``build`` in a thread (join it before the process ends)."""
    thread = threading.Thread(target=build, args=(archive, jvm_options),
                              name="jvm-cds-archive", daemon=True)
    thread.start()
    return thread
