"""What each target's host will load of ours, each installed hook's text and Hermes' plugin prompt section:
`persona targets check` and `persona status` (which runs without typer: nothing here imports it, but a hook's
check, which renders its text as `persona inject` does)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import inputs
from ..errors import InputError, PersonaError
from ..hosts import registry
from .plain import CliState

if TYPE_CHECKING:
    from ..config.host_loads import Check
    from ..config.schema import Settings
    from ..hosts.model import Limit


def target_checks(cli: CliState, profile: str | None, project: Path | None = None) -> list[Check]:
    """Every file target's check (with ``project``, the user-level ones and that project's), then each installed
    hook's, as it runs in ``project`` (default: the working directory), and each plugin prompt section's (see
    :mod:`pipeline.config.host_loads`)."""
    settings = cli.settings()
    where = None if project is None else inputs.expanded(project).resolve()
    checks = [_check(settings, name, profile) for name, target in settings.targets.items()
              if target.output != "store" and (where is None or not target.project
                                               or inputs.expanded(Path(target.project)).resolve() == where)]
    return checks + hook_checks(cli, profile, project or Path.cwd()) + section_checks(cli, profile)


def _check(settings: Settings, name: str, profile: str | None) -> Check:
    from ..config.host_loads import Check, check_target
    from ..config.targets import raw_path, resolve_target

    try:
        return check_target(resolve_target(settings, name, profile=profile), settings.targets[name].host,
                            Path(inputs.home()), settings.render.max_region_file_bytes)
    except PersonaError as error:  # another profile's file, broken markers: said, not a cut
        return Check(name, Path(raw_path(settings, name)), (), (), f"cannot check: {error}", cut=False)


def hook_checks(cli: CliState, profile: str | None, project: Path) -> list[Check]:
    """The Claude Code hook's text against its character limit, where the hook is installed; a settings file that
    cannot be read is said as such (status goes on)."""
    from .host_checks import hook_files

    checks = []
    for host, limits in registry.hook_limits().items():  # made into settings' limits only where a hook runs
        for settings_file in hook_files(host, Path(inputs.home()), project):
            found = _hook_check(cli, profile, host, limits, settings_file, project)
            checks += [found] if found is not None else []
    return checks


def _hook_check(cli: CliState, profile: str | None, host: str, limits: tuple[Limit, ...],
                settings_file: Path, project: Path) -> Check | None:
    from ..config.host_loads import Check, check_text
    from ..config.presets import host_limits
    from ..integrations.claude_hooks import runs_ours

    try:
        if not runs_ours(settings_file):
            return None
    except InputError as error:
        return Check(f"{host} hook", settings_file, (), (), f"cannot check: {error}", cut=False)
    from ..inject.views import Reader  # the hook's text, as `persona inject` makes it (with typer, then)
    from .render_cmds import persona_appendix

    text = persona_appendix(cli, profile=profile, session_id=None, reader=Reader.at(host, project), hook=True)
    return check_text(f"{host} hook", settings_file, text, host_limits(limits))


def section_checks(cli: CliState, profile: str | None) -> list[Check]:
    """Hermes' plugin prompt section (Hermes 0.22 and later renders it), where the plugin is installed in Hermes'
    home: the text the section gives a session started here, as the plugin cuts it."""
    from ..fs.locations import hermes_plugin_dir

    where = hermes_plugin_dir()  # not the installer's module: it loads the YAML editor, which status never needs
    section = registry.sections().get(registry.HERMES)
    if section is None or not (where / "__init__.py").is_file():
        return []
    from ..config.host_loads import check_section
    from ..inject.views import Reader  # the section's text, as the plugin cuts it (with typer, then)
    from ..integrations.hermes_room import recorded
    from .render_cmds import persona_appendix

    text = persona_appendix(cli, profile=profile, session_id=None, reader=Reader.at(registry.HERMES, Path.cwd()),
                            hook=True).strip()
    room = recorded()
    crowd = (room.others, room.room) if room is not None else None
    return [check_section(f"{registry.HERMES} section", where, text, section, crowd)]


def check_line(check: Check) -> str:
    """One target's verdict in words, then what its host loads and each limit's measure."""
    details = [*check.measures, *(["the host loads " + ", ".join(map(str, check.loaded))] if check.loaded else [])]
    return f"{check.target}: {check.outcome} ({check.path}{''.join('; ' + d for d in details)})"
