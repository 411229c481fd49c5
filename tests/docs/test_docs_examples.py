"""Every ```python block of ``docs/*.md`` and of ``README.md`` runs as a test.

Conventions (also stated in ``docs/README.md``):

- **Each block is self-contained**: its own imports and data, run in a fresh namespace, so a
  reader can copy any one block. Blocks of a file are *not* chained.
- A block checks its own claims with ``assert`` statements: what the docs say it computes is
  asserted inside the block, never restated in this test.
- When a ```text block is preceded by the line ``<!-- output -->``, it is the exact stdout of
  the ```python block before it; the test compares them.
- A block preceded by the line ``<!-- test: spark -->`` needs Spark: it runs with the shared
  session-scoped ``spark`` fixture active (``windowlib`` finds the active session) and is marked
  ``spark``; every other block is pure Python and marked ``unit``.
- Shell commands and configuration use ```bash / ```text fences and are not run.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Example:
    path: Path
    line: int            # 1-based line of the first code line
    code: str
    spark: bool
    output: str | None   # expected stdout, when an <!-- output --> block follows

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def extract(path: Path) -> list[Example]:
    """The ```python blocks of one Markdown file, with their markers and expected outputs."""
    lines = path.read_text().splitlines()
    blocks: list[tuple[str, int, list[str], str]] = []   # (lang, first line, body, marker)
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        marker = ""
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and lines[j].strip().startswith("<!--"):
            marker = lines[j].strip()
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        assert end < len(lines), f"{path}:{i + 1}: unclosed code fence"
        blocks.append((m.group(1), i + 2, lines[i + 1:end], marker))
        i = end + 1
    examples = []
    for k, (lang, first, body, marker) in enumerate(blocks):
        if lang != "python":
            assert marker not in ("<!-- test: spark -->",), f"{path}:{first}: marker on {lang}"
            continue
        output = None
        if k + 1 < len(blocks) and blocks[k + 1][3] == "<!-- output -->":
            assert blocks[k + 1][0] == "text", f"{path}:{blocks[k + 1][1]}: output must be text"
            output = "\n".join(blocks[k + 1][2]) + "\n"
        examples.append(Example(path, first, "\n".join(body) + "\n",
                                marker == "<!-- test: spark -->", output))
    return examples


def all_examples() -> list[Example]:
    files = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
    return [e for f in files for e in extract(f)]


EXAMPLES = all_examples()
UNIT = [e for e in EXAMPLES if not e.spark]
SPARK = [e for e in EXAMPLES if e.spark]


def run_example(example: Example) -> None:
    # leading newlines keep tracebacks' line numbers equal to the Markdown file's; the block
    # runs as its own file would (not under this module's ``from __future__`` imports)
    code = compile("\n" * (example.line - 1) + example.code, str(example.path), "exec",
                   dont_inherit=True)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {"__name__": "docs_example"})
    if example.output is not None:
        assert out.getvalue() == example.output, (
            f"{example.id}: the printed output differs from the <!-- output --> block")


@pytest.mark.unit
def test_every_docs_page_has_runnable_examples():
    pages = {e.path.name for e in EXAMPLES}
    for name in ("concepts.md", "flink-guide.md", "dsl.md", "operations.md", "README.md"):
        assert name in pages, f"{name} lost its Python examples"
    assert SPARK, "the Spark examples (incremental runs) are gone"


@pytest.mark.unit
@pytest.mark.parametrize("example", UNIT, ids=[e.id for e in UNIT])
def test_docs_example_runs(example):
    run_example(example)


@pytest.mark.spark
@pytest.mark.parametrize("example", SPARK, ids=[e.id for e in SPARK])
def test_docs_spark_example_runs(spark, example):
    run_example(example)
