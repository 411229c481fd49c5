"""The semantic core stays plain Python (STYLE: "Semantics live once").

``windowlib/core`` imports only the standard library, pendulum and ``windowlib.core`` itself —
never Spark, boto3, Airflow, GX, pandas or pyarrow — and importing ``windowlib``, its core,
``windowlib.testing`` and the reference engine loads none of those either. Checked twice: by
reading every import statement of the core (including ones inside functions and
``TYPE_CHECKING`` blocks), and by importing in a fresh interpreter and listing ``sys.modules``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import windowlib
from windowlib.core.describe import collector_paused

pytestmark = pytest.mark.unit

PACKAGE = Path(windowlib.__file__).resolve().parent
CORE = PACKAGE / "core"
FORBIDDEN = {"pyspark", "boto3", "botocore", "airflow", "great_expectations", "pandas",
             "pyarrow"}
THIRD_PARTY_ALLOWED = {"pendulum"}
CORE_FILES = sorted(CORE.rglob("*.py"))
CORE_MODULES = sorted(
    ".".join(("windowlib", *path.relative_to(PACKAGE).with_suffix("").parts))
    .removesuffix(".__init__") for path in CORE_FILES)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in ``path``."""
    package = ".".join(("windowlib", *path.relative_to(PACKAGE).parent.parts))
    out = []
    with collector_paused():     # (see its docstring)
        tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                out.append((node.lineno, f"{base}.{node.module}" if node.module else base))
            else:
                out.append((node.lineno, node.module))
    return out


def loaded_in_a_fresh_interpreter(statement: str) -> set[str]:
    code = f"{statement}; import sys; print('\\n'.join(sorted(sys.modules)))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True, env=env)
    return set(result.stdout.split())


def top_level(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_the_core_has_modules_to_check():
    assert len(CORE_FILES) > 10
    assert "windowlib.core.driver" in CORE_MODULES
    assert "windowlib.core.triggers" in CORE_MODULES


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_core_module_imports_only_the_stdlib_pendulum_and_the_core(path):
    offenders = []
    for line, module in imports_of(path):
        top = module.split(".")[0]
        if top == "windowlib":
            if not (module == "windowlib.core" or module.startswith("windowlib.core.")):
                offenders.append(f"line {line}: {module} (outside windowlib.core)")
        elif top not in sys.stdlib_module_names and top not in THIRD_PARTY_ALLOWED:
            offenders.append(f"line {line}: {module}")
    assert offenders == []


def test_the_import_walk_sees_imports_inside_functions():
    """Guards the checker itself: a lazy import of pyspark would not slip through."""
    sample = CORE / "triggers" / "base.py"
    imports = dict((m, line) for line, m in imports_of(sample))
    assert "windowlib.core.describe" in imports  # imported inside Trigger.describe
    assert "windowlib.core.state" in imports


def test_importing_windowlib_its_core_testing_and_the_reference_engine_loads_no_heavy_package():
    loaded = loaded_in_a_fresh_interpreter(
        "import windowlib, " + ", ".join(CORE_MODULES)
        + ", windowlib.testing, windowlib.engines.reference")
    assert set(CORE_MODULES) <= loaded
    assert top_level(loaded) & FORBIDDEN == set()
    assert not any(m.startswith("windowlib.engines.spark") for m in loaded)


def test_importing_windowlib_loads_nothing_beyond_the_stdlib_pendulum_and_windowlib():
    """Whatever the interpreter itself and pendulum load is allowed (pendulum brings
    dateutil and six); anything else is a new dependency of the core."""
    baseline = top_level(loaded_in_a_fresh_interpreter("import pendulum"))
    loaded = top_level(loaded_in_a_fresh_interpreter(
        "import windowlib, " + ", ".join(CORE_MODULES)
        + ", windowlib.testing, windowlib.engines.reference"))
    extra = loaded - set(sys.stdlib_module_names) - baseline - {"windowlib"}
    assert extra == set()
    assert baseline & FORBIDDEN == set()


# --- the whole package: imports point downward and form no cycle ------------------------------

MODULE_STRING = re.compile(r"['\"](windowlib(?:\.\w+)+)['\"]")


def _module_names() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(("windowlib", *path.relative_to(PACKAGE).with_suffix("").parts))
        out[name.removesuffix(".__init__")] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the windowlib modules it imports: import statements anywhere (functions and
    ``TYPE_CHECKING`` blocks excepted: the latter never run), and every ``"windowlib.x"``
    string (``importlib.import_module``, ``__import__``, lazy attribute tables)."""
    modules = _module_names()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        source = path.read_text()
        with collector_paused():     # (see its docstring)
            tree = ast.parse(source, str(path))
        typing_only = {id(n) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                       for stmt in node.body for n in ast.walk(stmt)}
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                            for a in node.names}
        targets |= set(MODULE_STRING.findall(source))
        graph[module] = {r for t in targets if t.startswith("windowlib")
                         if (r := resolve(t)) and r != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_anywhere_in_windowlib():
    assert cycles(import_graph()) == []


def test_the_core_reaches_nothing_outside_it_not_even_through_module_strings():
    graph = import_graph()
    outside = {m: sorted(t for t in targets if not t.startswith("windowlib.core"))
               for m, targets in graph.items() if m.startswith("windowlib.core")}
    assert {m: t for m, t in outside.items() if t} == {}


def test_the_graph_walk_sees_strings_and_cycles():
    """Guards the checker: a module string counts as an import, and a cycle is found."""
    graph = import_graph()
    assert "windowlib.runs.source" in graph["windowlib"]        # the lazy attribute table
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
