"""``footer_plan.footer_rows``: the size of a run from its files' footers, for choosing how
to run it (``run_outputs.is_small_run``) when the statistics cannot plan its bundles."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowlib.runs.footer_plan import footer_rows
from windowlib.runs.schemas import Footer

pytestmark = pytest.mark.unit


def _footer(tmp_path, name: str, keys: list) -> Footer:
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({"key": keys, "value": list(range(len(keys)))}), path)
    return Footer(path.as_uri(), "p", None, pq.read_metadata(path))


def test_null_keys_still_give_the_rows_of_every_file(tmp_path):
    footers = [_footer(tmp_path, "a", ["x", None, "y"]), _footer(tmp_path, "b", [None] * 4)]
    assert footer_rows(footers, ["a", "b"]) == 7


def test_an_unreadable_or_missing_footer_leaves_the_size_unknown(tmp_path):
    good = _footer(tmp_path, "a", ["x"])
    assert footer_rows([good, Footer("file:///b", "p", None, None)], ["a", "b"]) is None
    assert footer_rows([good], ["a", "b"]) is None
    assert footer_rows([], []) is None
