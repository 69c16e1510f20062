"""Personal stays personal: in a git checkout, a project target never changes a file git tracks unless the user
asked for a shared target (`targets add --shared`). `targets add` picks the host's file that git does not share
(``Preset.private``) and lists ours in the clone's .git/info/exclude; `persona render` moves an older target out of
a tracked file, with a notice."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .. import inputs
from ..errors import ConfigError
from ..hosts import registry

if TYPE_CHECKING:
    from ..schedule.after_write import WriteRender
    from ..store import PersonaStore
    from .plain import CliState

HOST_PRESETS = registry.presets()


def keep_personal(path: Path, personal: Path | None, *, mine: bool) -> None:
    """List the target's file in its checkout's .git/info/exclude where it is ours alone (``mine``: a file we
    make), so `git status` stays clean; and say so."""
    from ..fs.git_files import exclude, in_checkout

    if personal is not None:
        listed = exclude(path)
        typer.echo(f"{personal} is shared through git, so the persona goes in {path}, which git does not share"
                   f"{f' ({listed} lists it)' if listed else ''}; --shared writes {personal} instead")
    elif mine and in_checkout(path):
        listed = exclude(path)
        typer.echo(f"{listed} lists {path}: git leaves it out (this clone only)" if listed else
                   f"git leaves {path} out already")


def personal_preset(preset: str, project: Path, asked: list[str]) -> tuple[str, Path | None]:
    """The preset to write in ``project`` so that no file git shares changes: the one asked for outside a git
    checkout and where its file is ours alone; else the host's untracked place (``Preset.private``), with the file
    it stands in for; a ConfigError naming --shared and --user where the host has none and git tracks the file."""
    from ..config.presets import project_file
    from ..fs.git_files import in_checkout, tracked

    found = HOST_PRESETS[preset]
    path = project_file(found, project)
    if found.output != "region" or not in_checkout(path):
        return preset, None
    if found.private is not None:
        return found.private, path
    if not tracked(path):
        return preset, None
    host = found.host_name or preset
    user = f"`persona targets add {host} --user`" if found.user_file else "a user-level file"
    raise ConfigError([f"{path} is tracked by git: a region there would publish your facts with the next commit, "
                       f"and {found.host} has no file there that git leaves out. `persona targets add "
                       f"{' '.join(asked)} --shared` writes it all the same (everyone the repository reaches sees "
                       f"them), or {user} keeps them in your home"])


def personal_user_file(path: Path, asked: list[str]) -> None:
    """A ConfigError naming --shared where the user's own file (a symlink followed: a dotfiles repository's) is
    tracked by git, as a home kept in git or a dotfiles repository does: a region there would go out with the
    next commit of it."""
    from ..fs.git_files import tracked
    from ..fs.projects import git_top_level

    real = path.resolve()
    if not tracked(real):
        return
    where = f"{real} in the git repository {git_top_level(real.parent)}" if real != path else f"{path}"
    raise ConfigError([f"{where} is tracked by git (a dotfiles repository?): a region there would publish your "
                       f"facts with its next commit. `persona targets add {' '.join(asked)} --shared` writes it all "
                       "the same, or leave that file out of the repository first"])


def render_written(cli: CliState, store: PersonaStore) -> WriteRender:
    """The render after a write (:meth:`CliState.render_written`), each target in a file git shares moved first,
    with the notice, as `persona render` moves it."""
    moved_first(cli, store.profile)
    return cli.render_written(store)


def moved_first(cli: CliState, profile: str) -> None:
    """:func:`move_shared`, and the settings read again where a target moved."""
    if move_shared(cli, profile):
        cli.reload()


def move_shared(cli: CliState, profile: str | None) -> bool:
    """Move each project target whose region sits in a file git tracks, and that the user did not ask to share,
    to its host's file that git does not share; warn where the host has none. Whether any target moved."""
    from ..config.targets import raw_path
    from ..fs.git_files import tracked

    settings = cli.settings()
    moved = False
    for name, target in settings.targets.items():
        found = HOST_PRESETS.get(target.host or "")
        if target.output != "region" or target.shared or found is None:
            continue
        path = inputs.expanded(Path(raw_path(settings, name)))
        if not tracked(path):
            continue
        if target.project is None:
            typer.echo(f"warning: target {name!r} writes a region of {path}, which git tracks (a dotfiles "
                       "repository?): your facts go out with its next commit; leave that file out of the repository, "
                       f"or set targets.{name}.shared: true to keep it there", err=True)
            continue
        if found.private is None:
            typer.echo(f"warning: target {name!r} writes a region of {path}, which git tracks: your facts go out "
                       f"with the next commit; `persona targets remove {name}` and `persona targets add "
                       f"{target.host} --user` keep them in your home (or set targets.{name}.shared: true to keep "
                       "it there)", err=True)
            continue
        _move(cli, name, path, found.private, Path(target.project), profile)
        moved = True
    return moved


def _move(cli: CliState, name: str, path: Path, private: str, project: Path, profile: str | None) -> None:
    """Take target ``name``'s region out of ``path`` and give it the ``private`` preset's file, under its name."""
    from ..config.edit import set_target
    from .config_cmds import _edit_target, _protected
    from .target_remove import remove_target

    project = inputs.expanded(project).resolve()
    new_path = project / HOST_PRESETS[private].project_file
    said = remove_target(cli, name, profile, None)
    config = _edit_target(cli, None)
    set_target(config, name, HOST_PRESETS[private].target(private, new_path, project), env_name=cli.env_name,
               protected=_protected(cli))
    typer.echo(f"notice: {said}; {path} is tracked by git, so target {name!r} now writes {new_path}, which git "
               "does not share")
    keep_personal(new_path, None, mine=True)
