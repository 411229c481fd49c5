"""The local Airflow services are supervised (``infra/airflow_services.AirflowServices
.check_alive``): a service that exited is restarted, as a production supervisor would
(Airflow's scheduler exits on database races such as a ``StaleDataError`` when a row it loaded
was deleted), and a service that keeps exiting, or cannot be restarted, fails with its name,
exit code and log tail, secrets masked. Real subprocesses, no Airflow."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from infra import airflow_services
from infra.logs import log_tail

pytestmark = pytest.mark.unit


def _services(tmp_path, **kw) -> airflow_services.AirflowServices:
    (tmp_path / "logs").mkdir()
    return airflow_services.AirflowServices(tmp_path, 0, "admin", "s3cret-pw", **kw)


def _run(services, name: str, code: str) -> subprocess.Popen:
    with open(services.log_file(name), "ab") as log:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=log,
                                stderr=subprocess.STDOUT)
    services.processes[name] = proc
    return proc


def _stop_all(services) -> None:
    for proc in services.processes.values():
        proc.kill()
        proc.wait()


def test_check_alive_names_an_exited_service_its_code_and_log_tail(tmp_path):
    services = _services(tmp_path)
    _run(services, "api-server", "import time; print('up', flush=True); time.sleep(60)")
    try:
        services.check_alive()  # running: no error
        crashed = _run(services, "scheduler", "import sys\nfor i in range(100): print('line', i)"
                                              "\nprint('boom s3cret-pw'); sys.exit(3)")
        crashed.wait(timeout=60)
        # no command to restart it with (it was not started by start()): fails at once
        with pytest.raises(airflow_services.ServiceExited) as exc:
            services.check_alive()
    finally:
        _stop_all(services)
    message = str(exc.value)
    assert "'scheduler' exited with code 3" in message and "boom ***" in message, message
    assert "line 99" in message and "line 60" not in message  # the tail only: 40 lines
    assert "s3cret-pw" not in message and "api-server" not in message


def test_a_service_that_exits_once_is_restarted_and_the_restart_is_recorded(tmp_path):
    marker = tmp_path / "crashed-once"
    # the first start crashes (like the scheduler's StaleDataError); the restart stays up
    code = (f"import pathlib, sys, time\nm = pathlib.Path({str(marker)!r})\n"
            "if not m.exists():\n    m.touch(); print('StaleDataError s3cret-pw'); sys.exit(1)\n"
            "print('running again', flush=True); time.sleep(60)")
    services = _services(tmp_path, commands={"scheduler": [sys.executable, "-c", code]})
    try:
        services.spawn("scheduler")
        first = services.processes["scheduler"]
        first.wait(timeout=60)
        services.check_alive()  # restarted, no error
        again = services.processes["scheduler"]
        assert again.pid != first.pid and again.poll() is None
        assert {first.pid, again.pid} <= services.sessions  # stop() covers both sessions
        assert [r.service for r in services.restarts] == ["scheduler"]
        assert services.restarts[0].exit_code == 1
        assert "StaleDataError ***" in services.restarts[0].report
        assert "s3cret-pw" not in services.restarts[0].report
        deadline = time.monotonic() + 60  # the restarted process writes to the same log
        while "running again" not in (log := services.log_file("scheduler").read_text()):
            assert time.monotonic() < deadline, log
            time.sleep(0.1)
    finally:
        _stop_all(services)
    assert log.index("StaleDataError") < log.index("restarted by") < log.index("running again")


def test_a_service_that_keeps_exiting_fails_after_its_restart_budget(tmp_path):
    services = _services(tmp_path, max_restarts=2,
                         commands={"dag-processor": [sys.executable, "-c",
                                                     "print('bad config'); raise SystemExit(2)"]})
    services.spawn("dag-processor")
    for _ in range(2):  # two restarts allowed
        services.processes["dag-processor"].wait(timeout=60)
        services.check_alive()
    services.processes["dag-processor"].wait(timeout=60)
    with pytest.raises(airflow_services.ServiceExited) as exc:
        services.check_alive()
    message = str(exc.value)
    assert "'dag-processor' exited with code 2" in message and "after 2 restarts" in message
    assert "bad config" in message
    assert len(services.restarts) == 2


def test_log_tail_reads_the_last_lines_from_the_end(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i} " + "x" * 200 + "\n" for i in range(5000)))
    tail = log_tail(log, 3).splitlines()
    assert [t.split()[1] for t in tail] == ["4997", "4998", "4999"]
    assert log_tail(tmp_path / "missing.log").startswith("(no log")
    short = tmp_path / "short.log"
    short.write_text("a\nb\n")
    assert log_tail(short, 40) == "a\nb"
