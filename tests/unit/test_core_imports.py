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
import subprocess
import sys
from pathlib import Path

import pytest

import windowlib

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
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
