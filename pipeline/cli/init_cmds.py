"""`persona init`: the newcomer's first command. Find the memory this machine holds, show the plan, then do it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import inputs
from ..text import counted
from .common import ProfileOption, say_rendered, shown, state
from .import_cmds import CONTENT_WIDTH, SkipBadOption, report_text
from .review_cmds import proposals_text

if TYPE_CHECKING:
    from ..integrations.onboarding import InitPlan, NewTarget, Outcome


# Each outcome of an entry the plan counts, and how its count reads when there are any (add and unchanged always).
PREVIEWED = {
    "add": "", "unchanged": "", "update": "to update",
    "left out": "superseded (replaced in the store since: not brought back)",
    "forgotten": "forgotten (`persona forget` keeps them out; never shown)",
}


def register(app: typer.Typer) -> None:
    app.command("init")(init)


def init(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking (for scripts).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what it would do; write nothing.")] = False,
    skip_bad: SkipBadOption = False,
    accept_notes: Annotated[bool, typer.Option(
        "--accept-notes", help="Also take Hermes' MEMORY.md notes in, as working-tier facts.")] = False,
    file: Annotated[Path | None, typer.Option(
        "--file", help="Config file the host presets go into (default: the last one).")] = None,
    instead_of_hook: Annotated[bool, typer.Option(
        "--instead-of-hook", help="Where our session-start hook already gives a host the persona: remove the hook "
                                  "and add the host's target (else that host gets no target: each fact once).")
    ] = False,
    profile: ProfileOption = None,
) -> None:
    """Find what this machine already holds (Hermes' USER.md, MEMORY.md and persona.md, Claude Code's, Codex's and
    Gemini CLI's user files, Mnemosyne's database), show what would be imported and which host presets added, and
    do it on confirmation."""
    from ..integrations.onboarding import carry_out, plan_init, preview
    from ..schedule.after_write import render_after_write

    cli = state(ctx)
    settings = cli.settings()
    with cli.store(profile, readonly=True) as store:
        plan = plan_init(settings, store, Path(inputs.home()), instead_of_hook=instead_of_hook)
        typer.echo(_plan_text(plan, preview(store, plan, skip_bad=skip_bad, accept_notes=accept_notes)))
    if dry_run or not (plan.sources or plan.targets):
        return
    if not yes and not typer.confirm("Import these and add these targets?", default=False):
        typer.echo("nothing was changed")
        return
    _unhook(plan.unhook)
    with cli.store(profile) as store:
        done = carry_out(settings, store, plan, add_target=lambda target: _add_target(ctx, target, file),
                         reload=cli.fresh_settings, skip_bad=skip_bad, accept_notes=accept_notes)
        rendered = render_after_write(cli.fresh_settings(), store)  # every target, the ones just added with them
        found = store.proposals(scan=True)  # what the sources say of each other and of the stored facts
    typer.echo(_done_text(plan, done))
    if found:
        typer.echo(f"\n{counted(len(found), 'open proposal')} among the facts (`persona review` lists them "
                   f"again):\n{proposals_text(found)}")
    # the new targets were rendered with their imports: the line counts them with the rest
    rendered.rendered = list(dict.fromkeys([*(r.target for o in done for r in o.rendered), *rendered.rendered]))
    say_rendered(rendered)
    if any(outcome.error for outcome in done):
        raise typer.Exit(1)


def _unhook(files: list[Path]) -> None:
    """Take our session-start hook out of each settings file whose host gets a target instead."""
    from ..integrations.claude_hooks import remove

    for path in files:
        remove(path)
        typer.echo(f"{path}: removed the persona hook (the target gives the host the persona instead)")


def _plan_text(plan: InitPlan, previews: list[Outcome]) -> str:
    lines = [*plan.notes]
    if not plan.sources and not plan.targets:
        return "\n".join([*lines, "found nothing to import and no host to add (Hermes, Claude Code, Codex, Gemini "
                          "CLI); add facts with `persona add` or `persona import`"])
    for found, outcome in zip(plan.sources, previews, strict=True):
        then = ", then taken over by its target (a copy of it kept beside it)" if found.adopt else ""
        lines += ["", f"{found.label}: {found.path} (--from {found.fmt}{then})", _preview_line(outcome)]
        if outcome.report is not None:
            lines += [f"  + [{shown(entry['topic'], 24)}] {shown(entry['content'], CONTENT_WIDTH)}"
                      for entry in outcome.report.entries if entry["outcome"] == "add"]
            lines += [f"  ! {refusal.where}: {refusal.why}" for refusal in outcome.report.refused]
            lines += [f"  ? {note['where']}: {shown(note['content'], CONTENT_WIDTH)}"
                      for note in outcome.report.notes]
    for target in plan.targets:
        lines += ["", _target_line(target)]
    lines += [f"remove the persona hook from {path}: the target above gives the host the persona instead"
              for path in plan.unhook]
    return "\n".join(lines)


def _target_line(target: NewTarget) -> str:
    from ..config.load_sets import waiting_for

    budget = target.settings()["budget"]
    waits = waiting_for(target.path, Path(inputs.home()))
    if waits is not None:  # OpenCode reads ~/.claude/CLAUDE.md while its own file is absent: ours would hide it
        return (f"add target {target.preset!r}: a region of {target.path} (budget {budget} tokens), waiting: the "
                f"host reads {waits} while {target.path} is absent; the first render after you create it writes it")
    return (f"add target {target.preset!r}: a region of {target.path} (budget {budget} tokens), rendered now; "
            "your own text in the file stays as it is")


def _preview_line(outcome: Outcome) -> str:
    if outcome.error is not None or outcome.report is None:
        return f"  cannot import it: {outcome.error}"
    entries = outcome.report.entries
    count = {kind: sum(1 for entry in entries if entry["outcome"] == kind) for kind in PREVIEWED}
    line = f"  {counted(count['add'], 'fact')} to add, {count['unchanged']} already there"
    line += "".join(f", {count[kind]} {said}" for kind, said in PREVIEWED.items() if said and count[kind])
    line += f", {len(outcome.report.refused)} refused"
    if outcome.report.refused:
        line += " (nothing of this file is imported unless --skip-bad)"
    if outcome.report.notes:
        line += (f"; {counted(len(outcome.report.notes), 'note')} offered for review, not imported "
                 "(--accept-notes takes them in as working-tier facts)")
    return line


def _done_text(plan: InitPlan, done: list[Outcome]) -> str:
    lines = []
    for outcome in done:
        if outcome.error is not None:
            lines.append(f"{outcome.what}: not done: {outcome.error}")
        elif outcome.report is not None:
            lines.append(report_text(outcome.report, notes=False))
        else:
            lines.append(outcome.what)
        lines += [f"{report.target}: {report.path} ({'written' if report.written else 'unchanged'})"
                  for report in outcome.rendered]
    lines.append("next: `persona list` shows every fact and who wrote it; `persona render` writes every target"
                 + ("; `persona hermes install` lets Hermes read the persona" if plan.hermes else ""))
    return "\n".join(lines)


def _add_target(ctx: typer.Context, target: NewTarget, file: Path | None) -> str:
    """Add the preset's target to the config file, as `persona targets add PRESET --user` does."""
    from ..config.edit import set_target
    from .config_cmds import _edit_target, _protected

    cli = state(ctx)
    config = _edit_target(cli, file)
    set_target(config, target.preset, target.settings(), env_name=cli.env_name, protected=_protected(cli))
    return f"{config}: added target {target.preset!r}, writing a region of {target.path}"
