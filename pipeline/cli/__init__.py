"""The ``persona`` command line.

``main`` is the console script. ``persona --help`` (and no arguments, and ``-h``) is answered from the table
``make reference`` generates (``help_table.py``) before typer is imported; everything else runs the typer app of
``root.py``, which ``app`` here names on first use. (A replayable command with nothing changed since its last
run is answered before this: :mod:`pipeline.deliver`.)
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .root import PersonaCli, app


def main(prog_name: str | None = None) -> Any:
    """Run ``persona`` with ``sys.argv``: a help answered from the table, else the typer app."""
    code = without_typer(sys.argv[1:], prog_name)
    if code is not None:
        return code
    from .root import app

    return app(prog_name=prog_name)


def without_typer(args: list[str], prog_name: str | None) -> int | None:
    """The exit code of ``persona ARGS`` answered without typer, or None when typer must run it."""
    from . import fast_help

    return fast_help.answer(args, prog_name)


def __getattr__(name: str) -> Any:
    if name in ("app", "PersonaCli"):
        from . import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PersonaCli", "app", "main"]
