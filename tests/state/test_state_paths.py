"""Validation of user-given locations, keys and names."""

from __future__ import annotations

import os

import pytest

from windowlib.core.errors import DefinitionError, InputError, StateError
from windowlib.state.objectstore import FileStore
from windowlib.state.paths import validate_key, validate_pipeline_name
from windowlib.state.stores import open_store
from windowlib.state.uri import Uri

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("uri,expected", [
    ("s3://my-bucket/a/b", ("s3", "my-bucket", "a/b")),
    ("s3a://my-bucket/a/b/", ("s3", "my-bucket", "a/b")),
    ("s3://my-bucket", ("s3", "my-bucket", "")),
    ("file:///tmp/x", ("file", "", "tmp/x")),
    ("/tmp/x", ("file", "", "tmp/x")),
    ("relative/dir", ("file", "", os.path.abspath("relative/dir").lstrip("/"))),
])
def test_accepted_locations(uri, expected):
    loc = Uri.parse(uri, paths=True)
    assert (loc.scheme, loc.bucket, loc.key) == expected


@pytest.mark.parametrize("uri", [
    "s3://key:secret@bucket/x",
    "s3://bucket/x?access_key=AK",
    "s3://Bad_Bucket/x",
    "s3://bucket/a/../b",
    "file://otherhost/x",
    "hdfs://nn/x",
    "",
    # the copies disagreed: open_store accepted these (file paths were not checked at all)
    "file:///tmp/../etc",
    "/tmp/../etc",
    "relative/../../etc",
    "file:///tmp/%2e%2e/etc",
])
def test_rejected_locations(uri):
    with pytest.raises(InputError) as err:
        open_store(uri)
    assert err.value.code == "URI_INVALID"
    assert "secret" not in str(err.value) and "access_key=AK" not in str(err.value)


@pytest.mark.parametrize("key", ["%2e%2e/x", "a/%2E%2E", "a/%2e", "a%2fb", "a%5Cb", "a%00b",
                                 "%252e%252e/x"])
def test_keys_reject_percent_encoded_traversal(key):
    with pytest.raises(StateError) as err:
        validate_key(key)
    assert err.value.code == "OBJECT_KEY_INVALID"


def test_keys_keep_literal_percent_escapes():
    assert validate_key("arrival_hour=2013-01-01T05%3A30/part-0.parquet")


@pytest.mark.parametrize("name", ["demo", "flights_hourly_2", "a"])
def test_valid_pipeline_names(name):
    assert validate_pipeline_name(name) == name


@pytest.mark.parametrize("name", ["Demo", "a-b", "a/b", "..", "", "x" * 129, None, "é"])
def test_invalid_pipeline_names(name):
    with pytest.raises(DefinitionError) as err:
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
    assert err.value.code == "OBJECT_KEY_INVALID"
    with pytest.raises(StateError):
        store.write_bytes("link/new.txt", b"x")
    assert not (outside / "new.txt").exists()


def test_temp_files_of_in_flight_writes_are_never_listed(tmp_path):
    store = FileStore(tmp_path)
    store.write_bytes("a/x.json", b"1")
    (tmp_path / "a" / ".wltmp-y.json-123").write_bytes(b"partial")
    assert [i.key for i in store.list()] == ["a/x.json"]
