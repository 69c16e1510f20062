"""`persona hooks install | remove claude-code`: the SessionStart hook in Claude Code's settings.json."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import inputs
from ..errors import ConfigError, InputError
from ..hosts import registry
from .common import ProfileOption, state

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
    return settings_file(user=project is None, project=project, home=Path(inputs.home()))


InsteadOption = Annotated[bool, typer.Option(
    "--instead-of-targets", help="Where a target's file already gives the host the persona: remove those targets "
                                 "(their text leaves their files) and install the hook, so each fact arrives once.")]


@hooks_app.command("install")
def install(ctx: typer.Context, host: HostArgument, user: UserOption = False, project: ProjectOption = None,
            instead: InsteadOption = False, profile: ProfileOption = None) -> None:
    """Add the SessionStart hook (matcher startup|resume|clear|compact) running `persona inject --format
    claude-code`; every other byte of settings.json stays. Where a file of ours already reaches the host there,
    it says so and installs nothing, unless --instead-of-targets."""
    from ..integrations.claude_hooks import MATCHER, hook_command, runs_ours
    from ..integrations.claude_hooks import install as add
    from .target_remove import remove_target

    path = _settings_file(host, user, project)
    command = hook_command()
    reaching = [] if runs_ours(path) else targets_reaching(ctx, host, project)
    if reaching and not instead:
        files = ", ".join(f"{file} (target {name})" for name, file in reaching)
        raise InputError(f"{path}: no hook installed: {registry.display_name(host)} already gets the persona from "
                         f"{files}, and with the hook every fact would arrive twice. Either `persona hooks install "
                         f"{host}{' --project ' + str(project) if project else ''} --instead-of-targets` (removes "
                         f"{'that target' if len(reaching) == 1 else 'those targets'}, then installs the hook), or "
                         "keep the file and skip the hook")
    for name, _ in reaching:
        typer.echo(remove_target(state(ctx), name, profile, None))
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


def targets_reaching(ctx: typer.Context, host: str, project: Path | None) -> list[tuple[str, Path]]:
    """The targets of ``host`` whose file the host loads in ``project`` (every project a target names and the
    working directory, for the user's hook), or will load once rendered: each name with its file."""
    from ..config.load_sets import load_set
    from ..config.targets import raw_path
    from .host_checks import projects_to_check

    cli = state(ctx)
    settings = cli.settings()
    projects = projects_to_check(cli, project)
    loaded = {path for where in projects for path in load_set(registry.HOSTS[host], where, Path(inputs.home())).paths}
    found = []
    for name, target in settings.targets.items():
        if target.host != host or target.output == "store":
            continue
        path = inputs.expanded(Path(raw_path(settings, name))).resolve()
        unrendered = not path.exists() and (target.project is None or
                                            inputs.expanded(Path(target.project)).resolve() in projects)
        if path in loaded or unrendered:
            found.append((name, path))
    return found
