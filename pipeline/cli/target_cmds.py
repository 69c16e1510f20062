"""`persona targets add | list | remove`: host presets written into the user's config, and taken out again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import inputs
from ..errors import ConfigError, InputError
from ..hosts import registry
from .checks import check_line, target_checks
from .common import CliState, JsonOption, ProfileOption, emit_json, state, table
from .personal import keep_personal, personal_preset, personal_user_file
from .target_remove import remove_target

if TYPE_CHECKING:  # a command imports the settings' modules when it runs, not when --help lists it
    pass

targets_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                          help="Add a coding agent's instruction file as a target, list, check or remove targets.")


def register(app: typer.Typer) -> None:
    app.add_typer(targets_app, name="targets")


HOST_PRESETS = registry.presets()
RULES_HELP = "; ".join(  # claude-code: own .claude/rules/persona.md instead of a region of CLAUDE.md.
    f"{host}: own {HOST_PRESETS[rules].project_file} instead of a region of {HOST_PRESETS[host].project_file}"
    for host, rules in registry.rules_variants().items()) + "."


@targets_app.command("add")
def add(
    ctx: typer.Context,
    preset: Annotated[str, typer.Argument(help=f"{registry.spelled(registry.main_presets())}.")],
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR",
                                                 help="The project's file (default: the working directory).")] = None,
    user: Annotated[bool, typer.Option("--user", help="The user's own file in the home directory.")] = False,
    name: Annotated[str | None, typer.Option(
        "--name", help="The target's name (default: the preset's; a project's beside a target of that name: the "
                       "preset and the project's directory, claude-code-shop).")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Config file to edit (default: the last one).")] = None,
    rules: Annotated[bool, typer.Option("--rules", help=RULES_HELP)] = False,
    shared: Annotated[bool, typer.Option(
        "--shared", help="In a git checkout, write the host's shared file (CLAUDE.md, AGENTS.md...) even though git "
                         "tracks it: your facts go to everyone the repository reaches.")] = False,
    instead: Annotated[bool, typer.Option(
        "--instead-of-hook", help="Where the host's session-start hook already gives it the persona: remove the "
                                  "hook and add the target, so each fact arrives once.")] = False,
) -> None:
    """Add a target writing the host's instruction file: its path, template, region markers or front matter,
    budget and limits. Where our session-start hook already reaches the host there, it says so and adds nothing,
    unless --instead-of-hook."""
    from ..config.edit import set_target
    from ..config.load_sets import waiting_for
    from ..config.presets import PRESETS, preset_path, project_dir
    from .config_cmds import _edit_target, _protected

    asked = [preset, *(["--rules"] if rules else []), *(["--user"] if user else []),
             *(["--project", str(project)] if project is not None else [])]
    preset = _preset_name(preset, rules)
    if user and project is not None:
        raise ConfigError(["give --project DIR or --user, not both"])
    preset, beside = (preset, None) if user else _beside_users_file(preset, project_dir(project))
    if not user:
        _refuse_displacing(preset, project_dir(project))
    preset, personal = (preset, None) if user or shared else personal_preset(preset, project_dir(project), asked)
    cli = state(ctx)
    try:
        path = preset_path(preset, project=project, user=user, home=Path(inputs.home()))
    except ValueError as error:
        raise ConfigError([str(error)]) from None
    if user and not shared:
        personal_user_file(path, asked)
    _one_way_in(cli, preset, path, None if user else project_dir(project), instead, asked)
    config = _edit_target(cli, file)
    settings = PRESETS[preset].target(preset, path, None if user else project_dir(project)) | (
        {"shared": True} if shared else {})
    name = name or _free_name(cli, preset, None if user else project_dir(project))
    set_target(config, name, settings, env_name=cli.env_name, protected=_protected(cli))
    what = "the whole file" if settings["output"] == "file" else "a region of"
    typer.echo(f"{config}: added target {name!r}, writing {what} {path} "
               f"(budget {settings['budget']} tokens); `persona render` fills it in")
    keep_personal(path, personal, mine=not shared and (settings["output"] == "file" or not path.exists()))
    waits = waiting_for(path, Path(inputs.home())) if user else None
    if waits is not None:
        typer.echo(f"{PRESETS[preset].host} reads {waits} while {path} is absent, so the target waits: a file of "
                   f"ours would stop it reading yours (a target of ours writing that file reaches it meanwhile). "
                   f"Create {path} and the next `persona render` writes it")
    if beside is not None and personal is None:
        typer.echo(f"{beside} stays as it is and {PRESETS[preset].host} still loads it: it reads {beside.name} only "
                   f"where there is no {HOST_PRESETS[beside_of(preset)].project_file}, so the persona goes in "
                   f"{PRESETS[preset].project_file}, which loads beside it")
    if settings["output"] == "file" and path.exists():
        typer.echo(f"warning: {path} already exists; a render replaces it only if it is one of persona-tier's own "
                   f"renders, else leaves it as it is: `persona adopt {path}` imports its facts and takes it over, "
                   "or give the target another path", err=True)


def _one_way_in(cli: CliState, preset: str, path: Path, project: Path | None, instead: bool,
                asked: list[str]) -> None:
    """Refuse a target whose host our session-start hook already reaches there (every fact would arrive twice),
    naming both ways; with ``instead``, take the hook out of each settings file first. The user's hook reaches
    every project; a project's own hook, that project's target and the user's (in every project we know)."""
    from ..integrations.claude_hooks import remove as take_out
    from ..integrations.claude_hooks import runs_ours
    from .host_checks import hook_files, projects_to_check

    host = HOST_PRESETS[preset].host_name or preset
    projects = [project] if project is not None else projects_to_check(cli, None)
    files = [hook for where in projects for hook in hook_files(host, Path(inputs.home()), where)]
    running = [hook for hook in dict.fromkeys(files) if runs_ours(hook)]
    if running and not instead:
        hooks = " and ".join(str(hook) for hook in running)
        raise InputError(f"{path}: no target added: {registry.display_name(host)} already gets the persona from "
                         f"the session-start hook in {hooks}, and with this file every fact would arrive twice. "
                         f"Either `persona targets add {' '.join(asked)} --instead-of-hook` (removes the hook, then "
                         "adds the target), or keep the hook and skip the target")
    for hook in running:
        take_out(hook)
        typer.echo(f"{hook}: removed the persona hook")


