"""``persona status`` without typer: the plain spellings of the command, parsed here, run as typer would run them.

typer, its click and the pydantic adapters typer builds for each option cost
more than the status itself. This reads only the spellings a user types
(the global options, ``status``, ``--profile``/``-p`` and ``--json``, each
value given as its own argument or after ``=``) and leaves everything else to
typer: a deprecated or repeated flag, a value that starts with ``-``, ``--``,
``--help``, an argument that is not UTF-8, shell completion, or a stdout that
cannot write UTF-8. What it prints is :func:`~.status_view.show_status`'s, as
the typer command prints it; a test compares the two byte for byte.
"""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .plain import CliState

# option -> (field of the parsed options, takes a value, repeatable)
GLOBAL = {"--config": ("config", True, True), "-c": ("config", True, True), "--env": ("env", True, False),
          "--set": ("set", True, True), "--db": ("db", True, False), "--debug": ("debug", False, False)}
STATUS = {"--profile": ("profile", True, False), "-p": ("profile", True, False), "--json": ("json", False, False)}
Parsed = dict[str, list[str]]


def answer(args: list[str]) -> int | None:
    """Run ``persona ARGS`` when it is a plain ``status`` and return its exit code; else None (typer runs it)."""
    parsed = _parse(args) if "status" in args else None
    if parsed is None or "_PERSONA_COMPLETE" in os.environ or not _writes_utf8():
        return None
    from ..errors import PersonaError
    from .plain import CliState, configure_logging
    from .status_view import show_status

    debug = bool(parsed.get("debug"))
    configure_logging(debug)
    cli = CliState(config_files=[Path(file) for file in parsed.get("config", [])], env_name=_one(parsed, "env"),
                   set_pairs=parsed.get("set", []), db=_one(parsed, "db"), debug=debug)
    if not debug and _recorded(cli, parsed):
        return 0
    try:
        show_status(cli, _one(parsed, "profile"), bool(parsed.get("json")), _echo)
    except PersonaError as error:
        if debug:
            raise
        _echo(f"error: {error}", err=True)
        return 1
    return 0


def _recorded(cli: CliState, parsed: Parsed) -> bool:
    """Status from the recorded settings (:mod:`.settings_record`), printed only once all of it was made; False
    (nothing printed) when there is no record of this key, or it lacks a setting, or anything goes wrong: the
    full path then runs, exactly as before."""
    from .settings_record import NotRecorded, held, lookup
    from .status_view import show_status

    recorded = lookup(cli)
    if recorded is None:
        return False
    said: list[tuple[str, bool]] = []
    cli._settings = recorded  # type: ignore[assignment]  # the settings' attributes status reads, recorded
    with held() as later:
        try:
            show_status(cli, _one(parsed, "profile"), bool(parsed.get("json")),
                        lambda message, err=False: said.append((message, err)))
        except (Exception, NotRecorded):
            return False
        finally:
            cli._settings = None
    for show in later:
        show()
    for message, err in said:
        _echo(message, err=err)
    return True


def _parse(args: list[str]) -> Parsed | None:
    """The options of ``[GLOBAL...] status [STATUS...]``, or None for anything else."""
    if any(not _utf8(arg) for arg in args):
        return None
    command = args.index("status")
    parsed: Parsed = {}
    if not _options(args[:command], GLOBAL, parsed) or not _options(args[command + 1:], STATUS, parsed):
        return None
    return parsed


def _options(args: list[str], known: dict[str, tuple[str, bool, bool]], parsed: Parsed) -> bool:
    index = 0
    while index < len(args):
        name, equals, value = args[index].partition("=")
        if name not in known or (equals and not name.startswith("--")):
            return False
        field, takes_value, repeatable = known[name]
        if takes_value and not equals:
            index += 1
            if index == len(args) or args[index].startswith("-"):
                return False
            value = args[index]
        elif not takes_value and equals:
            return False
        if field in parsed and not repeatable:
            return False
        parsed.setdefault(field, []).append(value)
        index += 1
    return True


def _one(parsed: Parsed, field: str) -> str | None:
    values = parsed.get(field)
    return values[0] if values else None


def _utf8(argument: str) -> bool:
    try:
        argument.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _writes_utf8() -> bool:
    """stdout and stderr write UTF-8 (click rewraps an ASCII-configured stream; typer, then, does)."""
    try:
        return all(codecs.lookup(stream.encoding).name == "utf-8" for stream in (sys.stdout, sys.stderr))
    except (AttributeError, LookupError, TypeError):
        return False


def _echo(message: str, err: bool = False) -> None:
    """``typer.echo`` for text: the line and a newline, flushed; escape sequences stripped when not a terminal."""
    stream = sys.stderr if err else sys.stdout
    if "\x1b" in message and not stream.isatty():
        import re

        message = re.sub(r"\033\[[;?0-9]*[a-zA-Z]", "", message)
    stream.write(message + "\n")
    stream.flush()
