"""Roots and paths from user input (``--root``, generator roots, path parts): no traversal,
also not percent-encoded, and credentials in a root URI are never printed."""

from __future__ import annotations

import pytest

from jobs import _fs
from windowlib import cli
from windowlib.core.errors import DefinitionError, InputError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("suffix", ["%2e%2e/escaped", "%2E%2E/escaped", "sub/%2e%2e/%2e%2e/x",
                                    "a%2f..%2fb", "../escaped"])
def test_generator_roots_reject_encoded_traversal(tmp_path, suffix):
    with pytest.raises(InputError) as err:
        _fs.filesystem_for(f"file://{tmp_path}/lake/{suffix}")
    assert err.value.code == "URI_INVALID"


def test_generator_roots_are_literal_paths(tmp_path):
    _, base = _fs.filesystem_for(f"file://{tmp_path}/a%3Ab")    # no decoding: Hive escapes
    assert base == f"{tmp_path}/a%3Ab"
    assert _fs.filesystem_for(tmp_path)[1] == str(tmp_path)
    assert _fs.filesystem_for("s3://lake-bucket/demo/")[1] == "lake-bucket/demo"


@pytest.mark.parametrize("part", ["..", "%2e%2e", "%2E%2e", "a/../b", "a/%2e%2e/b", "/abs", "",
                                  "a%2fb", "a\\b", "a\x00b"])
def test_join_rejects_traversal_in_parts(part):
    with pytest.raises(DefinitionError) as err:
        _fs.join("/lake", part)
    assert err.value.code == "ARGUMENT_INVALID"


def test_join_accepts_hive_segments():
    assert _fs.join("/lake", "arrival_hour=2013-01-01T05", "part-0.parquet") == \
        "/lake/arrival_hour=2013-01-01T05/part-0.parquet"
    assert _fs.join("/lake", "data/flights") == "/lake/data/flights"


@pytest.mark.parametrize("root", ["s3://KEY:SECRET@bucket/lake", "s3://KEY:SE/CRET@bucket/lake",
                                  "s3://bucket/lake?KEY=SECRET"])
@pytest.mark.parametrize("command", ["status", "gc", "report"])
def test_cli_never_prints_credentials_of_a_root(root, command, capsys):
    assert cli.main([command, "--pipeline", "clickstream_demo", "--root", root]) == 2
    out = capsys.readouterr()
    printed = out.out + out.err
    assert "[URI_INVALID]" in printed
    assert "KEY" not in printed and "SECRET" not in printed and "CRET" not in printed
