"""The transcript checks of ``tests/transcripts/test_transcripts.py``, for the Spark tiers.

``tests/transcripts`` is not a package, so the module is loaded once by path (under a fixed name)
and its loader is registered with cloudpickle to be shipped by value: the transcripts' canned
functions live in a module Spark's Python workers cannot import.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from spark_session import ship_by_value

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
_NAME = "windowlib_transcripts_checks"


def _load():
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_NAME, TRANSCRIPTS / "test_transcripts.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


checks = _load()
loader = checks.loader
ship_by_value(loader)
# transcripts that build a pipeline (the others pin a definition error, engine-independent)
CASES = [c for c in checks.CASES if c.doc.get("build_error") is None]
