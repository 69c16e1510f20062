"""`persona render` and `persona inject`."""

from __future__ import annotations

import difflib
from typing import Annotated

import typer

from ..injector import PersonaInjector
from ..model import TargetReport
from ..runner import run_pipeline
from .common import JsonOption, SessionOption, emit_json, state


def register(app: typer.Typer) -> None:
    app.command("render")(render)
    app.command("inject")(inject)


def render(
    ctx: typer.Context,
    target: Annotated[
        list[str] | None, typer.Option("--target", "-t", help="Render only this target; repeatable.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Render and report, but write nothing.")] = False,
    stdout: Annotated[bool, typer.Option("--stdout", help="Print the rendered text instead of writing.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Print a diff against the file on disk.")] = False,
    session: SessionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the pipeline and write every target (or the named ones)."""
    cli = state(ctx)
    settings = cli.settings()
    with cli.store(session, readonly=dry_run or stdout) as store:
        reports = run_pipeline(settings, store=store, targets=target, dry_run=dry_run or stdout)
    if as_json:
        emit_json([report.to_dict() | ({"text": report.text} if stdout else {}) for report in reports])
        return
    for report in reports:
        if stdout:
            typer.echo(report.text, nl=False)
        elif diff:
            typer.echo(_diff(report), nl=False)
        typer.echo(_summary(report, dry_run or stdout), err=stdout)


def _summary(report: TargetReport, dry_run: bool) -> str:
    if report.stale:
        state_ = "not written: a newer render is already on disk"
    elif dry_run:
        state_ = "would change" if report.changed else "unchanged"
    else:
        state_ = "written" if report.written else "unchanged"
    return (
        f"{report.target}: {report.facts_extracted} facts, {report.sections_kept} sections kept, "
        f"{report.sections_dropped} dropped, {report.tokens}/{report.budget} tokens -> {report.path} ({state_})"
    )


def _diff(report: TargetReport) -> str:
    before = (report.previous or "").splitlines(keepends=True)
    after = report.text.splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, f"{report.path} (on disk)", f"{report.path} (rendered)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def inject(ctx: typer.Context, session: SessionOption = None) -> None:
    """Print exactly what would be appended to a system prompt."""
    settings = state(ctx).settings()
    injector = PersonaInjector(settings, session_id=session)
    if not settings.injection.enabled:
        typer.echo("injection is disabled (injection.enabled = false); nothing would be appended", err=True)
        return
    typer.echo(injector.appendix(injector.block()), nl=False)
