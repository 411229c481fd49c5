"""The error-code registry (``windowlib/core/errors.py``) is what the docs show.

``docs/errors.md`` (code, class, exit code, meaning) is generated from the registry by
``docs/make_errors.py`` and must be up to date; ``docs/operations.md``'s troubleshooting table
(cause and fix per code) has exactly one row per registered code and links the generated page.
That every raised code is registered, with its class, is ``tests/unit/test_error_registry.py``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from windowlib.core import errors

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[2] / "docs"


def load_make_errors():
    spec = importlib.util.spec_from_file_location("make_errors", DOCS / "make_errors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def troubleshooting() -> str:
    text = (DOCS / "operations.md").read_text()
    section = text.split("## Troubleshooting by error code", 1)
    assert len(section) == 2, "docs/operations.md lost its troubleshooting section"
    return section[1].split("\n## ", 1)[0]


def documented_codes() -> list[str]:
    return re.findall(r"^\| `([A-Z0-9_]+)` \|", troubleshooting(), flags=re.M)


def test_errors_page_is_generated_from_the_registry_and_up_to_date(tmp_path):
    fresh = load_make_errors().render(tmp_path)
    assert (DOCS / "errors.md").read_text() == fresh.read_text(), (
        "docs/errors.md is stale: run .venv/bin/python docs/make_errors.py")


def test_errors_page_has_one_row_per_code_with_class_and_exit_code():
    text = (DOCS / "errors.md").read_text()
    rows = dict(re.findall(r"^\| `([A-Z0-9_]+)` \| (\w+ \| \d) ", text, flags=re.M))
    assert set(rows) == set(errors.REGISTRY)
    for code, entry in errors.REGISTRY.items():
        assert rows[code] == f"{entry.error_class.__name__} | {entry.exit_code}", code


def test_troubleshooting_has_one_row_per_registered_code():
    codes = documented_codes()
    assert len(codes) == len(set(codes)), "a code has two rows"
    assert codes == sorted(codes), "keep the rows sorted by code"
    missing = sorted(set(errors.REGISTRY) - set(codes))
    stale = sorted(set(codes) - set(errors.REGISTRY))
    assert not missing, f"registered codes without a cause/fix row in operations.md: {missing}"
    assert not stale, f"operations.md documents codes that are not registered: {stale}"


def test_troubleshooting_links_the_generated_table():
    assert "(errors.md)" in troubleshooting()
