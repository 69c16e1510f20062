"""Per host and project directory, everything that host loads, measured (:mod:`pipeline.config.load_report`):
what `persona targets check` and `status` show after the targets, and what `hooks install` asks before it adds a
hook beside a file of ours."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import inputs
from ..errors import InputError, PersonaError, StoreError
from ..hosts import registry
from .plain import CliState

if TYPE_CHECKING:
    from ..config.load_report import Delivery, HostReport
    from ..config.targets import ResolvedTarget


def projects_to_check(cli: CliState, project: Path | None) -> list[Path]:
    """``project``, else every project directory a target names and the working directory."""
    from ..config.load_report import project_dirs

    return [inputs.expanded(project).resolve()] if project is not None else project_dirs(cli.settings(), [Path.cwd()])


def host_reports(cli: CliState, profile: str | None, projects: list[Path]) -> list[HostReport]:
    """Each host that a target of ours or our hook reaches, in each of ``projects`` where it loads something of
    ours: its whole load set, measured (:func:`pipeline.config.load_report.host_reports`)."""
    from ..config.load_report import host_reports as measured

    return measured(cli.settings(), _targets(cli, profile), projects, lambda: _fact_texts(cli, profile),
                    lambda host, project: hook_deliveries(cli, profile, host, project), Path(inputs.home()))


def _targets(cli: CliState, profile: str | None) -> list[ResolvedTarget]:
    from ..config.targets import resolve_target

    settings = cli.settings()
    found = []
    for name, target in settings.targets.items():
        if target.output == "store":
            continue
        try:
            found.append(resolve_target(settings, name, profile=profile))
        except PersonaError:  # another profile's file: its own check line says so
            continue
    return found


def _fact_texts(cli: CliState, profile: str | None) -> list[str]:
    """Each of the profile's facts as a render writes it (one line of plain text)."""
    from ..render.sanitize import inline

    try:
        with cli.store(profile, readonly=True) as store:
            return [inline(fact.content) for fact in store.list()]
    except StoreError:  # no database yet: no facts to arrive twice
        return []


def hook_deliveries(cli: CliState, profile: str | None, host: str, project: Path) -> list[Delivery]:
    """The text our session-start hook gives ``host`` in ``project``, once per settings file that runs it."""
    from ..config.load_report import Delivery
    from ..integrations.claude_hooks import runs_ours

    hook = registry.hooks().get(host)
    if hook is None:
        return []
    found = []
    for settings_file in hook_files(host, Path(inputs.home()), project):
        try:
            if not runs_ours(settings_file):
                continue
        except InputError:  # an unreadable settings file: the hook check line says so
            continue
        from ..inject.views import Reader  # the injector and typer: only where a hook of ours runs
        from .render_cmds import persona_appendix

        text = persona_appendix(cli, profile=profile, session_id=None, reader=Reader.at(host, project), hook=True)
        found.append(Delivery(f"the {hook.event} hook ({settings_file})", text))
    return found


def head_lines(reports: list[HostReport]) -> list[str]:
    """What `status` shows: each host and project's verdict, its problems and its warnings."""
    from ..config.load_report import report_lines

    return [line for report in reports
            for line in report_lines(report)[:1 + len(report.problems)] + list(report.warnings)]


def hook_files(host: str, home: Path, project: Path) -> list[Path]:
    """The settings files (the user's, the project's) where ``host``'s hook may run persona."""
    from ..integrations.claude_hooks import settings_file

    if host not in registry.hooks():
        return []
    return [settings_file(user=True, project=None, home=home), settings_file(user=False, project=project, home=home)]
