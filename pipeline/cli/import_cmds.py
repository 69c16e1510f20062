"""`persona import` (every format) and `persona adopt`: what a user had elsewhere, brought into the store."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..text import counted
from .common import (
    HostOption,
    JsonOption,
    ProfileOption,
    ProjectOption,
    emit_json,
    say_rendered,
    scope_of,
    shown,
    state,
    table,
)
from .personal import render_written
from .review_cmds import may_update

if TYPE_CHECKING:
    from ..interchange.importing import ImportReport
    from ..schedule.adopt import Adoption

FORMATS = ("facts (default), persona-md, hermes, instructions, lines, mem0 or assistant (an answer to --prompt, "
           "found by itself); see docs/importing.md")
TopicOption = Annotated[str | None, typer.Option(
    "--topic", help="Topic of entries the source gives none (no heading, no field); default: general.")]
DryRunOption = Annotated[bool, typer.Option(
    "--dry-run", help="Show what would be added, what is already there and what is refused; write nothing.")]
SkipBadOption = Annotated[bool, typer.Option(
    "--skip-bad", help="Import the rest when some entries are refused (else nothing is imported).")]
CONTENT_WIDTH = 72
OUTCOMES = {"add": "added", "update": "updated", "unchanged": "already there", "left out": "left out (superseded)",
            "refused": "refused", "forgotten": "skipped (forgotten)"}
DRY_OUTCOMES = {"add": "would add", "update": "would update"}


def register(app: typer.Typer) -> None:
    app.command("import")(import_file)
    app.command("adopt")(adopt)


def import_file(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(metavar="PATH", help="The file to import, or - for standard input.")
                    ] = None,
    fmt: Annotated[str | None, typer.Option("--from", metavar="FORMAT", help=f"The source's format: {FORMATS}.")
                   ] = None,
    prompt: Annotated[str | None, typer.Option(
        "--prompt", metavar="ASSISTANT", help="Print the prompt to paste into chatgpt, claude, gemini or copilot: "
        "it answers with everything it remembers about you, for `persona import -`.")] = None,
    topic: TopicOption = None,
    dry_run: DryRunOption = False,
    skip_bad: SkipBadOption = False,
    accept_notes: Annotated[bool, typer.Option(
        "--accept-notes", help="hermes: take MEMORY.md's notes in as working-tier facts (else only listed).")] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Tombstone facts from this file that it no longer lists.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Re-add facts that were demoted or forgotten.")] = False,
    no_render: Annotated[bool, typer.Option(
        "--no-render", help="Leave the targets to the next render (`persona render` after several imports renders "
        "once); the injector and the hook render before they read.")] = False,
    project: ProjectOption = None,
    host: HostOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import the facts a file holds: a facts file, a persona.md, Hermes' memory, an instruction file, a pasted
    list or a mem0 export (idempotent, one transaction). --project or --host scopes every entry that names no
    scope itself (a project's AGENTS.md holds that project's rules)."""
    from ..interchange.formats import import_source

    if prompt is not None or path is None:
        _print_prompt(prompt, path)
        return
    scope = scope_of(project, host) if project is not None or host is not None else None
    cli = state(ctx)
    with cli.store(profile, readonly=dry_run) as store:
        report = import_source(store, path, fmt, topic=topic, prune=prune, force=force, skip_bad=skip_bad,
                               dry_run=dry_run, accept_notes=accept_notes, scope=scope)
        rendered = None if dry_run or no_render else render_written(cli, store)  # one render for the whole file
    if as_json:
        emit_json({**report.to_dict(), **(rendered.to_dict() if rendered is not None else {})})
    else:
        typer.echo(report_text(report))
    if rendered is not None:
        say_rendered(rendered, as_json=as_json)


def _print_prompt(assistant: str | None, path: str | None) -> None:
    from ..errors import InputError
    from ..interchange.import_prompt import import_prompt

    if assistant is None:
        raise InputError("give the file to import (PATH, or - for standard input), or --prompt ASSISTANT")
    if path is not None:
        raise InputError("--prompt prints a prompt and imports nothing; give it without PATH")
    typer.echo(import_prompt(assistant), nl=False)


