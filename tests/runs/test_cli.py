"""The ``windowlib`` command line as an operator meets it (no JVM): coded errors and exits for
a missing source and for bad partition ranges, ``--version``, help text free of RST markup, and
tables that keep every character when the output is piped."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

from jobs.registry import REPO
from windowlib import cli

pytestmark = pytest.mark.unit

PIPELINE = "clickstream_demo"         # hourly partitions (arrival_hour), from jobs/pipelines


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["run", "backfill"])
def test_a_missing_source_folder_exits_2_with_a_code_before_spark_starts(tmp_path, command):
    """A user mistake is told at once: the source is checked before a Spark session (a JVM,
    ~20 s here) is started."""
    root = (tmp_path / "lake").as_uri()      # nothing under it: no data/clickstream folder
    proc = subprocess.run([sys.executable, "-m", "windowlib.cli", command, "--pipeline",
                           PIPELINE, "--root", root, "--json"], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 2, (out, err)
    assert "[SOURCE_NOT_FOUND]" in err and f"{root}/" in err
    assert "nothing_new" not in out and "Traceback" not in err
    assert "log4j" not in err and "SparkContext" not in err     # no JVM was started


@pytest.mark.parametrize(("first", "last", "code"), [
    ("2024-03-01T05", "2024-03-01T04", "PARTITION_RANGE_REVERSED"),
    ("2024-03-01", "2024-03-01", "PARTITION_PRECISION_MISMATCH"),      # daily for hourly
    ("2024-03-01T00", "2024-03-02", "PARTITION_PRECISION_MISMATCH"),
])
@pytest.mark.parametrize("command", ["run", "backfill"])
def test_bad_partition_ranges_exit_2_with_their_code(tmp_path, capsys, command, first, last,
                                                     code):
    argv = [command, "--pipeline", PIPELINE, "--root", tmp_path.as_uri(), "--first", first,
            "--last", last]
    status, _, err = _run(argv, capsys)
    assert status == 2 and f"[{code}]" in err and "Traceback" not in err


def test_run_pipeline_uses_the_same_partition_rules(tmp_path, capsys):
    from jobs import run_pipeline

    base = ["--pipeline", PIPELINE, "--root", tmp_path.as_uri(), "--dry-run"]
    assert run_pipeline.main([*base, "--first", "2024-03-01T05", "--last",
                              "2024-03-01T04"]) == 2
    assert capsys.readouterr().err.startswith("[PARTITION_RANGE_REVERSED]")
    assert run_pipeline.main([*base, "--first", "2024-03-01", "--last", "2024-03-01"]) == 2
    assert capsys.readouterr().err.startswith("[PARTITION_PRECISION_MISMATCH]")


def test_version_comes_from_the_installed_package_metadata(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == \
        f"windowlib {importlib.metadata.version('windowlib')}"


def _help_texts() -> list[str]:
    parser = cli._parser()
    texts = [parser.format_help()]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    texts += [p.format_help() for p in sub.choices.values()]
    return texts


def test_every_option_has_a_help_text():
    parser = cli._parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    bare = [f"{name} {' '.join(a.option_strings)}" for name, p in sub.choices.items()
            for a in p._actions if a.option_strings and not a.help]
    assert bare == []


def test_help_texts_carry_no_rst_markup():
    for text in _help_texts():
        assert "``" not in text and not re.search(r"(?<![\w`])`[^`\s][^`]*`(?!`)", text), text
    assert "windowlib run" in _help_texts()[0] or "run" in _help_texts()[0]


def test_piped_status_keeps_long_locations_whole(tmp_path):
    """Rich used to assume 80 columns when stdout is not a terminal and cut table cells
    (``…``); piped output must keep every character of a long root."""
    deep = tmp_path / ("a_rather_long_lake_root_name_" * 4) / "nested" / "lake"
    deep.mkdir(parents=True)
    root = deep.as_uri()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([sys.executable, "-m", "windowlib.cli", "status", "--pipeline",
                           PIPELINE, "--root", root], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    flat = re.sub(r"[\s│┃|]+", "", proc.stdout)
    assert re.sub(r"\s+", "", f"{root}/_windowlib/checkpoints") in flat
    assert re.sub(r"\s+", "", f"{root}/windows/{PIPELINE}") in flat
