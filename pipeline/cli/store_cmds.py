"""Store commands: promote, demote, list, reinforce, add (import is in :mod:`.import_cmds`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER
from ..scopes import ScopeKind, kind_of
from ..scopes import shown as scope_text
from ..text import counted
from ..tiers import TIERS

if TYPE_CHECKING:
    from ..schedule.after_write import WriteRender
    from ..store import Fact, Promotion
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
    warn_if_unknown,
)
from .personal import render_written
from .review_cmds import may_update

TierOption = Annotated[str, typer.Option("--tier", help=" or ".join([", ".join(TIERS[:-1]), TIERS[-1]]) + ".")]
ReasonOption = Annotated[str | None, typer.Option("--reason", help="Why; kept with the row or tombstone.")]
CONTENT_WIDTH = 72
WRITER_WIDTH = 32  # import:FORMAT:FILE can be long; the whole is in --json


def register(app: typer.Typer) -> None:
    for command in (promote, demote, list_facts, reinforce, add):
        name = {"list_facts": "list"}.get(command.__name__, command.__name__)
        app.command(name)(command)


def _describe(fact: Fact) -> str:
    """``#12 (long_term, topic tools)``, and a scoped fact's scope: the project identity a directory was taken
    for is said where it was chosen."""
    scoped = f", {shown(scope_text(fact.scope), 200)}" if fact.scope is not None else ""
    return f"#{fact.id} ({shown(fact.tier)}, topic {shown(fact.topic, 60)}{scoped})"


def _report_promotion(result: Promotion, rendered: WriteRender, as_json: bool, what: str) -> None:
    if as_json:
        emit_json({"created": result.created, "fact": result.fact.to_dict(),
                   "proposals": [proposal.to_dict() for proposal in result.proposals],
                   "related": [{"id": fact.id, "topic": fact.topic, "content": fact.content}
                               for fact in result.related], **rendered.to_dict()})
    else:
        typer.echo(f"{what} as {_describe(result.fact)}" if result.created
                   else f"already in the persona as {_describe(result.fact)}")
        for proposal in result.proposals:
            typer.echo(may_update(proposal))
    say_rendered(rendered, as_json=as_json)


def promote(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID", help="Id of a working or episodic memory.")],
    tier: TierOption = DEFAULT_TIER,
    reason: ReasonOption = None,
    force: Annotated[bool, typer.Option("--force", help="Promote even if the memory was demoted.")] = False,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Promote a memory into the persona."""
    cli = state(ctx)
    with cli.store(profile) as store:
        result = store.promote(memory_id, tier=tier, reason=reason, force=force)
        rendered = render_written(cli, store)
    _report_promotion(result, rendered, as_json, f"promoted memory {memory_id}")


def demote(
    ctx: typer.Context,
    persona_id: Annotated[int, typer.Argument(metavar="PERSONA_ID", help="Persona fact id (see `persona list`).")],
    reason: ReasonOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove a fact, leaving a tombstone so it is not proposed again."""
    cli = state(ctx)
    with cli.store(profile) as store:
        fact = store.demote(persona_id, reason=reason)
        rendered = render_written(cli, store)
    if as_json:
        emit_json({"demoted": fact.to_dict(), **rendered.to_dict()})
    else:
        typer.echo(f"demoted {_describe(fact)}; tombstone left in memoria_preferences")
    say_rendered(rendered, as_json=as_json)


def list_facts(
    ctx: typer.Context,
    tier: Annotated[str | None, typer.Option("--tier", help="Only this tier.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic.")] = None,
    scope: Annotated[ScopeKind | None, typer.Option("--scope", help="Only global, project or host facts.")] = None,
    project: ProjectOption = None,
    host: HostOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """List facts: permanent first, then most reinforced."""
    named = scope_of(project, host) if project is not None or host is not None else None
    with state(ctx).store(profile, readonly=True) as store:
        facts = [fact for fact in store.list(tier=tier, topic=topic)
                 if (scope is None or kind_of(fact.scope) == scope) and (named is None or fact.scope == named)]
        if not facts and tier is None and topic is None and scope is None and named is None:
            warn_if_unknown(store)
    if as_json:
        emit_json([fact.to_dict() for fact in facts])
        return
    if not facts:
        typer.echo("no persona facts")
        return
    rows = [[str(f.id), shown(f.tier), shown(f.topic, 40), str(f.reinforcement_count),
             f"{DEFAULT_CONFIDENCE if f.confidence is None else f.confidence:.2f}",
             shown(scope_text(f.scope), WRITER_WIDTH), shown(f.writer or "", WRITER_WIDTH),
             shown(f.content, CONTENT_WIDTH)] for f in facts]
    typer.echo(table(["ID", "TIER", "TOPIC", "REINF", "CONF", "SCOPE", "WRITER", "CONTENT"], rows))


def reinforce(
    ctx: typer.Context,
    persona_id: Annotated[int, typer.Argument(metavar="PERSONA_ID", help="Persona fact id.")],
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Count one more reinforcement of a fact."""
    cli = state(ctx)
    with cli.store(profile) as store:
        fact = store.reinforce(persona_id)
        rendered = render_written(cli, store)
    if as_json:
        emit_json({**fact.to_dict(), **rendered.to_dict()})
    else:
        typer.echo(f"reinforced {_describe(fact)}: {counted(fact.reinforcement_count, 'time')}")
    say_rendered(rendered, as_json=as_json)


def add(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(metavar="CONTENT", help="The fact, e.g. 'Answers tersely.'")],
    topic: Annotated[str, typer.Option("--topic", help="Section the fact belongs to.")],
    tier: TierOption = DEFAULT_TIER,
    confidence: Annotated[float, typer.Option("--confidence", help="0 to 1.")] = DEFAULT_CONFIDENCE,
    reason: ReasonOption = None,
    force: Annotated[bool, typer.Option("--force", help="Add it even if the same fact was demoted.")] = False,
    project: ProjectOption = None,
    host: HostOption = None,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a fact directly: for the user everywhere, or only in a project (--project) or for one agent (--host)."""
    scope = scope_of(project, host)
    cli = state(ctx)
    with cli.store(profile) as store:
        result = store.add(content, topic=topic, tier=tier, confidence=confidence, reason=reason, force=force,
                           scope=scope)
        rendered = render_written(cli, store)
    _report_promotion(result, rendered, as_json, "added")

