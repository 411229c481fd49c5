"""DAG integrity: every file in ``dags/`` parses without import errors, imports no heavy module
at top level, yields one DAG per registered pipeline with the scheduling contract of issue 5,
and the backfill DAG's Params reject bad input."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from wl_airflow_env import DAGS, REPO, subprocess_env

pytestmark = pytest.mark.airflow

DAG_FILES = sorted(p.name for p in DAGS.glob("windowlib_*.py"))
# modules a DAG file must not load at parse time (the dag-processor re-parses every file
# often; the 2 s budget per file is measured by benchmarks/dag_overhead.py, not asserted here)
# (``windowlib.state.uri``, the URI type the registry checks roots with, is light and allowed)
HEAVY = ("pyspark", "great_expectations", "pandas", "pyarrow", "boto3", "botocore", "altair",
         "numpy", "jobs.flights.history",
         "windowlib.runs", "windowlib.engines", "windowlib.quality",
         "windowlib.state.checkpoint", "windowlib.state.objectstore", "windowlib.state.stores",
         "windowlib.state.s3config", "windowlib.state.s3store", "windowlib.state.manifest",
         "windowlib.state.taskfs", "openlineage")   # the client; the provider registers itself

# One interpreter imports every DAG file in turn, in ``DAG_FILES`` order (a fresh interpreter
# per file cost 3-5 s of Airflow imports each): a file's ``heavy`` lists the heavy modules
# loaded after its import, so a heavy import is charged to its file and to every later one —
# never missed. An import error is recorded per file and the next file is still imported.
_PROBE = """
import importlib, json, sys, time, traceback
found = {}
for name in json.loads(sys.argv[1]):
    t = time.perf_counter()
    try:
        module = importlib.import_module(name)
    except BaseException:
        found[name] = {"error": traceback.format_exc()}
        continue
    seconds = time.perf_counter() - t
    heavy = [m for m in json.loads(sys.argv[2]) if m in sys.modules]
    dags = sorted(k for k, v in vars(module).items() if type(v).__name__ == "DAG")
    found[name] = {"seconds": seconds, "heavy": heavy, "dags": dags}
