"""Commands that change a fact's life: replace, undo-replace, history, lock and unlock, and export (for editing and
re-importing)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..tiers import TIERS
from .common import JsonOption, ProfileOption, emit_json, say_rendered, shown, state, table
from .personal import render_written

CONTENT_WIDTH = 72


def register(app: typer.Typer) -> None:
    app.command("replace")(replace)
    app.command("undo-replace")(undo_replace)
    app.command("history")(history)
    app.command("lock")(lock)
    app.command("unlock")(unlock)
    app.command("export")(export)


def replace(
    ctx: typer.Context,
    persona_id: Annotated[int, typer.Argument(help="The fact that is no longer true (see `persona list`).")],
    content: Annotated[str, typer.Argument(help="What is true now.")],
    topic: Annotated[str | None, typer.Option("--topic", help="The new fact's topic (default: the old one's).")] = None,
    tier: Annotated[str | None, typer.Option("--tier", help=f"{', '.join(TIERS)} (default: the old one's).")] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why; kept with the new fact.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Take in text that was forgotten (persona forget).")] = False,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Correct a fact: the new one supersedes it, in one transaction (`persona undo-replace` takes it back)."""
    cli = state(ctx)
    with cli.store(profile) as store:
        result = store.replace(persona_id, content, topic=topic, tier=tier, reason=reason, force=force)
        rendered = render_written(cli, store)
    if as_json:
        emit_json({**result.to_dict(), **rendered.to_dict()})
    else:
        typer.echo(f"#{result.new.id} supersedes #{result.old.id} (topic {shown(result.new.topic, 60)})")
    say_rendered(rendered, as_json=as_json)


def undo_replace(
    ctx: typer.Context,
    persona_id: Annotated[int, typer.Argument(help="The replacement, or a fact it superseded.")],
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Undo a supersession: the old fact comes back under its own id and the replacement is removed."""
    cli = state(ctx)
    with cli.store(profile) as store:
        result = store.undo_replace(persona_id)
        rendered = render_written(cli, store)
    if as_json:
        emit_json({**result.to_dict(), **rendered.to_dict()})
    else:
        restored = ", ".join(f"#{fact.id}" for fact in result.restored)
        if result.removed is not None:
            typer.echo(f"restored {restored}; removed #{result.removed.id}")
        elif result.kept is not None:  # an accepted proposal: the newer fact was a fact before, and stays
            typer.echo(f"restored {restored}; #{result.kept.id} stays (the proposal is open again)")
    say_rendered(rendered, as_json=as_json)


def history(
    ctx: typer.Context,
    persona_id: Annotated[int, typer.Argument(help="A fact, current or superseded.")],
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the supersession chain through a fact, oldest first: what it replaced and what replaced it."""
    with state(ctx).store(profile, readonly=True) as store:
        links = store.history(persona_id)
    if as_json:
        emit_json([link.to_dict() for link in links])
        return
    rows = [[f"#{link.id}", "current" if link.current else f"superseded by #{link.superseded_by} ({link.how})",
             link.superseded_at or "-", shown(link.writer, 32), shown(link.content, CONTENT_WIDTH)] for link in links]
    typer.echo(table(["ID", "STATE", "WHEN", "WRITER", "FACT"], rows))


LockedId = Annotated[int, typer.Argument(help="The fact (see `persona list`).")]


def lock(ctx: typer.Context, persona_id: LockedId, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Lock a fact: no agent tool (MCP, Hermes) may replace, demote, merge or forget it; you still can."""
    with state(ctx).store(profile) as store:
        changed = store.lock_fact(persona_id)
    _say_lock(persona_id, locked=True, changed=changed, as_json=as_json)


def unlock(ctx: typer.Context, persona_id: LockedId, profile: ProfileOption = None,
           as_json: JsonOption = False) -> None:
    """Unlock a fact: agents' tools may change it again."""
    with state(ctx).store(profile) as store:
        changed = store.unlock_fact(persona_id)
    _say_lock(persona_id, locked=False, changed=changed, as_json=as_json)


def _say_lock(persona_id: int, *, locked: bool, changed: bool, as_json: bool) -> None:
    if as_json:
        emit_json({"persona_id": persona_id, "locked": locked, "changed": changed})
        return
    state_word = "locked" if locked else "unlocked"
    typer.echo(f"#{persona_id} {'is now' if changed else 'was already'} {state_word}")


def export(
    ctx: typer.Context,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here (0600) instead of stdout.")] = None,
    profile: ProfileOption = None,
) -> None:
    """Write the profile's facts as a facts file with ids, to edit and bring back with `persona import`."""
    from ..config.targets import protected_paths
    from ..interchange.export import export_facts

    cli = state(ctx)
    with cli.store(profile, readonly=True) as store:
        text = export_facts(store)
        protected = protected_paths(cli.settings(), profile=store.profile)
    if output is None:
        typer.echo(text, nl=False)
        return
    from ..fs.write import atomic_write_text, refuse_protected

    refuse_protected(output, protected, what="an export")  # never over the database, a config or a persona file
    atomic_write_text(output, text)
    typer.echo(f"wrote {output}")
