"""Validation of user-given locations, keys and names."""

from __future__ import annotations

import os

import pytest

from windowlib.core.errors import StateError
from windowlib.state.objectstore import FileStore, open_store
from windowlib.state.paths import split_uri, validate_pipeline_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("uri,expected", [
    ("s3://my-bucket/a/b", ("s3", "my-bucket", "a/b")),
    ("s3a://my-bucket/a/b/", ("s3", "my-bucket", "a/b")),
    ("s3://my-bucket", ("s3", "my-bucket", "")),
    ("file:///tmp/x", ("file", "", "/tmp/x")),
    ("relative/dir", ("file", "", "relative/dir")),
])
def test_accepted_locations(uri, expected):
    assert split_uri(uri) == expected


@pytest.mark.parametrize("uri,code", [
    ("s3://key:secret@bucket/x", "URI_INVALID"),
    ("s3://bucket/x?access_key=AK", "URI_INVALID"),
    ("s3://Bad_Bucket/x", "URI_INVALID"),
    ("s3://bucket/a/../b", "KEY_INVALID"),
    ("file://otherhost/x", "URI_INVALID"),
    ("hdfs://nn/x", "URI_UNSUPPORTED"),
    ("", "URI_INVALID"),
])
def test_rejected_locations(uri, code):
    with pytest.raises(StateError) as err:
        open_store(uri)
    assert err.value.code == code
    assert "secret" not in str(err.value) and "access_key=AK" not in str(err.value)


@pytest.mark.parametrize("name", ["demo", "flights_hourly_2", "a"])
def test_valid_pipeline_names(name):
    assert validate_pipeline_name(name) == name


@pytest.mark.parametrize("name", ["Demo", "a-b", "a/b", "..", "", "x" * 129, None, "é"])
def test_invalid_pipeline_names(name):
    with pytest.raises(StateError) as err:
        validate_pipeline_name(name)
    assert err.value.code == "NAME_INVALID"


def test_symlink_inside_root_cannot_escape_it(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "link")
    store = FileStore(root)
    with pytest.raises(StateError) as err:
        store.read_bytes("link/secret.txt")
    assert err.value.code == "KEY_INVALID"
    with pytest.raises(StateError):
        store.write_bytes("link/new.txt", b"x")
    assert not (outside / "new.txt").exists()


def test_temp_files_of_in_flight_writes_are_never_listed(tmp_path):
    store = FileStore(tmp_path)
    store.write_bytes("a/x.json", b"1")
    (tmp_path / "a" / ".wltmp-y.json-123").write_bytes(b"partial")
    assert [i.key for i in store.list()] == ["a/x.json"]
