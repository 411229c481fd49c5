"""The local services' ``airflow_local_settings`` (``infra/airflow_settings``): the scheduler
imports the tasks' heavy modules once, without starting a thread, and a process forked from it
— as the LocalExecutor forks every task — has them and can use them; no other Airflow process
imports anything, and ``WINDOWLIB_PRELOAD=0`` switches it off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from wl_airflow_env import REPO

from infra.airflow_services import SETTINGS, airflow_env

pytestmark = pytest.mark.airflow

# Imports the hook as Airflow does (plain ``import airflow_local_settings`` from the path),
# with the command line of the process given in argv, then reports what is loaded; in
# the scheduler's case a forked child builds a GX context and a pandas frame with what it
# inherited (what the audit task does first).
_PROBE = """
import json, os, sys, threading
sys.argv = json.loads(sys.argv[1])
import airflow_local_settings as hook
names = hook.TASK_MODULES
loaded = [m for m in names if m in sys.modules]
child_ok = None
if loaded:
    pid = os.fork()
    if pid == 0:
        try:
            import great_expectations as gx
            import pandas as pd
            gx.get_context(mode="ephemeral")
            assert len(pd.DataFrame({"a": [1, 2]})) == 2
        except BaseException:
            os._exit(1)
        os._exit(0)
    child_ok = os.waitpid(pid, 0)[1] == 0
print(json.dumps({"modules": list(names), "loaded": loaded,
                  "threads": threading.active_count(), "exports": hook.__all__,
                  "child_ok": child_ok}))
"""


def _probe(argv: list[str], **env: str) -> tuple[dict, str]:
    environ = {k: v for k, v in os.environ.items() if k != "WINDOWLIB_PRELOAD"}
    environ["PYTHONPATH"] = os.pathsep.join([str(SETTINGS), str(REPO)])
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argv)], env=environ,
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_the_scheduler_preloads_the_task_modules_and_a_forked_task_uses_them():
    got, stderr = _probe(["/venv/bin/airflow", "scheduler"])
    assert got["loaded"] == got["modules"]
    assert {"great_expectations", "pyspark.sql", "pyspark.sql.connect.session",
            "windowlib.quality.validate"} <= set(got["loaded"])
    assert got["threads"] == 1, "a preloaded module started a thread (unsafe to fork)"
    assert got["child_ok"] is True
    assert got["exports"] == [], "the hook must not override Airflow settings"
    assert f"windowlib preload: {len(got['modules'])} of {len(got['modules'])} modules" \
        in stderr


@pytest.mark.parametrize("argv, env", [
    (["/venv/bin/airflow", "api-server"], {}),
    (["/venv/bin/airflow", "dag-processor"], {}),
    (["/venv/bin/airflow", "db", "migrate"], {}),
    (["/venv/bin/airflow", "scheduler"], {"WINDOWLIB_PRELOAD": "0"}),
])
def test_other_processes_and_the_switch_import_nothing(argv, env):
    got, _ = _probe(argv, **env)
    assert got["loaded"] == []
    assert got["child_ok"] is None


def test_the_services_environment_puts_the_hook_on_the_path(tmp_path):
    env = airflow_env(tmp_path)
    path = env["PYTHONPATH"].split(os.pathsep)
    assert str(SETTINGS) in path and (SETTINGS / "airflow_local_settings.py").is_file()
    # an idle scheduler looks again for finished tasks after 0.25 s, not Airflow's 1 s
    assert float(env["AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME"]) < 1
