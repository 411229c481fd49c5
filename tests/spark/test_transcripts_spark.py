"""Every semantic transcript (``tests/transcripts/*.yaml``) on the Spark general path.

The transcripts and their checker belong to ``tests/transcripts/``; this module imports the
checker (``check_transcript``) and runs each case once on ``engine="spark"`` with
``stepwise=False`` (one run of all bundles, firings compared per key and window in order, late
output as a multiset), as ``test_transcripts.py`` documents for engines too slow to re-run every
prefix.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "transcripts"


def _import(name: str, path: Path):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


checks = _import("windowlib_transcripts_checks", TRANSCRIPTS / "test_transcripts.py")
loader = checks.loader


def _ship_to_workers() -> None:
    # the canned functions live in a module Spark's Python workers cannot import
    from pyspark import cloudpickle

    with contextlib.suppress(ValueError):   # already registered
        cloudpickle.register_pickle_by_value(loader)


_ship_to_workers()
CASES = [c for c in checks.CASES if c.doc.get("build_error") is None]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_transcript_on_spark_general_path(spark, case):
    checks.check_transcript(case, engine="spark", stepwise=False)


def test_every_runnable_transcript_reaches_the_spark_engine():
    """Only transcripts that expect a build error are left out (they never reach an engine)."""
    left_out = [c for c in checks.CASES if c not in CASES]
    assert len(CASES) >= 100
    assert all(c.doc.get("build_error") is not None for c in left_out)
