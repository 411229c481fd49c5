"""The native path's choice of shape (``native_default.prefers_shared_scan``) and the footer
estimate of distinct keys it reads (``bundle_stats.key_estimate``).

The choice decides only how the firings are computed, never what they are (the Spark tests run
both shapes against the reference engine); these tests pin the rule's boundaries and that the
estimate tells dense keys from sparse ones in files written the ways real writers do."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from windowlib.engines.spark.bundle_stats import key_estimate
from windowlib.engines.spark.native_default import SHARED_SCAN_RATIO, prefers_shared_scan

pytestmark = pytest.mark.unit

HOUR, FIVE_MIN = 3_600_000, 300_000
HOURLY = [HOUR * b for b in range(4)]


def choose(keys, counts=(1000,) * 4, times=HOURLY, size=FIVE_MIN, slide=FIVE_MIN,
           setting="auto"):
    return prefers_shared_scan(setting, list(counts), list(keys), list(times), size, slide)


def test_forcing_the_shape_ignores_the_estimate():
    assert choose([None] * 4, setting="true") is True
    assert choose([1000] * 4, setting=" FALSE ") is False


def test_auto_shares_the_scan_when_partial_aggregation_would_keep_most_rows():
    # an hourly bundle meets 12 + 1 windows of 5 minutes per key
    per_key = HOUR // FIVE_MIN + 1
    enough = int(SHARED_SCAN_RATIO * 1000 / per_key) + 1
    assert choose([enough] * 4) is True
    assert choose([enough - 2] * 4) is False
    assert choose([1000] * 4) is True          # about one element per key and window
    assert choose([10] * 4) is False           # ~8 elements per key and window


def test_sliding_windows_count_every_window_an_element_joins():
    # 1 h every 5 min: each element joins 12 windows; a key meets 12 + 12 per bundle
    assert choose([50] * 4, size=HOUR, slide=FIVE_MIN) is False      # 1200 of 12000
    assert choose([300] * 4, size=HOUR, slide=FIVE_MIN) is True      # 7200 of 12000


def test_auto_keeps_the_plain_shape_when_it_cannot_tell():
    assert choose([1000, None, 1000, 1000]) is False    # a bundle without an estimate
    assert choose([1000], counts=[1000], times=[0]) is False   # one bundle: no span
    assert choose([1000] * 4, counts=[0] * 4) is False  # no rows


def _footer(tmp_path, keys, **options):
    path = tmp_path / f"f{len(list(tmp_path.iterdir()))}.parquet"
    table = pa.table({"k": pa.array(keys, pa.string()),
                      "n": pa.array(range(len(keys)), pa.int64())})
    pq.write_table(table, path, **options)
    return pq.ParquetFile(path).metadata.row_group(0)


@pytest.mark.parametrize("distinct", [4, 200, 5000])
def test_the_estimate_is_within_a_factor_of_four_of_the_distinct_keys(tmp_path, distinct):
    rng = random.Random(distinct)
    keys = [f"user{rng.randrange(distinct):07d}" for _ in range(20_000)]
    real = len(set(keys))
    estimate = key_estimate(_footer(tmp_path, keys), [0])
    assert real / 4 <= estimate <= real * 4, (estimate, real)


def test_plain_values_count_every_row_as_distinct(tmp_path):
    keys = [f"user{i:07d}" for i in range(5000)]
    assert key_estimate(_footer(tmp_path, keys, use_dictionary=False), [0]) == 5000


def test_several_key_columns_multiply_up_to_the_rows(tmp_path):
    rng = random.Random(1)
    keys = [f"k{rng.randrange(30)}" for _ in range(20_000)]
    group = _footer(tmp_path, keys)
    one = key_estimate(group, [0])
    assert key_estimate(group, [0, 0]) == min(one * one, 20_000)
    assert key_estimate(group, [0, 1]) == 20_000      # the second column is all distinct