def report_text(report: ImportReport, *, notes: bool = True) -> str:
    """What an import did (a summary and what needs a look), or in a dry run what it would do, entry by entry;
    then the notes it offers for review (unless ``notes`` is off: they were shown already)."""
    lines = [_plan(report) if report.dry_run else _summary(report)]
    if report.skipped_forgotten:
        lines.append(forgotten_line(report))
    if not report.dry_run:
        lines += [f"refused {refusal.where}: {refusal.why}" for refusal in report.refused]
        lines += [f"#{keyed['new']} supersedes #{keyed['old']} (key {shown(keyed['key'], 60)})"
                  for keyed in report.keyed]
        lines += [f"#{proposal.new.id} {may_update(proposal)}" for proposal in report.proposals]
    if report.notes and notes:
        lines += ["", f"{counted(len(report.notes), 'note')} offered for review, not imported (the agent's own "
                  "notes, mostly about its environment); to take them in as working-tier facts: --accept-notes",
                  table(["WHERE", "NOTE"], [[note["where"], shown(note["content"], CONTENT_WIDTH)]
                                            for note in report.notes])]
    return "\n".join(lines)


def forgotten_line(report: ImportReport) -> str:
    """One notice for every forgotten entry the source still holds: skipped, by place, never by text."""
    where = ", ".join(report.skipped_forgotten[:5]) + (", …" if len(report.skipped_forgotten) > 5 else "")
    return (f"{counted(len(report.skipped_forgotten), 'forgotten fact')} skipped ({where}): persona forget keeps "
            "it out; --force takes it in again")


def _summary(report: ImportReport) -> str:
    return (f"{report.file}: {len(report.added)} added, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged, {len(report.pruned)} pruned, "
            f"{len(report.skipped_demoted)} skipped as demoted, {len(report.superseded)} superseded by key, "
            f"{counted(len(report.proposals), 'proposal')}")


def _plan(report: ImportReport) -> str:
    """Every entry, grouped by what the import would do with it, and every refusal with its reason."""
    lines = [f"{report.file} ({report.format}), dry run: nothing was written"]
    decided = sorted(report.entries, key=lambda entry: list(OUTCOMES).index(entry["outcome"]))
    for outcome, group in itertools.groupby(decided, key=lambda entry: entry["outcome"]):
        if outcome in ("refused", "forgotten"):  # their own lines; a forgotten text is never shown
            continue
        rows = [[entry["where"], "" if entry["id"] is None else f"#{entry['id']}", shown(entry["topic"], 24),
                 entry["tier"], shown(entry["content"], CONTENT_WIDTH)] for entry in group]
        lines += ["", f"{DRY_OUTCOMES.get(outcome, OUTCOMES[outcome])} ({len(rows)})",
                  table(["WHERE", "ID", "TOPIC", "TIER", "FACT"], rows)]
    if report.refused:
        lines += ["", f"refused ({len(report.refused)})"]
        lines += [f"{refusal.where}: {refusal.why}" for refusal in report.refused]
    if len(lines) == 1:
        lines.append("nothing to import")
    return "\n".join(lines)


def adopt(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(metavar="PATH", help="A target's file persona-tier did not write.")],
    fmt: Annotated[str | None, typer.Option("--from", metavar="FORMAT", help=(
        "The file's format (default: persona-md for a Markdown persona, instructions for a region's file or a "
        "Cursor rule)."))] = None,
    topic: TopicOption = None,
    dry_run: DryRunOption = False,
    skip_bad: SkipBadOption = False,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import the facts of a target's file persona-tier did not write, then take the file over: the render writes
    it, keeping a copy of the old bytes beside it."""
    from ..schedule.adopt import adopt as adopt_file

    cli = state(ctx)
    with cli.store(profile, readonly=dry_run) as store:
        adoption = adopt_file(cli.settings(), store, path, fmt=fmt, topic=topic, skip_bad=skip_bad, dry_run=dry_run)
        rendered = None if dry_run else render_written(cli, store)  # the profile's other targets
    if as_json:
        emit_json({**_adoption_dict(adoption), **({"others": rendered.to_dict()} if rendered is not None else {})})
    else:
        typer.echo(report_text(adoption.imported))
        typer.echo(_taken_over(adoption))
    if rendered is not None:
        say_rendered(rendered, as_json=as_json)


def _taken_over(adoption: Adoption) -> str:
    names = ", ".join(repr(name) for name in adoption.targets)
    if adoption.imported.dry_run:
        return (f"would then render target {names} over {adoption.path}, keeping a copy of its bytes beside it "
                "(0600)")
    kept = "; its old bytes are kept in " + ", ".join(str(copy) for copy in adoption.copies) if adoption.copies \
        else ""
    return f"{adoption.path} is now rendered by target {names}{kept}"


def _adoption_dict(adoption: Adoption) -> dict[str, Any]:
    return {"path": str(adoption.path), "format": adoption.format, "targets": adoption.targets,
            "import": adoption.imported.to_dict(), "rendered": [report.to_dict() for report in adoption.rendered],
            "copies": [str(copy) for copy in adoption.copies]}
