"""Shipping code and credentials to executors, on the local session: archives hold exactly a
package's sources and change name with their content; nothing is shipped to a local master
; which credentials tasks carry (``forwards_credentials``). The cluster itself is
in ``test_cluster.py``."""

from __future__ import annotations

import sys
import zipfile

import pytest

from windowlib.core.errors import ExecutionError
from windowlib.engines.spark.shipping import code_archive, is_local_master, ship_code
from windowlib.state.s3config import S3Settings
from windowlib.state.taskfs import FORWARD_CONF, forwards_credentials, task_filesystem
from windowlib.state.uri import Uri

pytestmark = pytest.mark.spark


def test_an_archive_holds_the_packages_sources_and_is_named_by_their_content(tmp_path,
                                                                            monkeypatch):
    pkg = tmp_path / "wl_ship_pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "__pycache__" / "junk.cpython-311.pyc").write_bytes(b"\0")
    (pkg / "data.csv").write_text("a,b\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = code_archive("wl_ship_pkg.sub")
    assert first.name.startswith("wl_ship_pkg-") and first.suffix == ".zip"
    assert sorted(zipfile.ZipFile(first).namelist()) == ["wl_ship_pkg/__init__.py",
                                                         "wl_ship_pkg/sub/__init__.py"]
    assert code_archive("wl_ship_pkg") == first             # built once per content
    (pkg / "__init__.py").write_text("X = 2\n")
    assert code_archive("wl_ship_pkg").name != first.name    # changed sources: a new archive
    windowlib_zip = zipfile.ZipFile(code_archive("windowlib")).namelist()
    assert "windowlib/engines/spark/shipping.py" in windowlib_zip
    assert not [n for n in windowlib_zip if not n.endswith(".py")]


def test_a_module_without_python_source_cannot_be_shipped():
    with pytest.raises(ExecutionError) as err:
        code_archive("wl_no_such_module_anywhere")
    assert err.value.code == "MODULE_UNAVAILABLE" and "wl_no_such_module_anywhere" in str(err.value)
    with pytest.raises(ExecutionError):
        code_archive("sys")          # built in: nothing to zip
    assert "sys" in sys.builtin_module_names


def test_a_local_master_ships_nothing(spark):
    """(Forced shipping, once per session, runs in ``cluster_app.py``: adding files to this
    shared session would change every later test's ``sys.path``.)"""
    assert is_local_master(spark)
    assert ship_code(spark, ["jobs"]) == []
    assert ship_code(spark, ["no_such_module_here"]) == []    # not even looked up


def test_which_credentials_tasks_carry(spark, monkeypatch):
    settings = S3Settings(endpoint_url="http://127.0.0.1:9", access_key_id="AKIDSHIP",
                          secret_access_key="ship-secret")
    assert settings.credential_source() == "explicit"
    loc = Uri.parse("s3://bucket/prefix")
    assert forwards_credentials(spark, settings)              # local master
    fs = task_filesystem(spark, loc, settings)
    assert fs.secret is not None and "ship-secret" not in repr(fs)
    assert fs.settings.endpoint_url == "http://127.0.0.1:9"   # the endpoint always travels
    try:
        spark.conf.set(FORWARD_CONF, "false")
        assert not forwards_credentials(spark, settings)
        assert task_filesystem(spark, loc, settings).secret is None
    finally:
        spark.conf.unset(FORWARD_CONF)
    assert "ship-secret" not in str(spark.sparkContext.getConf().getAll())
