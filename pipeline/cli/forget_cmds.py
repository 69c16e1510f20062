"""`persona forget ID` and `persona profile erase PROFILE`: forget for real, every copy of the text."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import JsonOption, ProfileOption, emit_json, state

profile_app = typer.Typer(rich_markup_mode=None, help="Whole profiles: erase everything one holds.",
                          no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("forget")(forget)
    app.add_typer(profile_app, name="profile")


def forget(
    ctx: typer.Context,
    persona_id: Annotated[int, typer.Argument(help="Persona fact id (see `persona list`).")],
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget a fact for real: its row, lineage, tombstones, snapshots, blocks and rendered copies go; only a
    keyed hash stays, so it is never proposed again. Unlike demote, it leaves prompts at the next request."""
    from ..schedule.forget import forget as forget_fact

    cli = state(ctx)
    with cli.store(profile) as store:
        done = forget_fact(cli.settings(), store, persona_id)
    if as_json:
        emit_json(done.to_dict())
        return
    typer.echo(f"forgot #{persona_id}: {done.erasure.tombstones} tombstone(s), {done.erasure.snapshots} session "
               f"snapshot(s), {done.erasure.blocks} stored block(s) removed; {len(done.rendered)} target(s) "
               "rendered again")
    _warn_holding(done.still_holding)


@profile_app.command("erase")
def erase(
    ctx: typer.Context,
    profile: Annotated[str, typer.Argument(help="The profile to erase.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Erase everything a profile holds: facts, tombstones, snapshots, blocks, run records, rendered text."""
    from ..schedule.forget import erase as erase_profile

    if not yes:
        typer.confirm(f"erase every fact of profile {profile!r}?", abort=True, err=True)
    cli = state(ctx)
    with cli.store(profile) as store:
        done = erase_profile(cli.settings(), store)
    if as_json:
        emit_json(done.to_dict())
        return
    typer.echo(f"erased profile {profile!r}: {len(done.erasure.facts)} fact(s), {done.erasure.tombstones} "
               f"tombstone(s), {done.erasure.snapshots} snapshot(s), {done.erasure.runs} run record(s)")
    _warn_holding(done.still_holding)


def _warn_holding(paths: list[str]) -> None:
    for path in paths:
        typer.echo(f"warning: {path} still holds the text (not written by this render); edit it by hand", err=True)
