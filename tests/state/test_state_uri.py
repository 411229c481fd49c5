"""``Uri``: the one location type (parse, validate, redact) every layer uses."""

from __future__ import annotations

import os

import pytest

from windowlib.core.errors import InputError
from windowlib.state.uri import Uri, redact

pytestmark = pytest.mark.unit

CREDENTIALED = ["s3://KEY:SECRET@bucket/lake", "s3a://KEY:SECRET@bucket/lake",
                "s3://KEY:SE/CRET@bucket/lake", "file://KEY:SECRET@localhost/lake",
                "s3://bucket/lake?KEY=SECRET", "s3://bucket/lake#KEY:SECRET",
                "s3://KEY:SECRET@bucket/a/../b", "s3://KEY:SECRET@Bad_Bucket/x",
                "hdfs://KEY:SECRET@nn/x", "s3:KEY:SECRET@bucket/lake"]


@pytest.mark.parametrize("text", [
    "s3://my-bucket/a/b", "s3://my-bucket", "file:///tmp/x", "file:///", "file:///a b/c%3Ad",
    "s3://my-bucket/arrival_hour=2013-01-01T05%3A30/part-0.parquet", "s3://b.c-d/é/x@y",
])
def test_round_trips_through_str(text) -> None:
    assert str(Uri.parse(text)) == text
    assert Uri.parse(str(Uri.parse(text))) == Uri.parse(text)


@pytest.mark.parametrize(("text", "normal"), [
    ("s3a://my-bucket/a/b/", "s3://my-bucket/a/b"),
    ("S3://my-bucket/a", "s3://my-bucket/a"),
    ("s3://my-bucket/", "s3://my-bucket"),
    ("file:///data//events/", "file:///data/events"),      # POSIX: the same directory
    ("file://localhost/tmp/x", "file:///tmp/x"),
])
def test_normal_form(text, normal) -> None:
    assert str(Uri.parse(text)) == normal


def test_paths_for_arrow_and_spark() -> None:
    s3 = Uri.parse("s3a://my-bucket/a/b/")
    assert (s3.scheme, s3.bucket, s3.key) == ("s3", "my-bucket", "a/b")
    assert (s3.uri, s3.arrow_path, s3.spark_path) == (
        "s3://my-bucket/a/b", "my-bucket/a/b", "s3a://my-bucket/a/b")
    local = Uri.parse("file:///data/events")
    assert (local.scheme, local.bucket, local.key) == ("file", "", "data/events")
    assert (local.arrow_path, local.spark_path) == ("/data/events", "file:///data/events")
    assert Uri.parse("s3://my-bucket").arrow_path == "my-bucket"


@pytest.mark.parametrize("text", ["s3://my-bucket/a/b", "s3://my-bucket", "file:///tmp/x"])
def test_arrow_paths_map_back(text) -> None:
    uri = Uri.parse(text)
    assert Uri.from_arrow_path(uri.scheme, uri.arrow_path) == uri


def test_plain_paths_only_where_asked_for(tmp_path) -> None:
    assert Uri.parse(str(tmp_path), paths=True) == Uri.parse(f"file://{tmp_path}")
    assert Uri.parse("rel/dir", paths=True) == Uri.from_path(os.path.abspath("rel/dir"))
    assert Uri.from_path(tmp_path / "x") == Uri.parse(f"file://{tmp_path}/x")
    for text in (str(tmp_path), "rel/dir"):
        with pytest.raises(InputError) as err:
            Uri.parse(text)
        assert err.value.code == "URI_INVALID"


@pytest.mark.parametrize("text", [
    "", "file://relative/path", "file://otherhost/x", "file:", "file://", "http://host/x",
    "hdfs://nn/x", "s3://", "s3:///x", "s3://Bad_Bucket/k", "s3://ab/k", "s3://a..b/k",
    "s3://bucket:9000/k", "s3://bucket/k?X-Amz-Credential=a", "s3://bucket/k#frag",
    "file:///tmp/../etc/passwd", "file:///a/./b", "s3://bucket/x/../y", "s3://bucket/a//b",
    "s3://bucket//a", "s3://bucket/a\\b", "file:///a/b\x00c", "file:///a/\nb",
    # percent-encoded traversal, separators and control characters
    "file:///tmp/%2e%2e/etc", "file:///tmp/%2E%2E/etc", "s3://bucket/%2e%2e/x",
    "s3://bucket/%2e/x", "file:///tmp/.%2e/x", "s3://bucket/a%2fb", "s3://bucket/a%2F..%2Fb",
    "file:///tmp/a%5cb", "file:///tmp/a%00b", "s3://bucket/a%0Ab", "file:///tmp/%252e%252e/x",
    "s3://bucket/" + "k" * 901,
])
def test_invalid_uris_are_one_input_error(text) -> None:
    with pytest.raises(InputError) as err:
        Uri.parse(text)
    assert err.value.code == "URI_INVALID"


@pytest.mark.parametrize("value", [None, 42, b"s3://bucket/x"])
def test_non_strings_are_refused(value) -> None:
    with pytest.raises(InputError) as err:
        Uri.parse(value)
    assert err.value.code == "URI_INVALID"


@pytest.mark.parametrize("text", CREDENTIALED)
def test_credentials_never_appear_in_messages(text) -> None:
    with pytest.raises(InputError) as err:
        Uri.parse(text, paths=True)
    message = f"{err.value!s} {err.value!r}"
    assert "KEY" not in message and "SECRET" not in message and "CRET" not in message
    assert "KEY" not in redact(text) and "SECRET" not in redact(text)


def test_child_is_validated_like_a_parse() -> None:
    base = Uri.parse("s3://bucket/lake")
    assert str(base.child("a=1/part-0.parquet")) == "s3://bucket/lake/a=1/part-0.parquet"
    assert base.child("") == base
    assert str(Uri.parse("file:///").child("tmp/x")) == "file:///tmp/x"
    for bad in ("../x", "x/../../etc", "/abs", "a//b", "%2e%2e/x", "a%2fb", "a\\b", "a?b"):
        with pytest.raises(InputError) as err:
            base.child(bad)
        assert err.value.code == "URI_INVALID"


def test_parent_and_name() -> None:
    uri = Uri.parse("s3://bucket/a/b")
    assert (str(uri.parent), uri.name) == ("s3://bucket/a", "b")
    assert Uri.parse("s3://bucket").parent is None
    assert str(Uri.parse("file:///a").parent) == "file:///"


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(InputError):
        Uri("file", "", "tmp/../etc")
    with pytest.raises(InputError):
        Uri("gs", "bucket", "x")
