"""``shipping.code_digest``: one name for the code ``ship_code`` ships (windowlib and the
named modules' top-level packages), changing with any of their sources; a Connect session
chain keys on it (``dags/_windowlib_tasks.py``)."""

from __future__ import annotations

import pytest

from windowlib.core.errors import ExecutionError
from windowlib.engines.spark.shipping import code_digest

pytestmark = pytest.mark.unit


def test_the_digest_changes_with_any_shipped_source_and_only_then(tmp_path, monkeypatch):
    pkg = tmp_path / "wl_digest_pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "notes.txt").write_text("not shipped\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = code_digest(["wl_digest_pkg.sub"])
    # the top-level package of a submodule, named twice or once: the same code
    assert code_digest(["wl_digest_pkg", "wl_digest_pkg.sub"]) == first
    assert code_digest() != first                      # windowlib alone is other code
    (pkg / "notes.txt").write_text("changed, still not shipped\n")
    assert code_digest(["wl_digest_pkg"]) == first
    (pkg / "sub" / "__init__.py").write_text("Y = 2\n")
    changed = code_digest(["wl_digest_pkg"])
    assert changed != first
    (pkg / "sub" / "extra.py").write_text("")          # a new module is new code too
    assert code_digest(["wl_digest_pkg"]) not in (first, changed)


def test_a_module_without_source_has_no_digest():
    with pytest.raises(ExecutionError) as err:
        code_digest(["wl_no_such_module_anywhere"])
    assert err.value.code == "MODULE_UNAVAILABLE"
