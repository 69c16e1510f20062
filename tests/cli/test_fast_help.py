"""`persona --help` (and `persona`, and `persona -h`) answered without typer, exactly as typer answers them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .. import docs_reference
from ..conftest import REPO

PERSONA = Path(sys.executable).with_name("persona")  # the console script `make install` wrote
ENTRY_POINTS = {"console script": [str(PERSONA)], "python -m pipeline": [sys.executable, "-m", "pipeline"]}
LOADED = """
import sys
from pipeline.cli import main
sys.argv[0], listing = "persona", sys.argv.pop()
try:
    code = main()
except SystemExit as exit:
    code = exit.code
with open(listing, "w") as out:
    out.write(" ".join(sorted(sys.modules)))
sys.exit(code)
"""


def run(argv: list[str], args: str, columns: int | None, home: Path) -> tuple[str, str, int]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO), "LINES": "24"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run([*argv, *args.split()], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    return done.stdout, done.stderr, done.returncode


def test_the_committed_table_is_what_typer_answers_now():
    committed = docs_reference.HELP_TABLE.read_text(encoding="utf-8")
    assert committed == docs_reference.help_table(), "pipeline/cli/help_table.py is stale: run make reference"


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("args", docs_reference.HELP_ARGS)
@pytest.mark.parametrize("columns", [80, 200, None, 60])
def test_persona_answers_byte_for_byte_as_typer_does(tmp_path, entry, args, columns):
    """At 80 columns and wider the table answers; at 60 typer does (click wraps to the terminal): both the same
    bytes, on the same streams, with the same exit code, as typer's own process at that width."""
    answer = run(ENTRY_POINTS[entry], args, columns, tmp_path)
    assert answer == docs_reference.typer_answer(args, columns or 80)
    assert answer[2] == (0 if args == "--help" else 2)


@pytest.mark.parametrize("args", ["--help", "", "-h"])
def test_the_help_imports_no_typer(tmp_path, args):
    modules = tmp_path / "modules.txt"
    _, _, code = run([sys.executable, "-c", LOADED, *args.split(), str(modules)], "", 80, tmp_path)
    assert code == (0 if args == "--help" else 2)
    loaded = set(modules.read_text().split())
    assert "pipeline.cli.help_table" in loaded
    assert not {module for module in loaded if module.startswith(("typer", "click", "pydantic", "shutil"))}


@pytest.mark.parametrize("args", ["--version", "--help status", "status --help", "-h status", "--debug --help"])
def test_anything_else_is_typers(tmp_path, args):
    modules = tmp_path / "modules.txt"
    run([sys.executable, "-c", LOADED, *args.split(), str(modules)], "", 80, tmp_path)
    assert "typer" in modules.read_text().split()


def test_shell_completion_goes_to_typer(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO), "COLUMNS": "80",
           "_PERSONA_COMPLETE": "bash_source"}
    ours = subprocess.run([str(PERSONA), "--help"], capture_output=True, text=True, env=env, timeout=120)
    theirs = subprocess.run([sys.executable, "-c", docs_reference.TYPER_PERSONA, "--help"], capture_output=True,
                            text=True, env=env, timeout=120)
    assert (ours.stdout, ours.stderr, ours.returncode) == (theirs.stdout, theirs.stderr, theirs.returncode)
