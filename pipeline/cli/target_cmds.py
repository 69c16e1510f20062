"""`persona targets add | list | remove`: host presets written into the user's config, and taken out again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import ConfigError
from .common import JsonOption, ProfileOption, emit_json, state, table

if TYPE_CHECKING:  # a command imports the settings' modules when it runs, not when --help lists it
    from ..config.targets import ResolvedTarget

targets_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                          help="Add a coding agent's instruction file as a target, list targets, remove one.")


def register(app: typer.Typer) -> None:
    app.add_typer(targets_app, name="targets")


OWNED_TEMPLATES = ("persona.mdc.j2",)  # a whole file that only a preset makes: removing the target deletes it


@targets_app.command("add")
def add(
    ctx: typer.Context,
    preset: Annotated[str, typer.Argument(help="claude-code, codex, gemini, copilot or cursor.")],
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR",
                                                 help="The project's file (default: the working directory).")] = None,
    user: Annotated[bool, typer.Option("--user", help="The user's own file in the home directory.")] = False,
    name: Annotated[str | None, typer.Option("--name", help="The target's name (default: the preset's).")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Config file to edit (default: the last one).")] = None,
) -> None:
    """Add a target writing the host's instruction file: its path, template, region markers and budget."""
    from ..config.edit import set_target
    from ..config.presets import PRESETS, preset_path, project_dir
    from .config_cmds import _edit_target, _protected

    if preset not in PRESETS:
        raise ConfigError([f"unknown preset {preset!r}; known: {', '.join(PRESETS)}"])
    if user and project is not None:
        raise ConfigError(["give --project DIR or --user, not both"])
    cli = state(ctx)
    try:
        path = preset_path(preset, project=project, user=user, home=Path.home())
    except ValueError as error:
        raise ConfigError([str(error)]) from None
    config = _edit_target(cli, file)
    settings = PRESETS[preset].target(preset, path, None if user else project_dir(project))
    set_target(config, name or preset, settings, env_name=cli.env_name, protected=_protected(cli))
    what = "the whole file" if settings["output"] == "file" else "a region of"
    typer.echo(f"{config}: added target {name or preset!r}, writing {what} {path} "
               f"(budget {settings['budget']} tokens); `persona render` fills it in")


@targets_app.command("list")
def list_targets(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Every target: what it writes, where, with which template and budget."""
    from ..config.targets import resolve_target

    settings = state(ctx).settings()
    rows = []
    for name in settings.targets:
        target = resolve_target(settings, name, profile=profile)
        rows.append({"name": name, "output": target.output, "path": str(target.path), "template": target.template,
                     "budget": target.budget, "region": target.region})
    if as_json:
        emit_json(rows)
        return
    typer.echo(table(["NAME", "OUTPUT", "BUDGET", "TEMPLATE", "PATH"],
                     [[str(r[key]) for key in ("name", "output", "budget", "template", "path")] for r in rows]))


@targets_app.command("remove")
def remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The target to remove.")],
    profile: ProfileOption = None,
    file: Annotated[Path | None, typer.Option("--file", help="Config file to edit (default: the last one).")] = None,
) -> None:
    """Remove a target: our region leaves its file (the user's text stays), a preset's own file is deleted."""
    from ..config.edit import set_target
    from ..config.targets import resolve_target
    from .config_cmds import _edit_target, _protected

    cli = state(ctx)
    settings = cli.settings()
    if name not in settings.targets:
        raise ConfigError([f"no target {name!r}; known: {', '.join(sorted(settings.targets)) or 'none'}"])
    target = resolve_target(settings, name, profile=profile)
    if target.output == "region":  # broken markers refuse here, before the config changes
        from ..config.targets import region_id
        from ..fs.region_file import current_region, region_path

        current_region(region_path(target.path), region_id(target))
    config = _edit_target(cli, file)
    set_target(config, name, None, env_name=cli.env_name, protected=_protected(cli))
    typer.echo(f"{config}: removed target {name!r}; {_take_out(target)}")


def _take_out(target: ResolvedTarget) -> str:
    """Take the target's text out of its file; what was done, in words."""
    from ..config.targets import region_id
    from ..fs.lock import file_lock, lock_path
    from ..fs.region_file import region_path, remove_region

    if target.output == "region":
        path = region_path(target.path)
        with file_lock(lock_path(path), 30):
            removed = remove_region(path, region_id(target))
        return f"its region left {path}" if removed else f"{path} held no region of it"
    if target.output == "file" and target.template in OWNED_TEMPLATES and target.path.is_file():
        target.path.unlink()
        return f"deleted {target.path}, which was ours alone"
    return "no file changed"
