"""OpenLineage without Airflow (docs/lineage.md): ``run_incremental`` emits START and COMPLETE
through the ``openlineage-python`` client's HTTP transport to a receiver on 127.0.0.1 — the
consumed files and row counts, the output tables with schema, statistics and version, the
validation as assertions, windowlib's run facet; a rerun with a late file shows the new version
and its LATE firings; a blocked run ends in FAIL. An unreachable endpoint is a warning and the
run still publishes; nothing is configured, nothing is imported."""

from __future__ import annotations

import datetime as dt
import json
import logging
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from clicks_lake import T0, clicks_pipeline, locations, write_partition
from lineage_events import check_windowlib_facets, parse_event

import windowlib as wl
from windowlib.runs import lineage_emit
from windowlib.runs.incremental import run_incremental

pytestmark = pytest.mark.spark

WM = wl.BoundedOutOfOrderness("10 minutes")
OL_ENV = ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED",
          "OPENLINEAGE_NAMESPACE")


@pytest.fixture
def receiver():
    """A small OpenLineage HTTP endpoint on 127.0.0.1: the JSON bodies it received."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"path": self.path, "event": json.loads(body)})
            self.send_response(201)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


@pytest.fixture
def lineage_env(monkeypatch, tmp_path):
    """A clean OpenLineage configuration (no config file in the working or home directory)."""
    for name in OL_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in [k for k in __import__("os").environ if k.startswith("OPENLINEAGE__")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    lineage_emit._client.cache_clear()
    yield monkeypatch
    lineage_emit._client.cache_clear()


def _hour(lake, hour: int, name: str = "part-0", minutes=(0, 50)) -> int:
    """Write one file into hour ``hour``'s partition; returns its row count."""
    start = T0 + dt.timedelta(hours=hour)
    rows = [(k, start + dt.timedelta(minutes=m), 1) for m in range(*minutes, 7) for k in "ab"]
    write_partition(lake / "events", hour, rows, name)
    return len(rows)


def _gate(firings, summary) -> dict:
    """A real gate's JSON shape (``ValidationOutcome.to_dict``): one passing expectation."""
    n = firings.count()
    return {"success": True, "status": "passed", "failed": [], "data_docs": None,
            "results": [{"name": "firings_not_empty", "expectation": "expect_table_row_count_"
                         "to_be_between", "frame": "firings", "column": None,
                         "success": n > 0, "unexpected_count": None, "element_count": n,
                         "detail": ""}]}


def _by(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["eventType"] == kind]


