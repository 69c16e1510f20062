"""`persona learn`: what the hosts' own memory saved, learned as facts (and `persona tick` runs it first)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from ..text import counted
from .common import JsonOption, ProfileOption, emit_json, say_rendered, state
from .personal import render_written

if TYPE_CHECKING:
    from ..schedule.learn import Learned


def register(app: typer.Typer) -> None:
    app.command("learn")(learn_command)


def learn_command(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Learn what each host's model saved in its own memory (learn.hosts): every new entry becomes a fact written
    by that host, for every other agent (learn.approve: ask holds each for `persona review`)."""
    from ..schedule.learn import learn

    cli = state(ctx)
    with cli.store(profile) as store:
        done = learn(cli.settings(), store)
        rendered = render_written(cli, store) if done.added else None
    if as_json:
        emit_json({**done.to_dict(), **(rendered.to_dict() if rendered is not None else {})})
    else:
        typer.echo(learned_line(done))
    say_unreadable(done)
    if rendered is not None:
        say_rendered(rendered, as_json=as_json)


def learned_line(done: Learned) -> str:
    """What a learn did, in one line."""
    held = f", {len(done.held)} held for your approval (persona review)" if done.held else ""
    return (f"learned {counted(len(done.added), 'new fact')} from {counted(len(done.files), 'memory file')}{held}, "
            f"{done.unchanged} already there, {counted(done.proposals, 'proposal')}")


def say_unreadable(done: Learned) -> None:
    """Each memory file that could not be read, with the reason, on standard error."""
    for file, why in done.unreadable:
        typer.echo(f"warning: not learned from {file}: {why}", err=True)
