"""``windowlib status`` (``runs.status.job_status`` + the CLI) over commit records written by
the run protocol: the watermark strategy of every run and every change of it are visible
(changing the strategy is allowed, as in Flink — the watermark never moves back — but it must
not go unnoticed). No Spark: the commits are written through the checkpoint store."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import windowlib as wl
from windowlib import aggregates as agg
from windowlib import cli
from windowlib.runs import operations as ops
from windowlib.runs.incremental import open_checkpoint
from windowlib.runs.protocol import CommitDetails
from windowlib.runs.status import job_status
from windowlib.state.checkpoint import RunRecord

pytestmark = pytest.mark.unit

TEN_MINUTES = wl.BoundedOutOfOrderness("10 minutes")
LAG = wl.ProcessingTimeLag("1 hour")


@dataclass
class Job:
    """What ``job_status`` needs of a registered job."""

    root: str
    watermark: wl.WatermarkStrategy
    name: str = "status_demo"

    @property
    def pipeline(self) -> wl.Pipeline:
        return (wl.Pipeline(self.name, timestamp="ts").key_by("key")
                .window(wl.TumblingEventTimeWindows.of(10)).aggregate(agg.count()))

    def locations(self, root: str) -> tuple[str, str]:
        return f"{root}/_windowlib/checkpoints", f"{root}/windows/{self.name}"


def commit(job: Job, strategy: wl.WatermarkStrategy | None, run_id: str) -> None:
    cs = open_checkpoint(job.pipeline, job.locations(job.root)[0])
    details = CommitDetails(watermark_strategy=None if strategy is None else strategy.describe())
    cs.commit(cs.begin(run_id), RunRecord(watermark_ms=1, extra=details.to_extra()))


def test_commit_details_carry_the_watermark_strategy():
    details = CommitDetails(watermark_strategy=TEN_MINUTES.describe())
    assert CommitDetails.of(details.to_extra()).watermark_strategy == {
        "type": "BoundedOutOfOrderness", "delay_ms": 600_000}
    assert CommitDetails.of({}).watermark_strategy is None     # records written before


def test_status_names_each_run_strategy_and_every_change(tmp_path):
    job = Job(tmp_path.as_uri(), LAG)
    commit(job, None, "run-1")                   # written before strategies were recorded
    commit(job, TEN_MINUTES, "run-2")
    commit(job, TEN_MINUTES, "run-3")
    commit(job, LAG, "run-4")
    status = job_status(job, job.root)
    assert status["watermark_strategy"] == "ProcessingTimeLag(lag_ms=3600000)"
    assert [r["watermark_strategy"] for r in status["runs"]] == [
        "ProcessingTimeLag(lag_ms=3600000)", "BoundedOutOfOrderness(delay_ms=600000)",
        "BoundedOutOfOrderness(delay_ms=600000)", None]
    assert status["watermark_strategy_changes"] == [
        "v4: BoundedOutOfOrderness(delay_ms=600000) -> ProcessingTimeLag(lag_ms=3600000)"]


def test_status_warns_when_the_next_run_uses_another_strategy(tmp_path, monkeypatch, capsys):
    recorded = Job(tmp_path.as_uri(), TEN_MINUTES)
    commit(recorded, TEN_MINUTES, "run-1")
    configured = Job(tmp_path.as_uri(), LAG)          # the job's definition changed since
    status = job_status(configured, configured.root)
    assert status["watermark_strategy_changes"] == [
        "next run: BoundedOutOfOrderness(delay_ms=600000) -> ProcessingTimeLag(lag_ms=3600000)"]

    monkeypatch.setattr(ops, "get_job", lambda name: configured)
    assert cli.main(["status", "--pipeline", "status_demo", "--root", configured.root,
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["watermark_strategy_changes"] == \
        status["watermark_strategy_changes"]
    assert cli.main(["status", "--pipeline", "status_demo", "--root", configured.root]) == 0
    out = capsys.readouterr().out
    assert "next run:" in out and "['" not in out
    assert "BoundedOutOfOrderness(delay_ms=600000) ->" in out
    assert "ProcessingTimeLag(lag_ms=3600000)" in out


def test_clock_sentinels_in_records_written_before_read_as_none(tmp_path):
    """Earlier versions wrote the -inf sentinel into commit records (a run that accepted no
    event); a ``Commit`` gives ``None`` for it, and the next run continues from -inf."""
    from windowlib.core.time import MIN_TS
    from windowlib.runs.run_inputs import prior_state

    job = Job(tmp_path.as_uri(), LAG)
    cs = open_checkpoint(job.pipeline, job.locations(job.root)[0])
    cs.commit(cs.begin("run-1"), RunRecord(watermark_ms=MIN_TS, processing_time_ms=5,
                                           max_event_time_ms=MIN_TS))
    head = cs.latest()
    assert (head.watermark_ms, head.processing_time_ms, head.max_event_time_ms) == (None, 5, None)
    clock = prior_state(head, spark=None, settings=None).clock
    assert (clock.watermark, clock.processing_time, clock.max_event_ts) == (MIN_TS, 5, MIN_TS)
