"""`persona targets add | list | remove`: host presets written into the user's config, and taken out again."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config.targets import ResolvedTarget, resolve_target
from ..errors import ConfigError, StoreError
from .common import CliState, JsonOption, ProfileOption, emit_json, state, table

targets_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                          help="Add a coding agent's instruction file as a target, list targets, remove one.")
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
    if settings["output"] == "file" and path.exists():
        typer.echo(f"warning: {path} already exists; a render replaces it only if it is one of persona-tier's own "
                   f"renders, else leaves it as it is: `persona adopt {path}` imports its facts and takes it over, "
                   "or give the target another path", err=True)


@targets_app.command("list")
def list_targets(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Every target: what it writes, where, with which template and budget."""
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
    from .config_cmds import _edit_target, _protected

    cli = state(ctx)
    settings = cli.settings()
    if name not in settings.targets:
        raise ConfigError([f"no target {name!r}; known: {', '.join(sorted(settings.targets)) or 'none'}"])
    target = resolve_target(settings, name, profile=profile)
    if target.output == "region":  # broken markers refuse here, before the config changes
        from ..config.targets import region_id
        from ..fs.region_file import current_region, region_path

        current_region(region_path(target.path), region_id(target), settings.render.max_region_file_bytes)
    config = _edit_target(cli, file)
    set_target(config, name, None, env_name=cli.env_name, protected=_protected(cli))
    typer.echo(f"{config}: removed target {name!r}; {_take_out(target, cli, profile)}")


def _take_out(target: ResolvedTarget, cli: CliState, profile: str | None) -> str:
    """Take the target's text out of its file; what was done, in words."""
    from ..config.targets import region_id
    from ..fs.lock import file_lock, lock_path
    from ..fs.region_file import region_path, remove_region

    if target.output == "region":
        path = region_path(target.path)
        with file_lock(lock_path(path), 30):
            removed = remove_region(path, region_id(target), cli.settings().render.max_region_file_bytes)
        return f"its region left {path}" if removed else f"{path} held no region of it"
    if target.output == "file" and target.template in OWNED_TEMPLATES and target.path.is_file():
        return _delete_if_ours(target.path, cli, profile)
    return "no file changed"


def _delete_if_ours(path: Path, cli: CliState, profile: str | None) -> str:
    """Delete a preset's own file only when its bytes are the last render persona-tier put there: a file someone
    wrote or edited by hand stays, as a render would leave it (pipeline.stages.ownership)."""
    import hashlib

    from ..fs.read import read_regular_bytes
    from ..store.runs import last_render

    try:
        with cli.store(profile, readonly=True) as store:
            last = last_render(store, path)
    except StoreError:  # no database yet, so no render either
        last = None
    if last is None or last[0] != hashlib.sha256(read_regular_bytes(path)).hexdigest():
        return f"left {path} as it is: it is not persona-tier's last render (written or edited by someone else)"
    path.unlink()
    return f"deleted {path}, persona-tier's last render there"