def test_http_events_name_files_tables_versions_and_the_late_rerun(spark, tmp_path, receiver,
                                                                   lineage_env):
    url, received = receiver
    lineage_env.setenv("OPENLINEAGE_URL", url)
    lake = tmp_path
    _hour(lake, 0)
    _hour(lake, 1)
    loc = locations(lake, "lineage")
    p = clicks_pipeline("clicks_lineage")
    first = run_incremental(p, watermark=WM, spark=spark, validate=_gate, **loc)
    assert first.version == 1
    late_rows = _hour(lake, 0, "late-0", minutes=(40, 59))   # lands late in a consumed hour
    again = run_incremental(p, watermark=WM, spark=spark, validate=_gate, **loc)
    assert again.version == 2 and again.firings_by_timing.get("LATE", 0) > 0

    events = [r["event"] for r in received]
    assert {r["path"] for r in received} == {"/api/v1/lineage"}
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"] * 2
    for e in events:
        parse_event(e)
        assert e["job"] == {**e["job"], "namespace": "windowlib", "name": "clicks_lineage"}
    assert sum(check_windowlib_facets(e) for e in events) >= 6
    assert events[0]["run"]["runId"] == events[1]["run"]["runId"] != events[2]["run"]["runId"]

    done = _by(events, "COMPLETE")[1]
    source = done["inputs"][0]
    assert (source["namespace"], source["name"]) == ("file", f"{lake}/events")
    consumed = source["inputFacets"]["windowlib_input"]
    assert [p["partition"] for p in consumed["partitions"]] == ["2024-03-01T00"]
    assert [(f["path"].rsplit("/", 1)[-1], f["rows"])
            for f in consumed["partitions"][0]["files"]] == [("late-0.parquet", late_rows)]
    assert consumed["rowCount"] == again.inputs == source["inputFacets"]["inputStatistics"][
        "rowCount"]
    audited = done["inputs"][1]["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert [(a["assertion"], a["name"], a["success"]) for a in audited] == [
        ("expect_table_row_count_to_be_between", "firings_not_empty", True)]

    outputs = {o["name"].rsplit("/", 1)[-1]: o for o in done["outputs"]}
    assert set(outputs) == {"firings", "late", "rejects", "side_outputs"}
    firings = outputs["firings"]
    assert firings["namespace"] == "file" and firings["name"].startswith(str(lake))
    assert firings["facets"]["version"]["datasetVersion"] == "2"
    assert {"window_start", "timing", "total"} <= {
        f["name"] for f in firings["facets"]["schema"]["fields"]}
    assert firings["outputFacets"]["outputStatistics"]["rowCount"] == again.firings
    assert firings["outputFacets"]["outputStatistics"]["size"] > 0
    assert [i["name"] for i in firings["facets"]["symlinks"]["identifiers"]] == [
        "windowlib.clicks_lineage_firings", "windowlib.clicks_lineage_latest"]

    run = done["run"]["facets"]["windowlib_run"]
    assert run["checkpointVersionBefore"] == 1 and run["checkpointVersionAfter"] == 2
    assert run["lateRerun"] is True and run["counts"]["firingsByTiming"]["LATE"] > 0
    c = run["counts"]
    assert c["input"] == c["processed"] + c["late"] + c["rejects"] == again.inputs
    assert run["watermarkBefore"] == first.watermark and run["watermarkAfter"] == again.watermark
    assert run["fingerprint"] == p.fingerprint and run["runId"] == again.run_id
    assert _by(events, "COMPLETE")[0]["run"]["facets"]["windowlib_run"]["lateRerun"] is False

    # a blocked run (the audit failed, nothing published) ends in FAIL with the assertion
    _hour(lake, 2)

    def failing(firings, summary):
        out = _gate(firings, summary)
        out["results"][0]["success"] = out["success"] = False
        out["failed"] = ["firings_not_empty"]
        return out

    blocked = run_incremental(p, watermark=WM, spark=spark, validate=failing, **loc)
    assert str(blocked.status) == "blocked"
    fail = parse_event(received[-1]["event"]) and received[-1]["event"]
    assert fail["eventType"] == "FAIL"
    assert fail["run"]["facets"]["windowlib_error"]["code"] == "BLOCKED"
    assert "firings_not_empty" in fail["run"]["facets"]["errorMessage"]["message"]
    assertions = fail["inputs"][1]["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert [a["success"] for a in assertions] == [False]
    assert check_windowlib_facets(fail) == 3


def test_an_unreachable_endpoint_is_a_warning_and_the_run_publishes(spark, tmp_path,
                                                                   lineage_env, caplog):
    import socket

    with socket.socket() as s:           # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "ol.yml"
    config.write_text(f"transport:\n  type: http\n  url: http://127.0.0.1:{port}\n"
                      "  retry:\n    total: 1\n    connect: 1\n    backoff_factor: 0.01\n")
    lineage_env.setenv("OPENLINEAGE_CONFIG", str(config))
    _hour(tmp_path, 0)
    with caplog.at_level(logging.WARNING, logger="windowlib.runs.lineage_emit"):
        summary = run_incremental(clicks_pipeline("clicks_lineage_down"), watermark=WM,
                                  spark=spark, **locations(tmp_path, "down"))
    assert summary.published and summary.version == 1
    warned = [r.getMessage() for r in caplog.records if "OpenLineage" in r.getMessage()]
    assert len(warned) == 1 and "START" in warned[0]      # one attempt, then none


def test_nothing_configured_means_nothing_imported(tmp_path, lineage_env):
    assert not lineage_emit.configured()
    lineage_env.setenv("OPENLINEAGE_URL", "http://127.0.0.1:1")
    assert lineage_emit.configured()
    lineage_env.setenv("OPENLINEAGE_DISABLED", "true")
    assert not lineage_emit.configured()
    lineage_env.delenv("OPENLINEAGE_DISABLED")
    lineage_env.delenv("OPENLINEAGE_URL")
    (tmp_path / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert lineage_emit.configured()
    code = ("import sys, windowlib.runs.incremental, windowlib.runs.operations, windowlib.cli; "
            "print(sorted(m for m in sys.modules if m.startswith('openlineage')))")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OPENLINEAGE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd="/", check=True)
    assert out.stdout.strip() == "[]"


def test_configured_without_the_client_installed_runs_with_a_warning(lineage_env, monkeypatch,
                                                                      caplog):
    monkeypatch.setitem(sys.modules, "openlineage.client.uuid", None)   # import fails
    lineage_env.setenv("OPENLINEAGE_URL", "http://127.0.0.1:1")
    run = lineage_emit.emits_lineage(lambda pipeline, checkpoint, settings: object())(
        lambda pipeline, source, checkpoint: "ran")
    with caplog.at_level(logging.WARNING, logger="windowlib.runs.lineage_emit"):
        assert run(clicks_pipeline("clicks_no_client"), None, "file:///tmp/x") == "ran"
    assert "openlineage-python is not installed" in caplog.text
