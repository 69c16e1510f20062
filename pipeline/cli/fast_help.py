"""``persona --help`` without typer: the answers typer gives, generated into ``help_table.py``.

typer and its click take longer to import than the help takes to print, and
``persona --help``, ``persona`` alone and ``persona -h`` always say the same:
``make reference`` records typer's own answers (``tests/docs_reference.py``),
and a test compares them with typer's byte for byte. Only the width the table
was made for is answered here (click wraps to the terminal, at most 78
columns); any other width, another program name, or shell completion asked
for goes to typer.
"""

from __future__ import annotations

import os
import sys

from .. import inputs

WIDTH = 80  # the terminal columns the table was made for, and any wider: click wraps to min(columns, 80) - 2


def answer(args: list[str], prog_name: str | None = None) -> int | None:
    """Print typer's answer to ``persona ARGS`` and return its exit code, when the table has it; else None."""
    if len(args) > 1 or (args and args[0] not in ("--help", "-h")) or not _ours(prog_name):
        return None
    if inputs.environ("_PERSONA_COMPLETE") is not None or _columns() < WIDTH:
        return None
    from .help_table import ANSWERS

    out, err, code = ANSWERS[args[0] if args else ""]
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


def _ours(prog_name: str | None) -> bool:
    """The program name click would show is the one the table was made with."""
    if prog_name is None:
        main = sys.modules.get("__main__")
        if getattr(main, "__package__", None) or not sys.argv:
            return False  # ``python -m`` of another module: click names the module
        prog_name = os.path.basename(sys.argv[0])
    return prog_name == "persona"


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` reads it for click (``$COLUMNS``, else the
    terminal of stdout, else 80), without importing shutil."""
    try:
        columns = int(inputs.environ("COLUMNS") or "")
    except ValueError:
        columns = 0
    try:
        lines = int(inputs.environ("LINES") or "")
    except ValueError:
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        if columns <= 0:
            columns = size.columns or 80
    return columns