print(json.dumps(found))
"""


def _import_in_subprocess(modules: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(modules), json.dumps(HEAVY)],
                          env=subprocess_env(), capture_output=True, text=True,
                          timeout=600, cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def dag_file_imports() -> dict:
    """``{module: {"seconds", "heavy", "dags"} or {"error"}}`` for every DAG file, imported
    in one fresh interpreter (``_PROBE``)."""
    return _import_in_subprocess([f[:-3] for f in DAG_FILES])


def _registry() -> dict:
    from jobs.registry import registry

    return registry()


@pytest.mark.parametrize("file", DAG_FILES)
def test_dag_file_imports_cleanly_without_heavy_modules(file, dag_file_imports):
    found = dag_file_imports[file[:-3]]
    assert "error" not in found, found.get("error", "")[-3000:]
    # the 2 s budget of the issue is measured (benchmarks/dag_overhead.py), not asserted here;
    # after the first file the shared Airflow imports are already loaded
    print(f"\n{file}: imported in {found['seconds']:.2f} s, DAGs {found['dags']}")
    assert found["heavy"] == [], f"{file} imports heavy modules at parse time: {found['heavy']}"
    assert found["dags"], f"{file} defines no DAG"


def test_dagbag_has_no_import_errors_and_one_dag_per_pipeline():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    expected = {f"windowlib_{name}" for name in _registry()} | {"windowlib_backfill",
                                                                 "windowlib_maintenance"}
    assert set(bag.dag_ids) == expected


@pytest.mark.parametrize("syntax", ["regexp", "glob"])
def test_airflowignore_keeps_the_factory_out_under_either_syntax(syntax):
    import warnings

    from airflow._shared.module_loading import find_path_from_directory

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # glob: pathspec's old class
        found = {Path(p).name for p in find_path_from_directory(DAGS, ".airflowignore", syntax)}
    assert "_windowlib_factory.py" not in found
    assert {"windowlib_pipelines.py", "windowlib_backfill.py",
            "windowlib_maintenance.py"} <= found


def test_pipeline_dags_follow_the_scheduling_contract(pipelines_module):
    from airflow.sdk import CronDataIntervalTimetable

    jobs = _registry()
    for name, job in jobs.items():
        dag = getattr(pipelines_module, f"windowlib_{name}")
        assert isinstance(dag.timetable, CronDataIntervalTimetable)
        assert dag.timetable.expression == job.schedule
        assert str(dag.timetable.timezone) in ("UTC", "Timezone('UTC')")
        assert dag.catchup is True and dag.max_active_runs == 1
        assert dag.default_args["retries"] > 0 and dag.default_args["retry_exponential_backoff"]
        assert set(job.tags) <= set(dag.tags) and "windowlib" in dag.tags
        assert job.description in dag.doc_md and job.schedule in dag.doc_md
        assert job.pipeline.fingerprint in dag.doc_md
        assert set(dag.params.dump()) == {"root", "publish_on_failure", "first", "last"}
        for key in dag.params:
            param = dag.params.get_param(key)
            assert param.schema.get("title") and param.description, (name, key)
        step = job.partition_step
        assert dag.params.get_param("first").schema["title"] == f"First {step} (manual runs)"
        assert job.partition_format in dag.params.get_param("first").description
        order = ["plan", "run", "audit", "publish", "report"]
        assert dag.task_ids == order
        for up, down in itertools.pairwise(order):
            assert down in dag.get_task(up).downstream_task_ids
        from airflow.providers.standard.decorators.short_circuit import (
            _ShortCircuitDecoratedOperator,
        )

        assert isinstance(dag.get_task("plan"), _ShortCircuitDecoratedOperator)
        for task in dag.tasks:      # every task reports its lineage (dags/_windowlib_lineage.py)
            assert callable(getattr(task, "get_openlineage_facets_on_complete", None)), task
        outlets = dag.get_task("publish").outlets
        assert [a.uri for a in outlets] == [job.locations(
            __import__("jobs.registry").registry.default_root())[1]]


def test_root_param_rejects_non_uri(pipelines_module):
    from airflow.sdk.definitions.param import ParamValidationError

    params = copy.deepcopy(pipelines_module.windowlib_clickstream_demo.params)
    params["root"] = "s3://bucket/prefix"
    with pytest.raises(ParamValidationError):
        params["root"] = "../../etc"


@pytest.mark.parametrize("key, value", [
    ("pipeline", "no_such_pipeline"), ("first", "2024-03-01 00:00"), ("last", "03/01/2024"),
    ("first", "2024-03-01T00/../x"), ("mode", "delete_everything"), ("dry_run", "yes"),
    ("root", "http://example.com/lake")])
def test_backfill_params_reject_bad_input(backfill_module, key, value):
    from airflow.sdk.definitions.param import ParamValidationError

    params = copy.deepcopy(backfill_module.dag.params)
    with pytest.raises(ParamValidationError):
        params[key] = value


def test_backfill_params_accept_every_registered_pipeline(backfill_module):
    params = copy.deepcopy(backfill_module.dag.params)
    assert params.get_param("pipeline").schema["enum"] == sorted(_registry())
    for name in _registry():
        params["pipeline"] = name
    params.update({"first": "2013-01-01", "last": "2013-01-31", "mode": "rebuild",
                   "dry_run": True})
    assert params.validate()["mode"] == "rebuild"


def test_maintenance_dag_is_daily_and_maps_gc_over_every_pipeline():
    import importlib

    from airflow.sdk import CronTriggerTimetable
    from airflow.sdk.definitions.param import ParamValidationError

    dag = importlib.import_module("windowlib_maintenance").dag
    assert isinstance(dag.timetable, CronTriggerTimetable)
    assert dag.timetable.expression == "30 3 * * *" and dag.timetable.run_immediately is False
    assert not dag.catchup
    assert dag.max_active_runs == 1
    gc = dag.get_task("gc")
    assert gc.op_kwargs_expand_input.value["pipeline"] == sorted(_registry())
    params = copy.deepcopy(dag.params)
    assert params.validate()["grace_hours"] == 6
    for key, value in (("grace_hours", -1), ("root", "http://x"), ("root", "file://a b")):
        with pytest.raises(ParamValidationError):
            copy.deepcopy(dag.params)[key] = value


@pytest.mark.parametrize("root", ["s3://KEY:SECRET@bucket/lake", "s3://bucket/%2e%2e/lake",
                                  "s3://KEY:SE/CRET@bucket/lake"])
def test_root_param_is_checked_by_the_one_uri_type_without_echoing_credentials(root):
    from _windowlib_factory import resolve_root

    from windowlib.core.errors import InputError

    with pytest.raises(InputError) as err:
        resolve_root({"root": root})
    assert err.value.code == "URI_INVALID"
    assert "KEY" not in str(err.value) and "CRET" not in str(err.value)
    assert resolve_root({"root": "s3a://lake-bucket/x/"}) == "s3://lake-bucket/x"


def test_run_key_is_safe_and_stable():
    from _windowlib_factory import run_key

    key = run_key("windowlib_x", "manual__2024-03-01T01:00:00+00:00")
    assert key == "windowlib_x:manual__2024-03-01T01:00:00+00:00"
    odd = run_key("windowlib_x", "my run/../§" + "y" * 300)
    assert len(odd) <= 160 and "/" not in odd and " " not in odd
    assert odd == run_key("windowlib_x", "my run/../§" + "y" * 300)
    assert odd != run_key("windowlib_x", "my run/../§" + "y" * 299)


def test_manual_run_without_interval_uses_the_step_before_run_after():
    from _windowlib_factory import interval_of

    from jobs.registry import get

    class Run:
        run_after = datetime(2024, 3, 1, 5, 17, tzinfo=UTC)

    start, end = interval_of({"data_interval_start": None, "dag_run": Run()},
                             get("clickstream_demo"))
    assert (start, end) == (datetime(2024, 3, 1, 4, tzinfo=UTC),
                            datetime(2024, 3, 1, 5, tzinfo=UTC))


def test_spark_connection_switches_run_to_spark_submit():
    probe = """