def _beside_users_file(preset: str, project: Path) -> tuple[str, Path | None]:
    """The preset to write in ``project``: the one asked for, or where its file would stop the host loading one
    of the user's (Claude Code's AGENTS.md without a CLAUDE.md), the preset's choice beside it; and that file."""
    from ..config.load_sets import displaced_by_ours

    chosen = HOST_PRESETS[preset].beside_fallback
    host = registry.HOSTS.get(HOST_PRESETS[preset].host_name or preset)
    users = None if chosen is None or host is None else displaced_by_ours(host, project)
    return (preset, None) if users is None or chosen is None else (chosen, users)


def _refuse_displacing(preset: str, project: Path) -> None:
    """Refuse a project file that would stop the host loading one of the user's, where the host has no other file
    to take ours (OpenCode's AGENTS.md hides every CLAUDE.md up the tree; Amp's, the directory's CLAUDE.md)."""
    from ..config.load_sets import displaced_by_ours

    found = HOST_PRESETS[preset]
    host = registry.HOSTS.get(found.host_name or preset)
    if host is None or found.beside_fallback is not None or found.project_file not in getattr(host.load, "names", ()):
        return  # the host's own way round it (Claude Code's rules folder), or a file of ours the host reads beside
    users = displaced_by_ours(host, project)
    if users is None:
        return
    ours = project / found.project_file
    user = f"`persona targets add {host.name} --user`" if found.user_file else "a user-level target"
    raise InputError(f"{ours}: no target added: {host.display} reads your {users} only while there is no "
                     f"{found.project_file} there, so a file of ours would stop it loading yours. Move your text "
                     f"into {ours} first (the target then writes a region of it), or {user} instead")


def beside_of(preset: str) -> str:
    """The preset whose ``beside_fallback`` is ``preset`` (the one the user asked for)."""
    return next(name for name, found in HOST_PRESETS.items() if found.beside_fallback == preset)


def _free_name(cli: CliState, preset: str, project: Path | None) -> str:
    """The preset's name, or for a project whose host already has a target of that name (the user-level one
    `persona init` adds, another project's), the preset and the project's directory: ``claude-code-shop``."""
    taken = set(cli.settings().targets)
    if preset not in taken:
        return preset
    base = preset if project is None else f"{preset}-{re.sub(r'[^A-Za-z0-9_-]+', '-', project.name).strip('-')}"
    candidates = [base, *(f"{base}-{index}" for index in range(2, 100))]
    return next((candidate for candidate in candidates if candidate not in taken and candidate != preset), base)


def _preset_name(preset: str, rules: bool) -> str:
    """The preset ``targets add`` means (``claude-code --rules``: Claude Code's rules folder)."""
    from ..config.presets import PRESETS, RULES_VARIANTS

    known = [name for name in PRESETS if name not in RULES_VARIANTS.values()]
    if preset not in known:
        raise ConfigError([f"unknown preset {preset!r}; known: {', '.join(known)}"])
    if rules and preset not in RULES_VARIANTS:
        raise ConfigError([f"--rules is for {', '.join(RULES_VARIANTS)} only"])
    return RULES_VARIANTS[preset] if rules else preset


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
    typer.echo(remove_target(state(ctx), name, profile, file))


@targets_app.command("check")
def check(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False,
          project: Annotated[Path | None, typer.Option(
              "--project", metavar="DIR", help="Only this project directory (default: every project a target "
                                               "names, and the working directory).")] = None) -> None:
    """What each target's host will load, and whether our bytes are in it whole; then per host and project
    everything the host loads (each file's part, whose text, its limits, what is cut). Exit 1 when any of ours
    would be cut, a fact would arrive twice or a file of ours displaces one of the user's."""
    from ..config.load_report import report_lines
    from .host_checks import host_reports, projects_to_check

    cli = state(ctx)
    checks = target_checks(cli, profile, project)
    reports = host_reports(cli, profile, projects_to_check(cli, project))
    if as_json:
        emit_json([*(c.as_dict() for c in checks), *(r.as_dict() for r in reports)])
    else:
        lines = [check_line(c) for c in checks] + [line for r in reports for line in report_lines(r)]
        typer.echo("\n".join(lines) or "no targets")
    if any(c.cut for c in checks) or any(r.failed for r in reports):
        raise typer.Exit(1)
