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