import json, windowlib_pipelines as m
d = m.windowlib_clickstream_demo
run = d.get_task("run")
print(json.dumps({"ids": d.task_ids, "types": [c.__name__ for c in type(run).__mro__],
                  "conn": run._conn_id,
                  "app": run.application, "args": run.application_args, "conf": run.conf}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=subprocess_env(WINDOWLIB_SPARK_CONN_ID="spark_local"),
                          timeout=600, cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["ids"] == ["plan", "report", "run"] or sorted(info["ids"]) == sorted(
        ["plan", "run", "report"])
    # a SparkSubmitOperator whose exit code 2 (a user error) fails without retry
    assert info["types"][:2] == ["RunPipelineSubmit", "SparkSubmitOperator"]
    assert info["conn"] == "spark_local"
    assert info["app"] == str(REPO / "jobs" / "run_pipeline.py")
    assert info["args"][:2] == ["--pipeline", "clickstream_demo"] and "--first" in info["args"]
    # the settings of the sessions windowlib creates, which spark-submit's own session lacks
    from windowlib.engines.spark.session import LOCAL_CONF

    for key in ("spark.sql.session.timeZone", "spark.python.sql.dataFrameDebugging.enabled",
                "spark.sql.codegen.cache.maxEntries"):
        assert info["conf"][key] == LOCAL_CONF[key], key


def test_spark_remote_is_spark_remote_else_the_spark_connect_connection(monkeypatch):
    from _windowlib_factory import spark_remote

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("WINDOWLIB_SPARK_CONNECT_CONN_ID", raising=False)
    assert spark_remote() is None                         # in-process local Spark
    monkeypatch.setenv("AIRFLOW_CONN_WL_SC_TEST", json.dumps(
        {"conn_type": "spark_connect", "host": "127.0.0.1", "port": 15002}))
    monkeypatch.setenv("WINDOWLIB_SPARK_CONNECT_CONN_ID", "wl_sc_test")
    assert spark_remote() == "sc://127.0.0.1:15002/"
    monkeypatch.setenv("SPARK_REMOTE", "sc://spark-connect.internal:15002")
    assert spark_remote() == "sc://spark-connect.internal:15002"


def test_a_dag_runs_connect_url_names_its_server_session_unless_the_url_names_one():
    from windowlib.engines.spark.session import connect_url

    sid = "2f1c7a4e-8b0d-4c55-9b8e-6d0f3a1e9c21"
    assert connect_url("sc://h:15002", sid) == f"sc://h:15002/;session_id={sid}"
    assert connect_url("sc://h:15002/", sid) == f"sc://h:15002/;session_id={sid}"
    assert connect_url("sc://h:15002/;token=t;use_ssl=true", sid) == \
        f"sc://h:15002/;session_id={sid};token=t;use_ssl=true"
    mine = f"sc://h:15002/;session_id={sid}"
    assert connect_url(mine, "0b9e1f5c-3a57-4e0e-8f7d-1c2b3a4d5e6f") == mine
    assert connect_url("sc://h:15002", None) == "sc://h:15002"


class _RecordingTaskInstance:
    """Records the XCom calls of the session chain (the real chain: test_dag_connect.py)."""

    task_id = "run"

    def __init__(self, previous, try_number=1):
        self.previous, self.try_number, self.calls = previous, try_number, []

    def xcom_pull(self, **kwargs):
        self.calls.append(("pull", kwargs))
        return self.previous

    def xcom_push(self, key, value):
        self.calls.append(("push", key, value))


_SAME_CODE = object()     # stands for the digest of the code the test runs


@pytest.mark.parametrize("run_type, key, previous, taken", [
    ("scheduled", "spark_connect_session",
     {"session": "6f1d2c3b-0000-4000-8000-000000000001", "code": _SAME_CODE},
     "6f1d2c3b-0000-4000-8000-000000000001"),
    ("DagRunType.MANUAL", "spark_connect_session", None, None),   # the first run: a new one
    ("asset_triggered", "spark_connect_session", {"session": "", "code": _SAME_CODE}, None),
    # handed on by other code (a deployment since): a new session
    ("scheduled", "spark_connect_session",
     {"session": "6f1d2c3b-0000-4000-8000-000000000001", "code": "0123456789abcdef"}, None),
    # the format before the code digest (a bare id): a new session
    ("scheduled", "spark_connect_session", "6f1d2c3b-0000-4000-8000-000000000001", None),
    # backfill runs may overlap the others: a chain of their own
    ("backfill", "spark_connect_session_backfill",
     {"session": "6f1d2c3b-0000-4000-8000-000000000002", "code": _SAME_CODE},
     "6f1d2c3b-0000-4000-8000-000000000002"),
])
def test_a_run_takes_the_session_its_predecessor_handed_on_in_its_own_chain(
        run_type, key, previous, taken):
    from types import SimpleNamespace

    from _windowlib_tasks import _chained_session, _hand_on

    from windowlib.runs.operations import job_code_digest

    code = job_code_digest()
    if isinstance(previous, dict) and previous["code"] is _SAME_CODE:
        previous = {**previous, "code": code}
    ti = _RecordingTaskInstance(previous)
    context = {"ti": ti, "dag_run": SimpleNamespace(run_type=run_type)}
    assert _chained_session(context) == taken
    _hand_on(context, "0b9e1f5c-3a57-4e0e-8f7d-1c2b3a4d5e6f")
    # the latest earlier run's id; marked taken BEFORE use (a killed task hands nothing on);
    # handed on with the digest of the code that ran in it
    assert ti.calls == [
        ("pull", {"task_ids": "run", "key": key, "map_indexes": -1, "include_prior_dates": True}),
        ("push", key, None),
        ("push", key, {"session": "0b9e1f5c-3a57-4e0e-8f7d-1c2b3a4d5e6f", "code": code})]
    assert _chained_session({}) is None              # outside a DAG run: nothing to chain


def test_without_a_digest_of_its_code_a_run_takes_no_session_over(monkeypatch):
    """(windowlib installed without Python sources: which code a session ran is unknown)"""
    from types import SimpleNamespace

    import _windowlib_tasks as tasks

    from windowlib.core.errors import ExecutionError
    from windowlib.engines.spark import shipping

    def no_source(modules=()):
        raise ExecutionError("no source", code="MODULE_UNAVAILABLE")

    monkeypatch.setattr(shipping, "code_digest", no_source)
    monkeypatch.setattr(tasks, "_CODE", [])        # a fresh task process
    ti = _RecordingTaskInstance({"session": "6f1d2c3b-0000-4000-8000-000000000001",
                                 "code": None})
    context = {"ti": ti, "dag_run": SimpleNamespace(run_type="scheduled")}
    assert tasks._chained_session(context) is None
    tasks._hand_on(context, "0b9e1f5c-3a57-4e0e-8f7d-1c2b3a4d5e6f")
    assert ti.calls[-1] == ("push", tasks.SESSION_XCOM,
                            {"session": "0b9e1f5c-3a57-4e0e-8f7d-1c2b3a4d5e6f", "code": None})


def test_a_retried_run_task_starts_a_new_session():
    """Its earlier try may have died inside the session it took over (and Airflow cleared
    that try's mark): it neither takes the chain's session nor hands one on before success."""
    from types import SimpleNamespace

    from _windowlib_tasks import SESSION_XCOM, _chained_session

    ti = _RecordingTaskInstance("6f1d2c3b-0000-4000-8000-000000000001", try_number=2)
    assert _chained_session({"ti": ti, "dag_run": SimpleNamespace(run_type="scheduled")}) is None
    assert ti.calls == [("push", SESSION_XCOM, None)]


@pytest.mark.parametrize("schedule, after, interval", [
    # weekdays at 09:00: Friday's run covers the weekend, up to Monday 09:00
    ("0 9 * * MON-FRI", datetime(2024, 3, 4, 9, 30, tzinfo=UTC),
     (datetime(2024, 3, 1, 9, tzinfo=UTC), datetime(2024, 3, 4, 9, tzinfo=UTC))),
    ("@hourly", datetime(2024, 3, 1, 5, 17, tzinfo=UTC),
     (datetime(2024, 3, 1, 4, tzinfo=UTC), datetime(2024, 3, 1, 5, tzinfo=UTC))),
    ("@quarterly", datetime(2024, 5, 2, tzinfo=UTC),
     (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 4, 1, tzinfo=UTC))),
    # a timedelta, as Airflow accepts it (DeltaDataIntervalTimetable): the interval ends at
    # the manual run's run_after
    (timedelta(minutes=30), datetime(2024, 3, 1, 5, 17, tzinfo=UTC),
     (datetime(2024, 3, 1, 4, 47, tzinfo=UTC), datetime(2024, 3, 1, 5, 17, tzinfo=UTC))),
])
def test_any_airflow_schedule_still_gives_the_dag_data_intervals(schedule, after, interval):
    """Presets and names (``@hourly``, ``MON-FRI``) build a DAG whose runs have real data
    intervals (the scheduler's form of the timetable), and a run scans their partitions."""
    import dataclasses

    import pendulum
    from _windowlib_factory import build_dag
    from airflow.serialization.encoders import coerce_to_core_timetable

    from jobs.registry import get

    job = dataclasses.replace(get("clickstream_demo"), schedule=schedule)
    dag = build_dag(job)
    core = coerce_to_core_timetable(dag.timetable)
    found = core.infer_manual_data_interval(run_after=pendulum.instance(after))
    assert (found.start, found.end) == interval
    first, last = job.partition_range(found.start, found.end, lookback=0)
    assert (first, last) == (job.partition_value(interval[0]),
                             job.partition_value(interval[1] - timedelta(microseconds=1)))


def test_params_default_to_the_pipelines_last_complete_partition():
    import dataclasses

    from _windowlib_factory import last_complete_partition, partitions_of

    from jobs.registry import get

    now = datetime(2024, 3, 5, 14, 20, tzinfo=UTC)
    assert last_complete_partition(get("clickstream_demo"), now) == "2024-03-05T13"
    daily = dataclasses.replace(get("clickstream_demo"), partition_format="YYYY-MM-DD")
    assert last_complete_partition(daily, now) == "2024-03-04"

    class Manual:
        run_type = "manual"
        run_after = now

    job = get("clickstream_demo")
    context = {"params": {"first": "2024-03-01T02", "last": None}, "dag_run": Manual()}
    assert partitions_of(context, job) == ("2024-03-01T02", "2024-03-01T02")
    context["params"] = {"first": None, "last": None}     # empty: the interval's partitions
    assert partitions_of(context, job) == job.partition_range(
        datetime(2024, 3, 5, 13, tzinfo=UTC), datetime(2024, 3, 5, 14, tzinfo=UTC))
    # a reversed range is refused by the one partition-range rule, with its code
    from windowlib.core.errors import InputError

    context["params"] = {"first": "2024-03-01T05", "last": "2024-03-01T02"}
    with pytest.raises(InputError) as reversed_range:
        partitions_of(context, job)
    assert reversed_range.value.code == "PARTITION_RANGE_REVERSED"


def test_every_pipeline_dag_has_a_deadline_alert_and_a_failure_notifier(monkeypatch):
    """A deadline alert per pipeline (its ``run_deadline``, else 2 h after the run was
    queued) calling the notifier; every task's failure goes to the notifier too."""
    import dataclasses
    from datetime import timedelta

    from _windowlib_factory import build_dag
    from _windowlib_ops import notify_failure
    from airflow.sdk import DeadlineReference

    from jobs.registry import get

    monkeypatch.setenv("WINDOWLIB_DEADLINE_ALERTS", "on")
    job = dataclasses.replace(get("clickstream_demo"), run_deadline=timedelta(minutes=45))
    dag = build_dag(job)
    alerts = dag.deadline if isinstance(dag.deadline, list) else [dag.deadline]
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert.reference == DeadlineReference.DAGRUN_QUEUED_AT
    assert alert.interval == timedelta(minutes=45)
    assert alert.callback.path.endswith("deadline_missed")
    assert [a.interval for a in build_dag(get("clickstream_demo")).deadline] == [
        timedelta(hours=2)]
    for task in dag.tasks:
        assert notify_failure in (task.on_failure_callback or []) or \
            task.on_failure_callback is notify_failure, task.task_id

    # the notifier named by WINDOWLIB_NOTIFIER gets one small event per failure
    received = []
    sys.modules["wl_test_notifier"] = type(sys)("wl_test_notifier")
    sys.modules["wl_test_notifier"].send = received.append
    monkeypatch.setenv("WINDOWLIB_NOTIFIER", "wl_test_notifier:send")

    class TI:
        dag_id, task_id, try_number = "windowlib_clickstream_demo", "publish", 2

    class Run:
        run_id = "scheduled__2024-03-01T01:00:00+00:00"

    notify_failure({"ti": TI(), "dag_run": Run(), "exception": ValueError("boom")})
    # a missed deadline: Airflow's executor calls the alert's callback with its kwargs plus the
    # context the scheduler adds (Deadline.handle_miss: the DAG run as the REST API shows it,
    # the deadline's id and time)
    import structlog
    from airflow.sdk.execution_time.callback_supervisor import execute_callback

    context = {"dag_run": {"dag_id": "windowlib_clickstream_demo", "dag_run_id": Run.run_id,
                           "queued_at": "2024-03-01T01:00:05Z", "state": "running"},
               "deadline": {"id": "0198-d", "deadline_time": "2024-03-01T01:45:05Z"}}
    done = execute_callback(alert.callback.path, {**alert.callback.kwargs, "context": context},
                            dag_rel_path="windowlib_pipelines.py", bundle_path=None,
                            log=structlog.get_logger("wl_test_callback"))
    assert done == (True, None)
    assert received == [
        {"kind": "task_failed", "dag_id": "windowlib_clickstream_demo", "task_id": "publish",
         "run_id": "scheduled__2024-03-01T01:00:00+00:00", "try_number": 2, "error": "boom"},
        {"kind": "deadline_missed", "dag_id": "windowlib_clickstream_demo",
         "run_id": "scheduled__2024-03-01T01:00:00+00:00",
         "deadline": "2024-03-01T01:45:05Z", "pipeline": "clickstream_demo",
         "limit": "0:45:00"}]
    sys.modules["wl_test_notifier"].send = None        # a broken notifier never raises
    notify_failure({"ti": TI(), "dag_run": Run(), "exception": None})
    sys.modules.pop("wl_test_notifier")
