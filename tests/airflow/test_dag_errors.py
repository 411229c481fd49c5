"""The DAG tasks classify errors by the one exit-code rule (``windowlib.core.errors.exit_code``,
as the CLI and ``jobs/run_pipeline.py``): a user error (2) fails the task without retry
(``AirflowFailException``), a failure (1) propagates so Airflow retries it — for every
registered code, in the task bodies and for ``spark-submit``'s exit code. No metadata database
is needed: the helpers run directly."""

from __future__ import annotations

import importlib

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from windowlib.core import errors

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def factory():
    """``dags/_windowlib_factory.py`` (conftest put ``dags/`` on the path and set Airflow up)."""
    return importlib.import_module("_windowlib_factory")


@pytest.mark.parametrize("code", sorted(errors.REGISTRY))
def test_task_bodies_fail_fast_exactly_on_user_errors(code, factory):
    entry = errors.REGISTRY[code]
    error = entry.error_class("simulated", code=code)
    if entry.exit_code == errors.EXIT_USER:
        with pytest.raises(AirflowFailException, match=rf"^\[{code}\] simulated") as info, \
                factory.user_errors_fail_fast():
            raise error
        assert info.value.__cause__ is error
    else:
        with pytest.raises(entry.error_class) as info, factory.user_errors_fail_fast():
            raise error
        assert info.value is error   # unchanged: Airflow retries it


def test_other_exceptions_propagate_unchanged(factory):
    with pytest.raises(KeyError), factory.user_errors_fail_fast():
        raise KeyError("x")


@pytest.mark.parametrize("returncode, fails_fast", [(2, True), (1, False), (137, False)])
def test_spark_submit_exit_2_fails_without_retry(returncode, fails_fast, monkeypatch, factory):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    def failing(self, context):
        raise AirflowException(f"Cannot execute: spark-submit ... jobs/run_pipeline.py. "
                               f"Error code is: {returncode}.")

    monkeypatch.setattr(SparkSubmitOperator, "execute", failing)
    operator = factory._spark_submit_task("clickstream_demo", "spark_local")
    expected = AirflowFailException if fails_fast else AirflowException
    with pytest.raises(AirflowException) as info:
        operator.execute({})
    assert type(info.value) is expected


def test_backfill_and_gc_tasks_follow_the_rule(monkeypatch, factory):
    # a bad Param: a user error, no retry
    with pytest.raises(AirflowFailException, match=r"^\[ARGUMENT_INVALID\]"):
        factory.gc_task("clickstream_demo", {"params": {"grace_hours": -1}})
    with pytest.raises(AirflowFailException, match=r"^\[PIPELINE_UNKNOWN\]"):
        factory.backfill_task({"params": {"pipeline": "nope"}})
    # a changed definition (user) vs a lost race (failure, retried)
    for code, raised in (("FINGERPRINT_MISMATCH", AirflowFailException),
                         ("CHECKPOINT_CONFLICT", errors.StateError)):
        def get_job(name, code=code):
            raise errors.StateError("simulated", code=code)

        monkeypatch.setattr(importlib.import_module("_windowlib_tasks"), "get_job", get_job)
        with pytest.raises(raised, match=rf"^\[{code}\]"):
            factory.backfill_task({"params": {"pipeline": "clickstream_demo"}})


@pytest.mark.parametrize("first, last, code", [
    ("2024-03-01T05", "2024-03-01T02", "PARTITION_RANGE_REVERSED"),
    ("2024-03-01", "2024-03-01", "PARTITION_PRECISION_MISMATCH"),
])
def test_backfill_params_are_checked_by_the_one_partition_range_rule(first, last, code, factory):
    """The backfill DAG has no range rule of its own: ``runs.operations.check_job_range``
    decides, with the same codes as the CLI and run_pipeline.py, and no retry."""
    params = {"pipeline": "clickstream_demo", "first": first, "last": last,
              "mode": "incremental", "root": "file:///tmp/windowlib-never-used"}
    with pytest.raises(AirflowFailException, match=rf"^\[{code}\]"):
        factory.backfill_task({"params": params})
