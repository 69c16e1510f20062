"""`persona hooks install | remove claude-code`: the SessionStart hook in Claude Code's settings.json."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import ConfigError
from ..hosts import registry

hooks_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                        help="Install or remove a host's session-start hook (Claude Code's SessionStart).")


def register(app: typer.Typer) -> None:
    app.add_typer(hooks_app, name="hooks")


HOSTS = tuple(registry.hooks())  # the hosts with a session-start hook
HostArgument = Annotated[str, typer.Argument(help=f"The host: {registry.spelled(HOSTS)}.")]
UserOption = Annotated[bool, typer.Option("--user", help="~/.claude/settings.json: every project (the default).")]
ProjectOption = Annotated[Path | None, typer.Option(
    "--project", metavar="DIR", help="DIR/.claude/settings.json: that project only.")]


def _settings_file(host: str, user: bool, project: Path | None) -> Path:
    from ..integrations.claude_hooks import settings_file

    if host not in HOSTS:
        raise ConfigError([f"unknown host {host!r}; hooks can be installed for: {', '.join(HOSTS)}"])
    if user and project is not None:
        raise ConfigError(["give --project DIR or --user, not both"])
    return settings_file(user=project is None, project=project, home=Path.home())


@hooks_app.command("install")
def install(host: HostArgument, user: UserOption = False, project: ProjectOption = None) -> None:
    """Add the SessionStart hook (matcher startup|resume|clear|compact) running `persona inject --format
    claude-code`; every other byte of settings.json stays."""
    from ..integrations.claude_hooks import MATCHER, hook_command
    from ..integrations.claude_hooks import install as add

    path = _settings_file(host, user, project)
    command = hook_command()
    if add(path, command):
        typer.echo(f"{path}: added the SessionStart hook ({MATCHER}) running {command}")
    else:
        typer.echo(f"{path}: already runs the persona hook; nothing changed")


@hooks_app.command("remove")
def remove(host: HostArgument, user: UserOption = False, project: ProjectOption = None) -> None:
    """Take the hook out again: the file as it was before install, byte for byte, when nothing else changed."""
    from ..integrations.claude_hooks import remove as take_out

    path = _settings_file(host, user, project)
    typer.echo(f"{path}: removed the persona hook" if take_out(path) else f"{path}: holds no persona hook")
