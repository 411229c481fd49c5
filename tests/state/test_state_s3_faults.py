"""Retries and error mapping against real HTTP failures (a loopback proxy in front of moto)."""

from __future__ import annotations

import pytest
from state_faulty_proxy import FaultyProxy

from infra.ports import free_port
from windowlib.core.errors import StateError
from windowlib.state.s3store import S3Store

pytestmark = pytest.mark.s3


def _store(server, endpoint, bucket, **kw) -> S3Store:
    return S3Store(bucket, "lake", settings=server.settings(endpoint_url=endpoint, **kw))


@pytest.mark.parametrize("status", [503, 500])
def test_throttling_and_5xx_are_retried_until_success(moto_s3, status):
    bucket = moto_s3.create_bucket()
    with FaultyProxy(moto_s3.endpoint_url, fail_first=3, status=status) as proxy:
        store = _store(moto_s3, proxy.endpoint_url, bucket, max_attempts=5)
        store.write_bytes("a.json", b"payload")
        assert [r[2] for r in proxy.requests] == [status] * 3 + [200]
        assert store.read_bytes("a.json") == b"payload"


def test_persistent_5xx_gives_a_clear_error_after_max_attempts(moto_s3):
    bucket = moto_s3.create_bucket()
    with FaultyProxy(moto_s3.endpoint_url, fail_first=100) as proxy:
        store = _store(moto_s3, proxy.endpoint_url, bucket, max_attempts=3)
        with pytest.raises(StateError) as err:
            store.write_bytes("a.json", b"x")
        assert err.value.code == "S3_UNAVAILABLE"
        assert len(proxy.requests) == 3


def test_exclusive_create_whose_response_was_lost_is_still_ours(moto_s3):
    bucket = moto_s3.create_bucket()
    with FaultyProxy(moto_s3.endpoint_url, lose_responses=1, only_methods=("PUT",)) as proxy:
        store = _store(moto_s3, proxy.endpoint_url, bucket, max_attempts=4)
        assert store.create_exclusive("commits/00000001.json", b"mine") is True
        # The server stored the first attempt; the retry saw 412 and the read-back matched.
        puts = [r[2] for r in proxy.requests if r[0] == "PUT"]
        assert puts == [500, 412]
        assert store.create_exclusive("commits/00000001.json", b"other") is False


def test_arrow_filesystem_retries_5xx_too(moto_s3):
    bucket = moto_s3.create_bucket()
    moto_s3.client().put_object(Bucket=bucket, Key="d/x.bin", Body=b"arrow-bytes")
    with FaultyProxy(moto_s3.endpoint_url, fail_first=2) as proxy:
        fs = moto_s3.settings(endpoint_url=proxy.endpoint_url, max_attempts=5).arrow_filesystem()
        with fs.open_input_stream(f"{bucket}/d/x.bin") as fh:
            assert fh.read() == b"arrow-bytes"
        assert [r[2] for r in proxy.requests][:2] == [503, 503]


def test_closed_port_is_unreachable_not_a_traceback(moto_s3):
    port = free_port()
    store = _store(moto_s3, f"http://127.0.0.1:{port}", "some-bucket", max_attempts=2)
    with pytest.raises(StateError) as err:
        store.read_bytes("a.json")
    assert err.value.code == "S3_UNREACHABLE" and f"127.0.0.1:{port}" in str(err.value)
    assert err.value.__cause__ is None


def test_missing_bucket_and_bad_credentials_have_codes(seaweed_s3):
    missing = S3Store("no-such-bucket-here", "", settings=seaweed_s3.settings())
    with pytest.raises(StateError) as err:
        missing.write_bytes("a.json", b"x")
    assert err.value.code == "S3_BUCKET_NOT_FOUND" and "no-such-bucket-here" in str(err.value)
    bucket = seaweed_s3.create_bucket()
    wrong = S3Store(bucket, "", settings=seaweed_s3.settings(secret_access_key="wrong-secret"))
    with pytest.raises(StateError) as err:
        wrong.read_bytes("a.json")
    assert err.value.code in ("S3_CREDENTIALS_INVALID", "S3_ACCESS_DENIED")
    assert "wrong-secret" not in str(err.value)


def test_status_with_wrong_credentials_exits_non_zero_and_hides_the_secret(seaweed_s3, capsys):
    """``windowlib status`` used to print the error and exit 0 on refused credentials."""
    from s3_servers import use_env

    from windowlib import cli

    bucket = seaweed_s3.create_bucket("status")
    env = {**seaweed_s3.env(), "AWS_SECRET_ACCESS_KEY": "wrong-secret-value"}
    with use_env(env):
        code = cli.main(["status", "--pipeline", "clickstream_demo", "--root",
                         f"s3://{bucket}/lake"])
    out = capsys.readouterr()
    assert code == 1
    assert "S3_CREDENTIALS_INVALID" in out.err or "S3_ACCESS_DENIED" in out.err
    assert "wrong-secret-value" not in out.out + out.err
