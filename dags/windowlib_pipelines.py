"""One scheduled write-audit-publish DAG per registered windowlib pipeline (``windowlib_{name}``).

Thin: the DAGs come from ``_windowlib_factory.build_pipeline_dags()`` (see its docstring for
the task chain, the idempotency key and the failure behaviour). Top-level imports are
``airflow.sdk`` and the standard library only; Spark, Great Expectations and ``windowlib.runs``
load inside tasks.
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # Airflow puts DAGS_FOLDER there too
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from _windowlib_factory import build_pipeline_dags

for _dag_id, _dag in build_pipeline_dags().items():
    globals()[_dag_id] = _dag
