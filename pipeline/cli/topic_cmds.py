"""`persona topics [list | rename OLD NEW]`: one spelling per topic, and a rename or a merge with lineage."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import JsonOption, ProfileOption, emit_json, shown, state, table

TOPIC_WIDTH = 40
topics_app = typer.Typer(rich_markup_mode=None, invoke_without_command=True,
                         help="List the topics with their counts; rename one, or merge it into another.")


def register(app: typer.Typer) -> None:
    app.add_typer(topics_app, name="topics")


@topics_app.callback()
def topics(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """List the topics (one per spelling: `Git` and `git` are one), most facts first."""
    if ctx.invoked_subcommand is None:
        list_topics(ctx, profile, as_json)


@topics_app.command("list")
def list_topics(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """List the topics as renders show them (topics.aliases), with their counts and the spellings facts use."""
    from ..store.topics import topics as listed

    cli = state(ctx)
    with cli.store(profile, readonly=True) as store:
        found = listed(store, cli.settings().topics.aliases)
    if as_json:
        emit_json([topic.to_dict() for topic in found])
        return
    if not found:
        typer.echo("no topics: the profile has no facts")
        return
    rows = [[shown(t.topic, TOPIC_WIDTH), str(t.count), ", ".join(shown(s, TOPIC_WIDTH) for s in t.spellings)]
            for t in found]
    typer.echo(table(["TOPIC", "FACTS", "SPELLED"], rows))


@topics_app.command("rename")
def rename(ctx: typer.Context, old: Annotated[str, typer.Argument(metavar="OLD", help="The topic, any spelling.")],
           new: Annotated[str, typer.Argument(metavar="NEW", help="Its new name; an existing topic merges.")],
           profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Move every fact of OLD (in any spelling) to NEW, as replaces with lineage (`persona history`, `persona
    undo-replace`); onto an existing topic this merges the two, and a fact already there is not copied."""
    from ..store.topics import rename as renamed

    with state(ctx).store(profile) as store:
        done = renamed(store, old, new)
    if as_json:
        emit_json(done.to_dict())
        return
    merged = f", {done.merged} already there" if done.merged else ""
    typer.echo(f"topic {shown(done.old, TOPIC_WIDTH)!r} -> {shown(done.new, TOPIC_WIDTH)!r}: "
               f"{len(done.moved)} moved{merged}")
    for was, now in done.moved:
        typer.echo(f"  #{was.id} -> #{now.id} (undo: persona undo-replace {was.id})")
