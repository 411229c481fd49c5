"""The error-code registry (``windowlib/core/errors.py``) is the truth about every raise site.

An ``ast`` walk of ``windowlib/``, ``jobs/``, ``dags/`` and ``infra/`` finds every call of an
error class (``DefinitionError(..., code="X")``, also through ``errors.StateError``) and
resolves its code: a literal, both branches of ``a if c else b``, or a parameter of the
enclosing function (its default and the literals its callers in the same module pass), else the
class's default code. Rules:

* the code is registered, and registered for the raising class or one of its base classes
  (windowlib defines no error classes outside ``errors.py``; another test checks that);
* a code the scan cannot resolve is a failure (pass a literal);
* literals compared with ``exc.code`` (``==``, ``!=``, ``in``) are registered codes;
* every registered code is raised somewhere, unless it is a class's default code (whose
  meaning says windowlib never raises it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from windowlib.core import errors
from windowlib.core.describe import collector_paused

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("windowlib", "jobs", "dags", "infra")
CLASSES = {cls.__name__: cls for cls in errors.ERROR_CLASSES}



@dataclass(frozen=True)
class Site:
    path: str
    line: int
    cls: str
    codes: frozenset[str]   # empty: unresolved

    def problems(self) -> list[str]:
        if not self.codes:
            return [f"{self.where}: {self.cls}(..., code=<expression>) — pass a literal code"]
        out = []
        for code in sorted(self.codes):
            entry = errors.REGISTRY.get(code)
            if entry is None:
                out.append(f"{self.where}: {self.cls} raises unregistered code {code}")
            elif not issubclass(CLASSES[self.cls], entry.error_class):
                out.append(f"{self.where}: {self.cls} raises {code}, registered for "
                           f"{entry.error_class.__name__}")
        return out

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def _trees() -> dict[str, ast.Module]:
    with collector_paused():     # (see its docstring)
        return {str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p))
                for top in SCANNED for p in sorted((ROOT / top).rglob("*.py"))}


def _name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else None


def _literals(node: ast.expr | None) -> set[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        body, orelse = _literals(node.body), _literals(node.orelse)
        return None if body is None or orelse is None else body | orelse
    return None


def _param_values(tree: ast.Module, func: ast.FunctionDef, param: str) -> set[str] | None:
    """The literals ``param`` of ``func`` can hold: its default and what callers in ``tree``
    pass (by keyword or position)."""
    args = func.args.posonlyargs + func.args.args
    names = [a.arg for a in args]
    values: set[str] = set()
    if param in names:
        index = names.index(param)
        defaults = func.args.defaults
        first_default = len(args) - len(defaults)
        if index >= first_default:
            values |= _literals(defaults[index - first_default]) or set()
    else:
        kwonly = [a.arg for a in func.args.kwonlyargs]
        if param not in kwonly:
            return None
        index = -1
        default = func.args.kw_defaults[kwonly.index(param)]
        values |= _literals(default) if default is not None else set()
    method = bool(names) and names[0] in ("self", "cls")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _name(node.func) != func.name:
            continue
        passed = next((kw.value for kw in node.keywords if kw.arg == param), None)
        pos = index - (1 if method and isinstance(node.func, ast.Attribute) else 0)
        if passed is None and 0 <= pos < len(node.args):
            passed = node.args[pos]
        if passed is not None:
            found = _literals(passed)
            if found is None:
                return None
            values |= found
    return values or None


def raise_sites() -> list[Site]:
    sites = []
    for path, tree in _trees().items():
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _name(node.func) not in CLASSES:
                continue
            cls = _name(node.func)
            expr = next((kw.value for kw in node.keywords if kw.arg == "code"), None)
            if expr is None:
                codes: set[str] | None = {CLASSES[cls].code}
            else:
                codes = _literals(expr)
                if codes is None and isinstance(expr, ast.Name):
                    scope = parents.get(node)
                    while scope is not None and not isinstance(scope, ast.FunctionDef):
                        scope = parents.get(scope)
                    if scope is not None:
                        codes = _param_values(tree, scope, expr.id)
            sites.append(Site(path, node.lineno, cls, frozenset(codes or ())))
    return sites


def compared_codes() -> list[tuple[str, str]]:
    """(file:line, literal) for every literal compared with ``<something>.code``."""
    out = []
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            if not (isinstance(node.left, ast.Attribute) and node.left.attr == "code"):
                continue
            for right in node.comparators:
                items = right.elts if isinstance(right, ast.Tuple | ast.List | ast.Set) \
                    else [right]
                for item in items:
                    if isinstance(item, ast.Constant) and isinstance(item.value, str):
                        out.append((f"{path}:{node.lineno}", item.value))
    return out


@pytest.fixture(scope="module")
def sites() -> list[Site]:
    return raise_sites()


def test_the_scan_resolves_every_kind_of_site(sites):
    by_code = {code for s in sites for code in s.codes}
    # a literal, a helper's positional parameter, a keyword default, a conditional
    for code in ("LATENESS_NEGATIVE", "GAP_NOT_POSITIVE", "KEY_INVALID", "S3_REQUEST_FAILED",
                 "S3_ACCESS_DENIED", "QUALITY_UNAVAILABLE"):
        assert code in by_code, code
    assert len(sites) > 250


def test_every_raise_site_uses_a_registered_code_of_its_class(sites):
    problems = [p for s in sites for p in s.problems()]
    assert not problems, "\n".join(problems)


def test_codes_compared_with_exc_code_are_registered():
    unknown = [(where, code) for where, code in compared_codes()
               if code not in errors.REGISTRY]
    assert not unknown, unknown


def test_every_registered_code_is_raised_or_is_a_class_default(sites):
    raised = {code for s in sites for code in s.codes}
    defaults = {cls.code for cls in errors.ERROR_CLASSES}
    unused = sorted(set(errors.REGISTRY) - raised - defaults)
    assert not unused, f"registered codes no site raises (remove them): {unused}"
    for code in defaults - raised:
        assert "never raised" in errors.REGISTRY[code].meaning, code


def test_every_class_default_code_is_registered_for_that_class():
    for cls in errors.ERROR_CLASSES:
        assert errors.REGISTRY[cls.code].error_class is cls


def test_error_classes_are_defined_only_in_the_registry():
    outside = []
    for path, tree in _trees().items():
        if path == "windowlib/core/errors.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(_name(b) in CLASSES for b in node.bases):
                outside.append(f"{path}:{node.lineno} {node.name}")
    assert not outside, outside


def test_the_hierarchy_drawing_names_every_class():
    doc = errors.__doc__ or ""
    for cls in errors.ERROR_CLASSES:
        assert cls.__name__ in doc and issubclass(cls, errors.WindowlibError)
