"""Every error code raised in ``windowlib/`` — and in the project's jobs, DAGs and infra
scripts, which users run too — is documented in ``docs/operations.md``'s troubleshooting
section, and every code documented there is still raised.

Codes are found with ``ast``: ``code="..."`` keyword arguments, ``code = "..."`` class
attributes, and string arguments passed in the position of a ``code`` parameter of a function
defined in ``windowlib/`` (e.g. ``_positive_ms(value, "session gap", "GAP_NOT_POSITIVE")``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _str(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
            CODE.fullmatch(node.value):
        return node.value
    return None


USER_FACING = ("windowlib", "jobs", "dags", "infra")


def raised_codes(roots: tuple[str, ...] = ("windowlib",)) -> dict[str, str]:
    """code -> first place (file:line) it is used under ``roots`` (folders of the repo)."""
    trees = {p: ast.parse(p.read_text()) for root in roots
             for p in sorted((ROOT / root).rglob("*.py"))}
    code_param: dict[str, int] = {}   # function name -> index of its ``code`` parameter
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                if "code" in names:
                    code_param[node.name] = names.index("code")
    found: dict[str, str] = {}

    def add(value: str | None, path: Path, node: ast.AST) -> None:
        if value is not None:
            found.setdefault(value, f"{path.relative_to(ROOT)}:{node.lineno}")

    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "code":
                        add(_str(kw.value), path, node)
                        if isinstance(kw.value, ast.IfExp):
                            add(_str(kw.value.body), path, node)
                            add(_str(kw.value.orelse), path, node)
                func = node.func
                name = func.id if isinstance(func, ast.Name) else \
                    func.attr if isinstance(func, ast.Attribute) else None
                index = code_param.get(name or "")
                if index is not None and index < len(node.args):
                    add(_str(node.args[index]), path, node)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "code" for t in targets) and \
                        node.value is not None:
                    add(_str(node.value), path, node)
    return found


def documented_codes() -> set[str]:
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text.split("## Troubleshooting by error code", 1)
    assert len(section) == 2, "docs/operations.md lost its troubleshooting section"
    body = section[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Z0-9_]+)` \|", body, flags=re.M))


def test_the_scan_finds_codes_of_every_kind():
    codes = raised_codes()
    # keyword, class attribute, positional through a helper, conditional expression
    for code in ("LATENESS_NEGATIVE", "DEFINITION_INVALID", "GAP_NOT_POSITIVE",
                 "S3_REQUEST_FAILED"):
        assert code in codes


def test_every_raised_code_is_documented():
    missing = {c: where for c, where in raised_codes(USER_FACING).items()
               if c not in documented_codes()}
    assert not missing, ("error codes without a row in docs/operations.md "
                         f"'Troubleshooting by error code': {missing}")


def test_every_documented_code_is_still_raised():
    stale = documented_codes() - set(raised_codes(USER_FACING))
    assert not stale, f"docs/operations.md documents codes windowlib no longer raises: {stale}"


def test_the_error_hierarchy_docstring_lists_every_raised_code():
    from windowlib.core import errors

    listed = set(CODE.findall(errors.__doc__ or ""))
    missing = {c: where for c, where in raised_codes().items() if c not in listed}
    assert not missing, f"codes missing from windowlib/core/errors.py's docstring: {missing}"
