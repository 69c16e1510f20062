"""What each target's host will load of ours, and each installed hook's text: `persona targets check` and
`persona status` (which runs without typer: nothing here imports it, but a hook's check, which renders its text
as `persona inject` does)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, PersonaError
from ..hosts import registry
from .plain import CliState

if TYPE_CHECKING:
    from ..config.host_loads import Check
    from ..config.schema import Settings
    from ..config.sections import HostLimit


def target_checks(cli: CliState, profile: str | None) -> list[Check]:
    """Every file target's check, then each installed hook's (see :mod:`pipeline.config.host_loads`)."""
    settings = cli.settings()
    checks = [_check(settings, name, profile) for name, target in settings.targets.items()
              if target.output != "store"]
    return checks + hook_checks(cli, profile)


def _check(settings: Settings, name: str, profile: str | None) -> Check:
    from ..config.host_loads import Check, check_target
    from ..config.targets import raw_path, resolve_target

    try:
        return check_target(resolve_target(settings, name, profile=profile), settings.targets[name].host,
                            Path.home(), settings.render.max_region_file_bytes)
    except PersonaError as error:  # another profile's file, broken markers: said, not a cut
        return Check(name, Path(raw_path(settings, name)), (), (), f"cannot check: {error}", cut=False)


def hook_checks(cli: CliState, profile: str | None) -> list[Check]:
    """The Claude Code hook's text against its character limit, where the hook is installed; a settings file that
    cannot be read is said as such (status goes on)."""
    from ..config.presets import HOOK_LIMITS

    checks = []
    for host, limits in HOOK_LIMITS.items():
        for settings_file in hook_files(host, Path.home(), Path.cwd()):
            found = _hook_check(cli, profile, host, limits, settings_file)
            checks += [found] if found is not None else []
    return checks


def _hook_check(cli: CliState, profile: str | None, host: str, limits: tuple[HostLimit, ...],
                settings_file: Path) -> Check | None:
    from ..config.host_loads import Check, check_text
    from ..integrations.claude_hooks import runs_ours

    try:
        if not runs_ours(settings_file):
            return None
    except InputError as error:
        return Check(f"{host} hook", settings_file, (), (), f"cannot check: {error}", cut=False)
    from ..inject.views import Reader  # the hook's text, as `persona inject` makes it (with typer, then)
    from .render_cmds import persona_appendix

    text = persona_appendix(cli, profile=profile, session_id=None, reader=Reader.at(host, Path.cwd()), hook=True)
    return check_text(f"{host} hook", settings_file, text, limits)


def check_line(check: Check) -> str:
    """One target's verdict in words, then what its host loads and each limit's measure."""
    details = [*check.measures, *(["the host loads " + ", ".join(map(str, check.loaded))] if check.loaded else [])]
    return f"{check.target}: {check.outcome} ({check.path}{''.join('; ' + d for d in details)})"


def hook_files(host: str, home: Path, project: Path) -> list[Path]:
    """The settings files (the user's, the project's) where ``host``'s hook may run persona."""
    from ..integrations.claude_hooks import settings_file

    if host not in registry.hooks():
        return []
    return [settings_file(user=True, project=None, home=home), settings_file(user=False, project=project, home=home)]
