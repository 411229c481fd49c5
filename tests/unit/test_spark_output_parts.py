"""``engines/spark/outputs``: a deferred part is planned only when one of its outputs is read,
and a writer that routes every output in one pass gets every part built."""

from __future__ import annotations

import pytest

from windowlib.core.outputs import OutputColumns
from windowlib.engines.spark.outputs import DeferredPart, OutputPart, SparkOutputs

pytestmark = pytest.mark.unit


def _outputs(builds: list[str]) -> SparkOutputs:
    def late() -> OutputPart:
        builds.append("late")
        return OutputPart("late rows", "late", {"late": [], "side_outputs": []})

    firings = OutputPart("firing rows", "firings", {"firings": []})
    names = OutputColumns(("key",), ("key", "value"), ("total",), False)
    return SparkOutputs(names, [firings, DeferredPart(("late", "side_outputs"), late)])


def test_a_deferred_part_answers_what_it_feeds_without_being_built():
    builds: list[str] = []
    outputs = _outputs(builds)
    assert outputs.has("late") and outputs.has("side_outputs")
    assert not outputs.has("rejects")
    assert builds == []


def test_a_routed_writer_gets_every_part_built_once_in_order():
    builds: list[str] = []
    outputs = _outputs(builds)
    first = outputs.built_parts()
    assert [type(p) for p in first] == [OutputPart, OutputPart]
    assert [p.frame for p in first] == ["firing rows", "late rows"]
    assert first[1].columns.keys() == {"late", "side_outputs"}
    assert outputs.built_parts()[1] is first[1]
    assert builds == ["late"]
