"""`persona render` and `persona inject`."""

from __future__ import annotations

import difflib
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import inputs
from ..hosts import registry
from ..scopes import HostName
from ..text import counted

if TYPE_CHECKING:
    from ..config.schema import Settings
    from ..inject.injector import PersonaInjector
    from ..inject.views import Reader
    from ..render.explain import Explanation
    from ..render.model import TargetReport
from .common import CliState, JsonOption, ProfileOption, emit_json, json_text, shown, state, table, warn_if_unknown

NAMED_SECTIONS = 5  # dropped sections named in render's summary; the rest are counted
CONTENT_WIDTH = 60


def register(app: typer.Typer) -> None:
    app.command("render")(render)
    app.command("explain")(explain)
    app.command("inject")(inject)


def render(
    ctx: typer.Context,
    target: Annotated[
        list[str] | None, typer.Option("--target", "-t", metavar="NAME", help="Render only this target; repeatable.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Render and report, but write nothing.")] = False,
    stdout: Annotated[bool, typer.Option("--stdout", help="Print the rendered text instead of writing.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Print a diff against the file on disk.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite a file persona-tier did not write; a copy of it is kept beside it.")] = False,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the pipeline and write every target (or the named ones). A file persona-tier did not write is left
    untouched, with a message on how to take it over."""
    from ..stages.runner import run_pipeline
    from ..store.vanished import sweep
    from .personal import move_shared

    cli = state(ctx)
    # a target whose region sits in a file git shares, that the user never asked to share, moves first (#49)
    settings = cli.fresh_settings() if not (dry_run or stdout) and move_shared(cli, profile) else cli.settings()
    with cli.store(profile, readonly=dry_run or stdout) as store:
        if not (dry_run or stdout):
            sweep(store)  # rows of ours keyed by a fact another tool deleted (a tick on a server leaves it to us)
        reports = run_pipeline(settings, store=store, targets=target, dry_run=dry_run or stdout, overwrite=force)
    if as_json:
        emit_json([report.to_dict() | ({"text": report.text} if stdout else {}) for report in reports])
        return
    _say_waiting(settings, target)
    for report in reports:
        if stdout:
            typer.echo(report.text, nl=False)
        elif diff:
            typer.echo(_diff(report), nl=False)
        typer.echo(_summary(report, dry_run or stdout), err=stdout)


def _say_waiting(settings: Settings, names: list[str] | None) -> None:
    """Each target left unwritten because its host reads another file of the user's while its own is absent."""
    from ..config.load_sets import waiting_for
    from ..config.targets import raw_path

    home = Path(inputs.home())
    for name in names or list(settings.targets):
        path = inputs.expanded(Path(raw_path(settings, name)))
        fallback = waiting_for(path, home)
        if fallback is not None:
            host = registry.display_name(settings.targets[name].host or "") or "its host"
            typer.echo(f"{name}: not written: {host} reads {fallback} while {path} is absent, and a file of ours "
                       f"would stop it reading yours; create {path} and the next render writes there")


def _summary(report: TargetReport, dry_run: bool) -> str:
    if report.stale:
        state_ = "not written: a newer render is already on disk"
    elif dry_run:
        state_ = "would change" if report.changed else "unchanged"
    else:
        state_ = "written" if report.written else "unchanged"
    left_out = ""
    if report.dropped_topics:
        names = ", ".join(shown(topic, 30) for topic in report.dropped_topics[:NAMED_SECTIONS])
        more = len(report.dropped_topics) - NAMED_SECTIONS
        left_out = f" ({names}{f' and {more} more' if more > 0 else ''})"
    fitted = f", {counted(report.fitted_out, 'fact')} fitted out" if report.fitted_out else ""
    return (
        f"{report.target}: {counted(report.facts_written, 'fact')} written, {report.facts_left_out} left out, "
        f"{counted(report.sections_kept, 'section')} kept, "
        f"{report.sections_dropped} dropped{left_out}{fitted}, {report.tokens_shown}/{report.budget} tokens -> "
        f"{report.path} ({state_})"
    )


def _diff(report: TargetReport) -> str:
    before = (report.previous or "").splitlines(keepends=True)
    after = report.text.splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, f"{report.path} (on disk)", f"{report.path} (rendered)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def explain(
    ctx: typer.Context,
    target: Annotated[
        list[str] | None,
        typer.Option("--target", "-t", metavar="NAME", help="Explain this target (default: the injected one)."),
    ] = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Say where every fact went in the render: kept, or left out and why. Writes nothing."""
    from ..stages.runner import run_pipeline

    cli = state(ctx)
    settings = cli.settings()
    with cli.store(profile, readonly=True) as store:
        reports = run_pipeline(settings, store=store, targets=target or [settings.injection.target], dry_run=True,
                               explain=True)
        proposals = [proposal.to_dict() for proposal in store.proposals()]
    explanations = [report.explanation for report in reports]
    if as_json:
        flags = [{"old": p["old"]["id"], "new": p["new"]["id"], "flagged_at": p["proposed_at"]} for p in proposals]
        emit_json([{**explanation.to_dict(), "proposals": proposals, "supersede_flags": flags}
                   for explanation in explanations])
        return
    typer.echo("\n\n".join(_explanation_text(explanation) for explanation in explanations)
               + _proposals_text(proposals))


def _proposals_text(proposals: list[dict[str, Any]]) -> str:
    """Open proposals: facts that may update older ones, for `persona review` to settle."""
    from .review_cmds import proposal_line

    if not proposals:
        return ""
    return (f"\n\nopen proposals ({len(proposals)}; `persona review accept ID` replaces the older fact, "
            "`persona review dismiss ID` keeps both)\n" + "\n".join(proposal_line(p) for p in proposals))


def _explanation_text(explanation: Explanation) -> str:
    from ..render.explain import KEPT

    kept = sum(1 for fact in explanation.facts if fact.fate == KEPT)
    lines = [f"{explanation.target}: {explanation.tokens}/{explanation.budget} tokens, "
             f"{counted(len(explanation.sections), 'section')}, {counted(kept, 'fact')} kept, "
             f"{len(explanation.facts) - kept} left out",
             "", table(["SECTION", "TOKENS"], [[shown(topic, 40), str(tokens)] for topic, tokens in
                                               explanation.sections])]
    for fate, facts in itertools.groupby(explanation.facts, key=lambda fact: _group(fact.fate)):
        group = list(facts)
        rows = [[fact.id, shown(fact.topic, 24), fact.tier, "-" if fact.score is None else f"{fact.score:.3f}",
                 str(fact.tokens), shown(fact.writer or "-", 24), shown(fact.content, CONTENT_WIDTH)
                 + _why(fact.fate, fate)] for fact in group]
        lines += ["", f"{fate} ({len(group)})",
                  table(["ID", "TOPIC", "TIER", "SCORE", "TOKENS", "WRITER", "FACT"], rows)]
    return "\n".join(lines)


def _group(fate: str) -> str:
    return "duplicate" if fate.startswith("duplicate of") else fate


def _why(fate: str, group: str) -> str:
    return f"  ({fate})" if fate != group else ""


HOOK_HOSTS = {hook.format: host for host, hook in registry.hooks().items()}  # --format -> the host whose hook prints it
# where a host tells its hook the project's directory
PROJECT_DIR_ENV = {hook.format: hook.project_dir_env for hook in registry.hooks().values()}
INJECT_FORMATS = ("text", *HOOK_HOSTS)


def _format_help(fmt: str, host: str) -> str:
    """claude-code: Claude Code's SessionStart hook JSON (...), for host claude-code in the hook's project."""
    return (f"{fmt}: {registry.display_name(host)}'s {registry.hooks()[host].event} hook JSON "
            f"(hookSpecificOutput.additionalContext), for host {host} in the hook's project")


FORMATS_HELP = "; ".join(_format_help(fmt, host) for fmt, host in HOOK_HOSTS.items())
PROJECT_DIRS_HELP = "; ".join(f"--format {fmt}: ${env}" for fmt, env in PROJECT_DIR_ENV.items())


def inject(ctx: typer.Context, profile: ProfileOption = None, session_id: Annotated[str | None, typer.Option(
        "--session-id", help="The host session whose snapshot to show (injection.mode: session).")] = None,
        format_: Annotated[str, typer.Option(
            "--format", help=f"text: the appendix as is; {FORMATS_HELP}.")] = "text",
        host: Annotated[HostName | None, typer.Option(
            "--host", help="The agent reading it: its facts are shown too (default: the --format's host).")] = None,
        project: Annotated[str | None, typer.Option(
            "--project", metavar="[DIR]", help="The project it is read in: its facts are shown too; alone, the "
            f"working directory's (default with {PROJECT_DIRS_HELP}, else the working directory).")] = None
        ) -> None:
    """Print exactly what would be appended to a system prompt, as text or in a host's hook shape.

    With --format claude-code (a hook the user installed) the persona is printed whatever injection.enabled,
    the Hermes injector's switch, says.
    """
    if format_ not in INJECT_FORMATS:
        from ..errors import InputError

        raise InputError(f"unknown --format {format_!r}; known: {', '.join(INJECT_FORMATS)}")
    from ..inject import delivery

    with delivery.recording() as recorded:  # the next identical request with nothing changed replays this
        text = _injected(state(ctx), format_, profile=profile, session_id=session_id, host=host, project=project)
    if text is None:
        return
    typer.echo(text, nl=False)
    if session_id is None:  # a session's pinned snapshot is the session's own: never replayed
        delivery.keep(recorded, text)


def _injected(cli: CliState, format_: str, *, profile: str | None, session_id: str | None, host: str | None,
              project: str | None) -> str | None:
    """What inject prints (None: nothing, injection being off, which it says on stderr)."""
    hook = format_ in HOOK_HOSTS
    if not (hook or host or cli.settings().injection.enabled):
        typer.echo("injection is disabled (injection.enabled = false); nothing would be appended", err=True)
        return None
    from ..inject.views import Reader

    directory = _project_dir(format_, project)
    appended = persona_appendix(cli, profile=profile, session_id=session_id,
                                reader=Reader.at(_host(format_, host), directory), hook=hook)
    if not hook:
        return appended
    # the shape Claude Code reads from a SessionStart hook's stdout
    event = registry.hooks()[HOOK_HOSTS[format_]].event
    return json_text({"hookSpecificOutput": {"hookEventName": event, "additionalContext": appended}}) + "\n"


def persona_appendix(cli: CliState, *, profile: str | None, session_id: str | None, reader: Reader,
                     hook: bool) -> str:
    """What ``reader`` gets appended to its prompt, as shown (:func:`pipeline.inject.prompt.shown`); for a host's
    hook, within that host's limits."""
    from ..inject.injector import PersonaInjector
    from ..inject.prompt import shown as shown_appendix
    from ..store.runs import recorded_tokens

    settings = cli.settings()
    counter = settings.cap.counter
    with cli.store(profile, readonly=True) as store:
        # A file the pipeline wrote has its count on record: the tokenizer need not load for it.
        # The persona of the profile --profile names, file and block alike: a file that belongs to
        # another profile is refused by name, never shown.
        injector = PersonaInjector(settings, session_id=session_id, profile=store.profile, reader=reader,
                                   enabled=True, known_tokens=lambda path, sha: recorded_tokens(store, path, sha,
                                                                                                 counter))
        block = injector.block()
        if not block:
            warn_if_unknown(store)
    if hook:  # within the host's own limit on a hook's text (characters), header included
        block = hook_block(block, injector, counter)
    return shown_appendix(injector.appendix(block))


def hook_block(block: str, injector: PersonaInjector, counter: str) -> str:
    """``block`` cut at section boundaries until its appendix fits the hook host's limits (or, for a host that
    takes a plugin prompt section instead, the section's)."""
    from ..config.presets import hook_limits, section_limits
    from ..inject.capped import within_limits

    header = injector.appendix("\0")[:-1]  # what the appendix adds around any block
    host = injector.reader.host or ""
    return within_limits(block, injector.target, counter, hook_limits().get(host) or section_limits().get(host, ()),
                         header)


def _host(format_: str, host: str | None) -> str | None:
    """Who reads what inject prints: --host, else the hook's host."""
    return host or HOOK_HOSTS.get(format_)


def _project_dir(format_: str, project: str | None) -> Path | None:
    """Where it is read: --project, else the hook's project directory (its variable, else the working one)."""
    if format_ in HOOK_HOSTS:
        project = project or inputs.environ(PROJECT_DIR_ENV[format_]) or "."
    return None if project is None else Path(project)
