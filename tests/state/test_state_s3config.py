"""S3Settings: boto3-standard resolution, secrets never shown, Arrow filesystem for tasks."""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from s3_servers import use_env

from windowlib.core.errors import StateError
from windowlib.state.checkpoint import CheckpointStore, RunRecord
from windowlib.state.s3config import S3Settings
from windowlib.state.stores import open_store

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY-VERYSECRET"
_CLEAN = {k: "" for k in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION",
                          "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_MAX_ATTEMPTS",
                          "AWS_RETRY_MODE")}


@pytest.mark.unit
def test_resolve_follows_the_standard_environment_and_overrides_win():
    with use_env({**_CLEAN, "AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_DEFAULT_REGION":
                  "eu-west-1"}):
        s = S3Settings.resolve()
        assert (s.endpoint_url, s.region) == ("http://127.0.0.1:1", "eu-west-1")
        with use_env({"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:2", "AWS_REGION": "eu-west-2"}):
            s = S3Settings.resolve()
            assert (s.endpoint_url, s.region) == ("http://127.0.0.1:2", "eu-west-2")
            s = S3Settings.resolve(endpoint_url="https://s3.example.com", region="us-west-2",
                                   max_attempts=7)
            assert (s.endpoint_url, s.region, s.max_attempts) == (
                "https://s3.example.com", "us-west-2", 7)
    with use_env(_CLEAN):
        assert S3Settings.resolve().endpoint_url is None


@pytest.mark.unit
@pytest.mark.parametrize("kwargs,code", [
    ({"endpoint_url": "127.0.0.1:9000"}, "S3_ENDPOINT_INVALID"),
    ({"endpoint_url": "http://user:pw@127.0.0.1:9000"}, "S3_ENDPOINT_INVALID"),
    ({"access_key_id": "only-key"}, "S3_CREDENTIALS_INVALID"),
    ({"max_attempts": 0}, "S3_SETTINGS_INVALID"),
    ({"retry_mode": "legacy"}, "S3_SETTINGS_INVALID"),
    ({"bogus": 1}, "S3_SETTINGS_INVALID"),
])
def test_invalid_settings_have_codes(kwargs, code):
    with pytest.raises(StateError) as err:
        S3Settings.resolve(**kwargs)
    assert err.value.code == code


@pytest.mark.unit
def test_client_has_retry_configuration():
    s = S3Settings(endpoint_url="http://127.0.0.1:1", max_attempts=6, retry_mode="adaptive",
                   access_key_id="k", secret_access_key=SECRET)
    retries = s.client().meta.config.retries
    assert retries == {"mode": "adaptive", "total_max_attempts": 6}


@pytest.mark.unit
def test_secrets_are_not_in_repr_describe_or_pickles():
    s = S3Settings(endpoint_url="http://127.0.0.1:1", access_key_id="AKIDEXAMPLE",
                   secret_access_key=SECRET, session_token=SECRET + "TOKEN")
    for text in (repr(s), str(s), str(s.describe()), repr(s.public())):
        assert SECRET not in text
    blob = pickle.dumps(s)
    assert SECRET.encode() not in blob
    restored = pickle.loads(blob)
    assert restored == s.public() and not restored.has_explicit_credentials


@pytest.mark.s3
def test_pickled_settings_rebuild_arrow_fs_from_the_task_environment(moto_s3, tmp_path: Path):
    """What a Spark task does: unpickle settings (no secrets) and read with env credentials."""
    bucket = moto_s3.create_bucket()
    moto_s3.client().put_object(Bucket=bucket, Key="data/x.bin", Body=b"from-task")
    blob = tmp_path / "settings.pkl"
    blob.write_bytes(pickle.dumps(moto_s3.settings()))
    code = ("import pickle,sys; s = pickle.loads(open(sys.argv[1],'rb').read()); "
            "fs = s.arrow_filesystem(); print(fs.open_input_stream(sys.argv[2]).read().decode())")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(moto_s3.env())
    out = subprocess.run([sys.executable, "-c", code, str(blob), f"{bucket}/data/x.bin"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "from-task"


@pytest.mark.s3
def test_arrow_filesystem_writes_parquet_readable_by_boto(seaweed_s3):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bucket = seaweed_s3.create_bucket()
    settings = seaweed_s3.settings()
    fs = settings.arrow_filesystem()
    pq.write_table(pa.table({"k": ["a", "b"], "v": [1, 2]}), f"{bucket}/t/part-0.parquet",
                   filesystem=fs)
    store = open_store(f"s3://{bucket}/t", settings)
    assert [i.key for i in store.list()] == ["part-0.parquet"]
    assert pq.read_table(f"{bucket}/t", filesystem=fs).column("v").to_pylist() == [1, 2]


@pytest.mark.s3
def test_credentials_never_appear_in_logs(moto_s3, caplog, capfd):
    """boto3/botocore debug logging on, a full commit cycle and an error: the secret never
    shows up in logs, output, reprs or error messages."""
    bucket = moto_s3.create_bucket()
    settings = moto_s3.settings(secret_access_key=SECRET, access_key_id="AKIDLOGTEST")
    # caplog first: it restores the root level it finds, which set_stream_logger then changes
    caplog.set_level(logging.DEBUG)
    boto3.set_stream_logger("", logging.DEBUG)
    for name in ("botocore", "boto3"):   # a task-log filter of an earlier test may have raised them
        caplog.set_level(logging.DEBUG, logger=name)
    texts: list[str] = []
    try:
        cs = CheckpointStore(f"s3://{bucket}/ck", "demo", "fp", settings=settings)
        st = cs.begin("run-1")
        settings.arrow_filesystem().open_output_stream(
            st.uri("state")[len("s3://"):] + "/x.bin").close()
        commit = cs.commit(st, RunRecord(watermark_ms=1))
        texts += [repr(cs), repr(cs.pipeline_store), repr(commit), repr(settings)]
        with pytest.raises(StateError) as err:
            open_store("s3://no-such-bucket-xyz/p", settings).write_bytes("k", b"x")
        texts.append(str(err.value))
    finally:
        for h in list(logging.getLogger().handlers):
            if getattr(h, "stream", None) is not None and type(h) is logging.StreamHandler:
                logging.getLogger().removeHandler(h)
    out, errout = capfd.readouterr()
    assert "botocore" in caplog.text  # debug logging really was on
    assert "AKIDLOGTEST" in caplog.text or "AKIDLOGTEST" in errout  # signing happened
    for text in [caplog.text, out, errout, *texts]:
        assert SECRET not in text
