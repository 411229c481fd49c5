"""The test scheduling plugin (``tests/xdist_costs.py``): groups, cost shares, heaviest-first
order, and that its tables name modules and functions that exist."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
import xdist_costs as xc

from windowlib.core.describe import collector_paused

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
SPLIT_MODULE = sorted(xc.SPLIT)[0]
BY_FUNCTION = sorted(xc.SPLIT_FUNCTIONS)[0]


def test_a_module_is_one_group_unless_split():
    assert xc.group_of("tests/unit/test_x.py::test_a[1]") == "tests/unit/test_x.py"
    assert xc.group_of("tests/unit/test_x.py::Cls::test_b") == "tests/unit/test_x.py"
    assert xc.group_of(f"{SPLIT_MODULE}::test_a[p-1]") == f"{SPLIT_MODULE}::test_a[p-1]"
    assert xc.group_of(f"{BY_FUNCTION}::test_a[p-1]") == f"{BY_FUNCTION}::test_a"


def test_a_cost_entry_is_shared_by_the_tests_it_names(monkeypatch):
    monkeypatch.setattr(xc, "COST_S", {"tests/m.py": 90.0, "tests/m.py::test_big": 40.0})
    cost = xc.costs(["tests/m.py::test_big[1]", "tests/m.py::test_big[2]", "tests/m.py::a",
                     "tests/m.py::b", "tests/m.py::c", "tests/other.py::d"])
    assert cost == {"tests/m.py::test_big[1]": 20.0, "tests/m.py::test_big[2]": 20.0,
                    "tests/m.py::a": 30.0, "tests/m.py::b": 30.0, "tests/m.py::c": 30.0,
                    "tests/other.py::d": xc.DEFAULT_TEST_S}


def test_workers_order_groups_heaviest_first_keeping_each_group_in_order(monkeypatch):
    monkeypatch.setattr(xc, "COST_S", {"tests/light.py": 5.0, "tests/heavy.py": 50.0,
                                       f"{SPLIT_MODULE}::test_s": 20.0})
    ids = ["tests/light.py::a", "tests/heavy.py::a", "tests/unlisted.py::a", "tests/heavy.py::b",
           f"{SPLIT_MODULE}::test_s[1]", f"{SPLIT_MODULE}::test_s[2]", "tests/light.py::b"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    worker = SimpleNamespace(option=SimpleNamespace(dist="no", loadgroup=True))
    xc.pytest_collection_modifyitems(worker, items)
    assert [i.nodeid for i in items] == [
        "tests/heavy.py::a", "tests/heavy.py::b", f"{SPLIT_MODULE}::test_s[1]",
        f"{SPLIT_MODULE}::test_s[2]", "tests/light.py::a", "tests/light.py::b",
        "tests/unlisted.py::a"]


def test_without_loadgroup_the_collection_is_left_alone():
    items = [SimpleNamespace(nodeid=i) for i in ("tests/b.py::x", "tests/a.py::y")]
    xc.pytest_collection_modifyitems(SimpleNamespace(option=SimpleNamespace(dist="no")), items)
    assert [i.nodeid for i in items] == ["tests/b.py::x", "tests/a.py::y"]
    config = SimpleNamespace(option=SimpleNamespace(dist="loadfile"))
    assert xc.pytest_xdist_make_scheduler(config, log=None) is None


def _functions(path: Path) -> set[str]:
    with collector_paused():     # (see its docstring)
        tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_the_tables_name_existing_modules_and_functions():
    for key in [*xc.COST_S, *xc.SPLIT, *xc.SPLIT_FUNCTIONS]:
        path, _, function = key.partition("::")
        assert (REPO / path).is_file(), key
        if function:
            assert function in _functions(REPO / path), key
