"""``json_rows.json_texts`` writes each result row's JSON text as ``core.codec.to_json`` does,
whether a run of rows takes Arrow's column-wise way or falls back to ``to_json`` per row."""

from __future__ import annotations

import enum

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowlib.core.codec import to_json
from windowlib.engines.spark.json_rows import json_texts

pytestmark = pytest.mark.unit


class Level(enum.IntEnum):
    LOW = 1


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**63, max_value=2**63 - 1),
    st.integers(min_value=2**63, max_value=2**70), st.text(max_size=6),
    st.sampled_from(['"', "\\", "\n", "\x00", "é", "😀", "},{", "null"]),
    st.floats(allow_nan=True), st.just(Level.LOW), st.lists(st.integers(), max_size=2))
KEYS = st.sampled_from(["n", "total", "name", 'q"uote', "$t", "ü"])


def _rows_of(draw_keys: list, columns: dict) -> st.SearchStrategy:
    return st.fixed_dictionaries({k: columns[k] for k in draw_keys})


@st.composite
def rows(draw) -> list[dict]:
    """Runs of rows sharing their keys (in one order), each column of one kind or mixed."""
    out: list[dict] = []
    for _ in range(draw(st.integers(0, 4))):
        keys = draw(st.lists(KEYS, unique=True, max_size=4))
        kind = {k: draw(st.sampled_from([
            st.integers(-5, 5), st.integers(-5, 5) | st.none(), st.text(max_size=4),
            st.text(max_size=4) | st.none(), st.booleans() | st.none(), st.none(), SCALARS]))
            for k in keys}
        out += draw(st.lists(_rows_of(keys, kind), max_size=6))
    if draw(st.booleans()):
        out.append({1: "a non-string key"})
    return out


@settings(max_examples=300, deadline=None)
@given(rows())
def test_every_row_reads_as_to_json_writes_it(rows):
    texts = json_texts(rows)
    assert texts.type == pa.string()
    assert texts.to_pylist() == [to_json(r) for r in rows]


def test_a_uniform_run_is_written_column_by_column():
    rows = [{"n": i, "name": f'k"{i}', "ok": i % 2 == 0, "gone": None} for i in range(5)]
    assert json_texts(rows).to_pylist() == [to_json(r) for r in rows]
    assert json_texts(rows)[1].as_py() == '{"n":1,"name":"k\\"1","ok":false,"gone":null}'
