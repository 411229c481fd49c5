"""``session.statement_threads``: one pool of threads per process, reused by every call, and
a forked child (Airflow's LocalExecutor forks its tasks) gets threads of its own."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from windowlib.engines.spark.session import STATEMENT_THREADS, statement_threads

pytestmark = pytest.mark.unit


def _named() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("windowlib-statements")}


def test_every_call_reuses_the_same_threads():
    for _ in range(5):      # as five runs registering four tables each would
        names = [statement_threads().submit(lambda: threading.current_thread().name)
                 for _ in range(STATEMENT_THREADS)]
        assert {n.result(timeout=30) for n in names} <= _named()
    assert statement_threads() is statement_threads()
    assert 1 <= len(_named()) <= STATEMENT_THREADS


def _in_child(out: multiprocessing.Queue) -> None:
    out.put(statement_threads().submit(lambda: "ran").result(timeout=20))


def test_a_forked_child_runs_statements_on_threads_of_its_own():
    statement_threads().submit(lambda: None).result(timeout=30)   # the parent's threads exist
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(out,))
    child.start()
    child.join(60)
    if child.is_alive():    # the parent's pool, copied without its threads, never runs
        child.kill()
    assert child.exitcode == 0 and out.get(timeout=5) == "ran"


def test_run_together_gives_results_in_order_and_raises_only_after_every_call_ended():
    import time

    from windowlib.engines.spark.session import run_together

    assert run_together([(pow, (2, 3)), (max, (4, 1)), (len, ("abc",))]) == [8, 4, 3]
    ended = []

    def slow() -> None:
        time.sleep(0.3)
        ended.append("slow")

    def fails() -> None:
        raise RuntimeError("the first table failed")

    with pytest.raises(RuntimeError, match="first table"):
        run_together([(fails, ()), (slow, ())])
    assert ended == ["slow"]      # no call of the group still runs when its failure raises
