"""Taking a target out: its text out of its file (our region, or a preset's own file when it is our last render),
then the target out of the config. `targets remove`, `hooks install --instead-of-targets` and the move of a target
out of a file git shares (:mod:`pipeline.cli.personal`) all do it this way."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import inputs
from ..errors import ConfigError, StoreError
from .plain import CliState

if TYPE_CHECKING:
    from ..config.targets import ResolvedTarget

# A whole file that only a preset makes (a preset's file target, or one with this template): removing the target
# deletes it.
OWNED_TEMPLATES = ("persona.mdc.j2",)


def remove_target(cli: CliState, name: str, profile: str | None, file: Path | None) -> str:
    """Take target ``name`` out of the config and its text out of its file; what was done, in words."""
    from ..config.edit import set_target
    from ..config.targets import resolve_target
    from .config_cmds import _edit_target, _protected

    settings = cli.settings()
    if name not in settings.targets:
        raise ConfigError([f"no target {name!r}; known: {', '.join(sorted(settings.targets)) or 'none'}"])
    target = resolve_target(settings, name, profile=profile)
    if target.output == "region":  # broken markers refuse here, before the config changes
        from ..config.targets import region_id
        from ..fs.region_file import current_region, region_path

        current_region(region_path(target.path), region_id(target), settings.render.max_region_file_bytes)
    config = _edit_target(cli, file)
    owned = settings.targets[name].host is not None or target.template in OWNED_TEMPLATES
    stop = Path(settings.targets[name].project or inputs.home())
    set_target(config, name, None, env_name=cli.env_name, protected=_protected(cli))
    return f"{config}: removed target {name!r}; {_take_out(target, cli, profile, owned=owned, stop=stop)}"


def _take_out(target: ResolvedTarget, cli: CliState, profile: str | None, *, owned: bool, stop: Path) -> str:
    """Take the target's text out of its file; what was done, in words."""
    from ..config.targets import region_id
    from ..fs.lock import file_lock, lock_path
    from ..fs.region_file import region_path, remove_region

    if target.output == "region":
        path = region_path(target.path)
        with file_lock(lock_path(path), 30):
            removed = remove_region(path, region_id(target), cli.settings().render.max_region_file_bytes)
        return f"its region left {path}" if removed else f"{path} held no region of it"
    if target.output == "file" and owned and target.path.is_file():
        return _delete_if_ours(target.path, cli, profile, stop)
    return "no file changed"


def _delete_if_ours(path: Path, cli: CliState, profile: str | None, stop: Path) -> str:
    """Delete a preset's own file (and the folders it alone filled) only when its bytes are the last render
    persona-tier put there: a file someone wrote or edited by hand stays, as a render would leave it
    (pipeline.stages.ownership)."""
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
    _prune(path.parent, stop)
    return f"deleted {path}, persona-tier's last render there"


def _prune(directory: Path, stop: Path) -> None:
    """Remove the directories a preset's file left empty (``.windsurf/rules``...), up to ``stop`` (the project, or
    the home directory), which stays."""
    stop = inputs.expanded(stop).resolve()
    directory = directory.resolve()
    while directory != stop and directory.is_relative_to(stop) and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent
