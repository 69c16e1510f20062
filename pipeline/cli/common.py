"""What every command shares: the global options, output, and error handling."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click.exceptions import UsageError  # typer vendors click; this is its usage error
from typer.core import TyperArgument, TyperGroup

from ..errors import PersonaError
from ..scopes import HOSTS, HostName

# The typer-free half, named here for the commands.
from .plain import CliState as CliState
from .plain import configure_logging as configure_logging
from .plain import shown as shown
from .plain import table as table
from .plain import width as width

if TYPE_CHECKING:
    from ..schedule.after_write import WriteRender
    from ..store import PersonaStore

ProfileOption = Annotated[
    str | None, typer.Option("--profile", "-p", help="Whose persona: a profile id (default: store.profile).")
]
# The old spellings of --profile: still accepted, with one warning ("session" now means a host's conversation).
DEPRECATED_FLAGS = {"--session": "--profile", "-s": "-p"}
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
ProjectOption = Annotated[str | None, typer.Option(
    "--project", metavar="[DIR]", help="Only in this project: DIR's repository (its remote, else its top level), "
    "else DIR; alone, the working directory's.")]
HostOption = Annotated[HostName | None, typer.Option(
    "--host", help="Only for this agent: " + ", ".join(HOSTS) + ".")]


def _plain_usage_name(argument: Any) -> str:
    """A required argument as ``CONTENT`` in usage lines, an optional one as ``[FILE]`` (typer writes
    ``{CONTENT}``, which users read as a literal brace to type)."""
    name = str(argument.display_name_raw) if argument.required else f"[{argument.display_name_raw}]"
    return name + ("..." if argument.nargs != 1 else "")


if hasattr(TyperArgument, "_usage_display_name"):  # typer's own hook for the usage line (0.26+)
    TyperArgument._usage_display_name = _plain_usage_name  # type: ignore[method-assign,assignment]


def say_rendered(done: WriteRender, *, as_json: bool = False) -> None:
    """The one line a write says about its render (JSON carries it instead), and each target it could not
    render, on stderr: the write stands, so the exit status stays 0."""
    if not as_json:
        typer.echo(done.line())
    for warning in done.warnings:
        typer.echo(f"warning: {warning}; the change is saved", err=True)


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


class PersonaGroup(TyperGroup):
    """Turns our typed errors into one line on stderr and exit code 1."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _check_arguments(args)
        return super().parse_args(ctx, _project_alone(_renamed_flags(args)))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except PersonaError as error:
            debug = isinstance(ctx.obj, CliState) and ctx.obj.debug
            if debug:
                raise
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(1) from None


def _check_arguments(arguments: list[str]) -> None:
    """Undecodable bytes in an argument are one usage error, not a crash deep inside (exit 2)."""
    for argument in arguments:
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            raw = argument.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            raise UsageError(f"argument {raw!r} is not valid UTF-8 text") from None


def _project_alone(arguments: list[str]) -> list[str]:
    """``--project`` with no directory after it (last, or before another option) means the working directory."""
    given: list[str] = []
    for index, argument in enumerate(arguments):
        if argument == "--":
            return given + arguments[index:]
        given.append(argument)
        following = arguments[index + 1] if index + 1 < len(arguments) else None
        if argument == "--project" and (following is None or following.startswith("-")):
            given.append(".")
    return given


def scope_of(project: str | None, host: str | None) -> str | None:
    """The scope ``--project [DIR]`` or ``--host NAME`` name (None: global); both at once is a usage error."""
    from ..fs.projects import identity_of
    from ..scopes import host_scope, project_scope

    if project is not None and host is not None:
        raise UsageError("give --project or --host, not both: a fact belongs to one project or one host")
    if project is not None:  # a directory (the working directory's, else DIR's checkout) or an identity
        return project_scope(identity_of(project))
    return None if host is None else host_scope(host)


def _renamed_flags(arguments: list[str]) -> list[str]:
    """The arguments with each deprecated flag spelled as its new name, and one warning for each used."""
    renamed: list[str] = []
    for index, argument in enumerate(arguments):
        if argument == "--":
            return renamed + arguments[index:]
        flag, equals, value = argument.partition("=")
        new = DEPRECATED_FLAGS.get(flag)
        if new is not None and (equals == "" or flag.startswith("--")):
            typer.echo(f"persona: warning: {flag} is deprecated; use {new}", err=True)
            argument = new + equals + value
        renamed.append(argument)
    return renamed


def warn_if_unknown(store: PersonaStore) -> None:
    """Say so when a profile holds nothing at all: a mistyped --profile otherwise looks like an empty persona."""
    from ..store.runs import last_run

    if not any(store.count_by_tier().values()) and last_run(store) is None:
        typer.echo(f"persona: warning: profile {shown(store.profile, 80)!r} has no facts and was never rendered "
                   "(is the name right? --profile, store.profile)", err=True)


def emit_json(data: Any) -> None:
    typer.echo(json_text(data))


def json_text(data: Any) -> str:
    """``data`` as every command prints JSON (without the line end)."""
    import json

    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


