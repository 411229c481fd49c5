"""Every semantic transcript (``tests/transcripts/*.yaml``) on every engine.

The YAML vocabulary is documented in ``loader.py``, which turns a document into a pipeline,
bundles and expected firings. This module runs them and compares.

How a transcript is checked
---------------------------
Step by step (the default): for each k the engine runs bundles 1..k from scratch
(``finalize=False``; the ``finalize`` step runs every bundle with ``finalize=True``). The
firings of run k, grouped by (key, window) in order, must extend those of run k-1, and the
new ones must equal the step's ``expect`` grouped the same way. So a transcript pins *when*
each pane fires, not only what it holds. This was chosen over comparing one run's whole list
because ``run_bundles`` returns a flat list; re-running prefixes costs little on tiny inputs.
Order across different keys/windows is not part of the contract and is never compared.
Metadata (key columns, window, pane_index, timing, is_final, retract) is always compared; of
the result columns, those the expectation names. Late records (when the document mentions
``late:``) are compared per step as a multiset.

An engine too slow for one run per prefix is checked with ``stepwise=False``: one run of all
bundles against every expectation concatenated, grouped per (key, window), in order.

Incrementally (``check_transcript_resumed``, the reference engine): every step is a run of its
one bundle restored from the JSON snapshot the previous run left, as incremental runs continue
from a checkpoint (SPEC §8: splitting the input into runs changes nothing); each run's firings
and late records must be exactly its step's.

Adding an engine is one line in ``ENGINES``: its ``run_bundles`` name, whether to check step
by step, and its pytest marks.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

import windowlib as wl
from windowlib.testing import run_bundles

pytestmark = pytest.mark.unit

ENGINES = [
    pytest.param("reference", True, id="reference"),
    # pytest.param("spark", False, id="spark", marks=pytest.mark.spark),
]


def _import_loader():
    """Import the sibling ``loader.py`` under a unique name, whatever pytest's import mode."""
    name = "windowlib_transcripts_loader"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("loader.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


loader = _import_loader()
CASES = loader.load_cases()


# --- checking -----------------------------------------------------------------------------------

def _group_actual(rows: Iterable[dict], keys: Sequence[str]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[(tuple(row.get(k) for k in keys), row.get("window_start"),
                row.get("window_end"))].append(row)
    return groups


def _group_expected(firings: Iterable[Any]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for f in firings:
        groups[f.group].append(f.row)
    return groups


def _project(actual: dict, expected: dict) -> dict:
    """The actual row restricted to the expected row's columns (retract defaults to false)."""
    out = {}
    for name in expected:
        if name == "retract":
            out[name] = bool(actual.get("retract", False))
        else:
            out[name] = loader.plain(actual[name]) if name in actual else "<missing>"
    return out


def _fmt(rows: list[dict]) -> str:
    return "\n".join("    " + json.dumps(r, sort_keys=True, default=str) for r in rows) or "    -"


def _compare_groups(label: str, actual: dict[tuple, list[dict]],
                    expected: dict[tuple, list[dict]]) -> list[str]:
    problems = []
    for group in sorted(set(actual) | set(expected), key=repr):
        exp = expected.get(group, [])
        act = actual.get(group, [])
        projected = [_project(a, e) for a, e in zip(act, exp)]
        projected += [_project(a, {**a, "retract": None}) for a in act[len(exp):]]
        if len(act) != len(exp) or projected != exp:
            problems.append(f"{label}, key/window {group}:\n  expected:\n{_fmt(exp)}\n"
                            f"  actual:\n{_fmt(projected)}")
    return problems


def _late_key(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _compare_late(label: str, actual: list[dict], expected: list[dict]) -> list[str]:
    exp = [{**e, "reason": "too_late"} for e in expected]
    names = set().union(*exp) if exp else {"key", "ts", "value", "reason"}
    act = [{k: loader.plain(a.get(k, "<missing>")) for k in names} for a in actual]
    if sorted(map(_late_key, act)) != sorted(map(_late_key, exp)):
        return [f"{label}, late output:\n  expected:\n{_fmt(exp)}\n  actual:\n{_fmt(act)}"]
    return []


def _run(case: Any, engine: str, bundles: list[Any], finalize: bool) -> tuple[list, list]:
    return run_bundles(case.pipeline(), bundles, engine=engine, finalize=finalize,
                       with_late=True, watermark=case.watermark)


def check_transcript(case: Any, engine: str = "reference", stepwise: bool = True) -> None:
    """Run ``case`` on ``engine`` and raise AssertionError listing every difference."""
    build_error = case.doc.get("build_error")
    if build_error is not None:
        _check_build_error(case, build_error)
        return
    problems: list[str] = []
    if stepwise:
        previous: dict[tuple, list[dict]] = {}
        previous_late: list[dict] = []
        bundles: list[Any] = []
        for i, step in enumerate(case.steps, start=1):
            label = f"step {i}" if step.bundle is not None else "finalize"
            if step.bundle is not None:
                bundles.append(step.bundle)
            firings, late = _run(case, engine, bundles, step.bundle is None)
            groups = _group_actual(firings, case.keys)
            new: dict[tuple, list[dict]] = {}
            for group, rows in groups.items():
                before = previous.get(group, [])
                if rows[:len(before)] != before:
                    problems.append(f"{label}: the firings of {group} from earlier steps changed "
                                    f"when the run was extended:\n{_fmt(before)}\n"
                                    f"  became\n{_fmt(rows)}")
                if rows[len(before):]:
                    new[group] = rows[len(before):]
            problems += _compare_groups(label, new, _group_expected(step.expect))
            if case.check_late:
                problems += _compare_late(label, late[len(previous_late):], step.late)
            previous, previous_late = groups, late
    else:
        firings, late = _run(case, engine, case.bundles, case.finalize)
        expected = [f for s in case.steps for f in s.expect]
        problems += _compare_groups("whole run", _group_actual(firings, case.keys),
                                    _group_expected(expected))
        if case.check_late:
            problems += _compare_late("whole run", late, [r for s in case.steps for r in s.late])
    if problems:
        why = case.doc.get("why")
        header = f"transcript {case.id} on {engine}" + (f"\nwhy: {why.strip()}" if why else "")
        raise AssertionError(header + "\n" + "\n".join(problems))


def check_transcript_resumed(case: Any) -> None:
    """Run ``case`` one step per reference run, each restored from the previous snapshot."""
    from windowlib.engines.base import PriorState, TimePolicy
    from windowlib.engines.reference import ReferenceExecutor

    problems: list[str] = []
    state = None
    for i, step in enumerate(case.steps, start=1):
        finalize = step.bundle is None
        label = f"run {i}" if not finalize else "finalize run"
        prior = None if state is None else PriorState(state=json.loads(json.dumps(state)))
        run = ReferenceExecutor().run(case.pipeline(), [] if finalize else [step.bundle],
                                      prior=prior, time=TimePolicy(watermark=case.watermark,
                                                                   finalize=finalize))
        out = run.outputs
        problems += _compare_groups(label, _group_actual(out.firings, case.keys),
                                    _group_expected(step.expect))
        if case.check_late:
            problems += _compare_late(label, out.late, step.late)
        state = out.state
    if problems:
        raise AssertionError(f"transcript {case.id}, resumed from snapshots\n"
                             + "\n".join(problems))


def _check_build_error(case: Any, spec: dict) -> None:
    error_type = getattr(wl, spec.get("type", "DefinitionError"))
    try:
        case.pipeline()
    except error_type as exc:
        code = spec.get("code")
        if code is not None and getattr(exc, "code", None) != code:
            raise AssertionError(f"{case.id}: expected error code {code}, got "
                                 f"{getattr(exc, 'code', None)}: {exc}") from exc
        return
    raise AssertionError(f"{case.id}: building the pipeline should raise {error_type.__name__}")


# --- tests --------------------------------------------------------------------------------------

def test_transcripts_exist_and_names_are_unique():
    assert len(CASES) >= 50
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.file for c in CASES} == {p.name for p in loader.HERE.glob("*.yaml")}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_transcript_builds(case):
    """The document compiles and (unless it pins a build error) builds a pipeline."""
    if case.doc.get("build_error") is None:
        assert case.pipeline() is not None
        assert case.steps


@pytest.mark.parametrize(("engine", "stepwise"), ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_transcript(case, engine, stepwise):
    check_transcript(case, engine=engine, stepwise=stepwise)


@pytest.mark.parametrize("case", [c for c in CASES if c.doc.get("build_error") is None],
                         ids=lambda c: c.id)
def test_transcript_resumed_from_snapshots(case):
    check_transcript_resumed(case)


def test_yaml_clock_strings_are_not_sexagesimal():
    doc = yaml.load(  # a SafeLoader subclass: safe
        "{name: probe, assigner: {tumbling: 5 minutes}, function: {aggregate: [{count: null}]},"
        " steps: [{input: [[a, 12:05, 1], [a, -00:00:00.001, 2], [a, 2024-03-10T05:00:00Z, 3],"
        " [a, 1d 00:00:01.500, 4]]}]}", Loader=loader.YamlLoader)
    case = loader.compile_doc(doc)
    elements = case.steps[0].bundle.elements
    assert [e["ts"] for e in elements] == [(12 * 60 + 5) * 60_000, -1, 1_710_046_800_000,
                                           86_401_500]


def test_a_wrong_expectation_fails():
    """The checker is not vacuous: a transcript with one pane index off must fail."""
    case = loader.compile_doc(yaml.load("""
        name: probe
        assigner: {tumbling: 10}
        function: {aggregate: [{count: null, as: n}]}
        steps:
          - input: [[a, 1, 1]]
            watermark: 9
            expect: [{key: a, window: [0, 10], pane: 1, timing: ON_TIME, final: true, n: 1}]
        """, Loader=loader.YamlLoader))
    with pytest.raises(AssertionError, match="pane_index"):
        check_transcript(case)
