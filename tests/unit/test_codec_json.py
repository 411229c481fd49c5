"""``codec.to_json``: compact JSON of ``codec.encode``, whatever shortcut it takes for the flat
rows most window functions return; ``decode(json.loads(...))`` gives the value back."""

from __future__ import annotations

import datetime as dt
import json
import math

import pytest

from windowlib.core.codec import decode, encode, to_json

pytestmark = pytest.mark.unit

VALUES = [
    {"n": 3, "total": 10, "pane": 0},
    {"name": "é\"x", "ok": True, "none": None, "big": 2**70},
    {},
    {"$t": "float", "v": "1"},                     # a dict that looks like a tagged value
    {"x": 1.5, "y": -0.0},
    {"x": math.inf, "y": math.nan},
    {"t": dt.datetime(2024, 3, 1, 5, 6, 7, 8)},
    {1: "non-string key", "a": 2},
    {"nested": {"a": [1, (2, 3)]}},
    {"flag": False, "count": 0},
    [1, "a", None],
    "text",
    7,
]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:30] for v in VALUES])
def test_to_json_is_the_compact_json_of_encode_and_decodes_back(value):
    text = to_json(value)
    assert text == json.dumps(encode(value), separators=(",", ":"))
    back = decode(json.loads(text))
    if isinstance(value, dict) and any(isinstance(v, float) and math.isnan(v)
                                       for v in value.values()):
        assert math.isnan(back["y"]) and back["x"] == value["x"]
    else:
        assert back == value


def test_a_bool_subclass_or_int_subclass_value_is_encoded_as_its_plain_type():
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    assert to_json({"level": Level.HIGH}) == '{"level":3}'
