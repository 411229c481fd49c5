"""RunSummary owns the conservation rule (inputs = processed + late + rejects, in rows)."""

from __future__ import annotations

import pytest

from windowlib.core.errors import StateError
from windowlib.runs.summary import RunSummary


def summary(**counts: int) -> RunSummary:
    return RunSummary(pipeline="p", run_id="r1", status="staged", **counts)


def test_counts_that_add_up_pass():
    summary(inputs=10, processed=7, late=2, rejects=1).check_conservation()


@pytest.mark.parametrize("counts", [dict(inputs=12, processed=7, late=2, rejects=1),
                                    dict(inputs=9, processed=7, late=2, rejects=1)])
def test_a_gap_either_way_is_refused_naming_every_count(counts):
    with pytest.raises(StateError) as raised:
        summary(**counts).check_conservation()
    assert raised.value.code == "CONSERVATION_VIOLATED"
    message = str(raised.value)
    assert all(f"({n})" in message for n in counts.values())
    assert "nothing was published" in message


def test_timed_adds_the_blocks_seconds_to_its_phase_also_when_the_block_raises():
    import time

    from windowlib.runs.summary import timed

    phases: dict[str, float] = {"write": 1.0}
    with timed(phases, "write"):
        time.sleep(0.02)
    assert 1.02 <= phases["write"] < 2.0            # added to what was there
    with pytest.raises(ValueError), timed(phases, "commit"):
        time.sleep(0.01)
        raise ValueError("the commit failed")
    assert 0.01 <= phases["commit"] < 1.0


def test_phases_add_up_phase_by_phase_in_the_runs_order():
    from windowlib.runs.summary import PHASES, add_phases

    start = {"plan": 0.1, "tables": 0.2}            # what run_incremental timed first
    staged = {"write": 1.5, "inputs": 0.3, "build": 0.7}
    total = add_phases(start, {**staged, "tables": 0.4})
    assert list(total) == ["tables", "plan", "inputs", "build", "write"]
    assert total["tables"] == 0.6 and total["write"] == 1.5
    assert list(PHASES) == ["tables", "plan", "inputs", "build", "write", "validate", "commit"]
    assert start == {"plan": 0.1, "tables": 0.2}    # the arguments are not changed


def test_the_summary_lines_say_where_the_time_went_and_survive_a_round_trip():
    s = summary(inputs=1, processed=1)
    assert not any(line.strip().startswith("time") for line in s.lines())
    s.phases = {"write": 1.25, "tables": 0.5}
    again = RunSummary.from_dict(s.to_dict())       # XCom, the staged ref, commit records
    assert again.phases == {"write": 1.25, "tables": 0.5}
    assert "  time tables 0.50 s, write 1.25 s" in again.lines()
