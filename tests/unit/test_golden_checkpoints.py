"""Golden checkpoints: snapshots written by earlier windowlib versions keep restoring
(Flink's ``WindowOperatorMigrationTest`` idea).

``tests/golden/v<format>_<case>.json`` is a snapshot taken mid-run by
``tests/golden/make_golden.py`` (run by hand); ``v<format>_<case>.expected.json`` holds the
bundles to run after restoring it and the firings, late records and rejects that resuming
produced when the file was written. The files were generated once and are never regenerated:
they pin the snapshot FORMAT from then on. A change that breaks them is a format change —
bump ``SNAPSHOT_FORMAT_VERSION``, keep reading the old files (these tests keep restoring
them), and run the script to add the new version's files next to them.

The snapshots also pin the pipelines' fingerprints (the script's definitions, their function
classes' source, and ``describe()``): a checkpoint must not be refused after an upgrade — its
fingerprint is the pipeline's, or one of ``earlier_fingerprints`` (how earlier versions
described custom functions), which the restore accepts.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from windowlib.engines.reference import SNAPSHOT_FORMAT_VERSION

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SNAPSHOTS = sorted(p for p in GOLDEN.glob("v*_*.json") if not p.name.endswith(".expected.json"))
NAME = re.compile(r"v(\d+)_([a-z0-9_]+)\.json")


def load_make_golden() -> ModuleType:
    """The script as module ``make_golden`` (the name its fingerprints were taken under)."""
    if "make_golden" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_golden"] = module
        spec.loader.exec_module(module)
    return sys.modules["make_golden"]


def expected_for(snapshot_path: Path) -> dict:
    return json.loads(snapshot_path.with_name(
        snapshot_path.name.removesuffix(".json") + ".expected.json").read_text())


def test_the_current_format_version_has_golden_checkpoints():
    versions = {int(NAME.fullmatch(p.name).group(1)) for p in SNAPSHOTS}
    assert SNAPSHOT_FORMAT_VERSION in versions, (
        f"no golden checkpoints for format v{SNAPSHOT_FORMAT_VERSION}: run "
        "python tests/golden/make_golden.py")
    assert len(SNAPSHOTS) >= 4


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.stem)
def test_a_golden_checkpoint_restores_and_resumes_to_the_stored_firings(path):
    version, case = NAME.fullmatch(path.name).groups()
    snapshot = json.loads(path.read_text())
    expected = expected_for(path)
    assert snapshot["format_version"] == int(version) == expected["format_version"]
    make_golden = load_make_golden()
    pipeline = make_golden.CASES[case]["pipeline"]()
    assert snapshot["fingerprint"] in (pipeline.fingerprint, *pipeline.earlier_fingerprints), (
        f"{case}: the pipeline's fingerprint changed, so its checkpoints would be refused")

    outputs = json.loads(json.dumps(make_golden.resume(pipeline, snapshot, expected)))

    assert outputs["firings"] == expected["firings"]
    assert outputs["late"] == expected["late"]
    assert outputs["rejects"] == expected["rejects"]


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.stem)
def test_a_golden_checkpoint_holds_state_and_no_opaque_objects(path):
    """Mid-run means there is something to restore; plain JSON means no pickles."""
    snapshot = json.loads(path.read_text())
    assert snapshot["keys"], "the golden snapshot has no key state"
    assert "pickle" not in path.read_text().lower()
    expected = expected_for(path)
    assert expected["firings"], "resuming a golden checkpoint fires nothing"


def test_the_golden_set_covers_the_state_the_format_must_carry():
    """Between them the current version's files hold: a merged session (window != state
    window), a global window, buffered elements, trigger state, per-window and per-key
    function state, rows kept for retraction, a tagged tuple, and trigger and cleanup timers."""
    snapshots = [json.loads(p.read_text()) for p in SNAPSHOTS
                 if p.name.startswith(f"v{SNAPSHOT_FORMAT_VERSION}_")]
    keys = [state for s in snapshots for _, state in s["keys"]]
    windows = [w for state in keys for w in state["windows"]]
    assert any(window != state_window for window, state_window, _ in windows)
    assert any(window is None for window, _, _ in windows)
    assert any(record["trigger"] for _, _, record in windows)
    assert any(record["fn"] for _, _, record in windows)
    assert any(record["last"] for _, _, record in windows)
    assert any(state["global"] for state in keys)
    assert any(isinstance(c, list) and c and isinstance(c[0], list) and len(c[0]) == 2
               and isinstance(c[0][0], dict) for state in keys for _, c in state["contents"])
    assert '"$t": "tuple"' in "".join(json.dumps(s) for s in snapshots)
    owners = {o for state in keys for *_, os in state["timers"] for o in os}
    assert {"trigger", "cleanup"} <= owners
