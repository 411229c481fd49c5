"""``make airflow`` after ``make demo`` serves the demo's lake and DAG runs, and always says
which lake it serves and how to switch (``infra/airflow_serving.choose_serving``)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.unit


def _demo(folder, s3: bool = False):
    home = folder / "airflow"
    home.mkdir(parents=True)
    (folder / ".windowlib-demo").write_text("demo")
    summary = {"root": (folder / "lake").as_uri(), "s3": s3, "airflow_home": str(home),
               "dag_end": "2013-07-10T18:00:00+00:00"}
    (folder / "demo_summary.json").write_text(json.dumps(summary))
    return summary


@pytest.fixture
def serving(monkeypatch):
    from infra import airflow_serving

    monkeypatch.delenv("WINDOWLIB_ROOT", raising=False)
    return airflow_serving.choose_serving


def test_after_make_demo_airflow_serves_the_demos_lake_home_and_runs(serving, tmp_path):
    demo = _demo(tmp_path / "demo")
    chosen = serving(None, None, None, demo_dir=tmp_path / "demo")
    assert chosen.root == demo["root"] and str(chosen.home) == demo["airflow_home"]
    # catch-up stays at the demo's last interval (no run per hour since 2013)
    assert chosen.env == {"WINDOWLIB_DAG_START_DATE": demo["dag_end"],
                          "WINDOWLIB_DAG_END_DATE": demo["dag_end"]}
    assert demo["root"] in chosen.note and "--no-demo" in chosen.note and "--root" in chosen.note


def test_an_explicit_root_or_no_demo_serves_what_was_asked(serving, tmp_path, monkeypatch):
    _demo(tmp_path / "demo")
    asked = serving("file:///data/lake", None, None, demo_dir=tmp_path / "demo")
    assert asked.root == "file:///data/lake" and asked.env == {} and "as asked" in asked.note
    default = serving(None, None, False, demo_dir=tmp_path / "demo")
    assert default.root is None and ".local/lake" in default.note
    monkeypatch.setenv("WINDOWLIB_ROOT", "file:///env/lake")
    assert serving(None, None, None, demo_dir=tmp_path / "demo").root == "file:///env/lake"


def test_an_s3_demo_or_none_falls_back_and_says_why(serving, tmp_path):
    assert serving(None, None, None, demo_dir=tmp_path / "none").root is None
    with pytest.raises(ValueError, match="make demo"):
        serving(None, None, True, demo_dir=tmp_path / "none")
    _demo(tmp_path / "s3demo", s3=True)
    chosen = serving(None, None, None, demo_dir=tmp_path / "s3demo")
    assert chosen.root is None and "S3" in chosen.note
