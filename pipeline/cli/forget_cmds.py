"""`persona forget ID` and `persona profile erase PROFILE`: forget for real, every copy of the text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import InputError, StoreError
from ..text import counted
from .common import JsonOption, ProfileOption, emit_json, state
from .personal import moved_first

if TYPE_CHECKING:
    from ..schedule.host_histories import HostHistories

KeepHistories = Annotated[bool, typer.Option(
    "--keep-host-histories", help="Leave the text in the hosts' own histories (Claude Code's and Codex's transcripts "
    "and Codex's databases, Gemini CLI's chats, Hermes' sessions) and memory files (what `persona learn` reads), "
    "and only list the files that hold it.")]

profile_app = typer.Typer(rich_markup_mode=None, help="Whole profiles: erase everything one holds.",
                          no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("forget")(forget)
    app.command("scrub")(scrub)
    app.add_typer(profile_app, name="profile")


def forget(
    ctx: typer.Context,
    persona_id: Annotated[int | None, typer.Argument(
        help="The fact's id: current (`persona list`), superseded (`persona history`) or demoted.")] = None,
    tombstone: Annotated[int | None, typer.Option(
        "--tombstone", metavar="N", help="Instead of an id: the tombstone `persona explain` names.")] = None,
    profile: ProfileOption = None,
    keep_host_histories: KeepHistories = False,
    as_json: JsonOption = False,
) -> None:
    """Forget a fact for real: every version of it (current, superseded, demoted, and every fact with the same
    text), what was rendered from it, and its copies in files go; only a keyed hash stays, so it is never taken
    in again without --force. Unlike demote, it leaves prompts at the next request. In the hosts' histories
    (their session transcripts, which a resumed session sends again) the text becomes [forgotten], and its entry
    leaves the hosts' own memory files (Hermes' USER.md, Gemini CLI's and Claude Code's memory)."""
    from ..schedule.forget import forget as forget_everywhere

    if (persona_id is None) == (tombstone is None):
        raise InputError("give a fact's id or --tombstone N, not both and not neither")
    cli = state(ctx)
    with cli.store(profile) as store:
        moved_first(cli, store.profile)  # the forget's render reaches the target where it moved (#49)
        done = forget_everywhere(cli.settings(), store, persona_id, tombstone_id=tombstone,
                                 keep_host_histories=keep_host_histories)
    if as_json:
        emit_json(done.to_dict())
    else:
        erased = done.erasure
        named = f"#{persona_id}" if persona_id is not None else f"tombstone {tombstone}"
        typer.echo(f"forgot {named}: {', '.join(version.label for version in erased.versions)}; "
                   f"{counted(erased.snapshots, 'session snapshot')} and {counted(erased.blocks, 'stored block')} "
                   f"removed; {counted(len(done.rendered), 'target')} rendered again")
        say_edit_files(done.edit_files)
        say_histories(done.host_histories)
    warn_unfinished(done.still_holding, scrubbed=done.erasure.scrubbed, in_users_text=done.in_users_text,
                    render_warnings=done.render_warnings)
    warn_sources(done.in_sources)
    exit_unless_scrubbed(done.host_histories)


def warn_sources(paths: Sequence[str]) -> None:
    """Each file the fact was imported from that still holds its text: persona-tier never edits a source."""
    for path in paths:
        typer.echo(f"warning: {path}, which the fact was imported from, still holds the text; persona-tier never "
                   "edits a file you import from, so edit it out by hand (importing it again skips it as forgotten)",
                   err=True)


def scrub(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Finish what a forget left: the hosts' histories it could not scrub yet (a running session, a kill, a full
    disk; its journal knows them), and the database's freed pages and write-ahead log a reader held up. Exits 1
    when a history still holds a forgotten text."""
    from ..schedule.history_journal import scrub_after
    from ..store.erasure import scrub as scrub_store

    cli = state(ctx)
    with cli.store(profile) as store:
        histories = scrub_after(store, [])
        if not scrub_store(store):
            raise StoreError(f"a reader still keeps the write-ahead log of {store.label} from being emptied; close "
                             "what has the database open and run `persona scrub` again")
    if as_json:
        emit_json({"database": store.label, "host_histories": histories.to_dict()})
    else:
        typer.echo(f"scrubbed {store.label}: no freed page or write-ahead log holds a forgotten fact")
        say_histories(histories)
    exit_unless_scrubbed(histories)


@profile_app.command("erase")
def erase(
    ctx: typer.Context,
    profile: Annotated[str, typer.Argument(help="The profile to erase.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    keep_host_histories: KeepHistories = False,
    as_json: JsonOption = False,
) -> None:
    """Erase everything a profile holds: facts, tombstones, snapshots, blocks, run records, rendered text."""
    from ..schedule.forget import erase as erase_profile

    if not yes:
        typer.confirm(f"erase every fact of profile {profile!r}?", abort=True, err=True)
    cli = state(ctx)
    with cli.store(profile) as store:
        done = erase_profile(cli.settings(), store, keep_host_histories=keep_host_histories)
    if as_json:
        emit_json(done.to_dict())
    else:
        erased = done.erasure
        typer.echo(f"erased profile {profile!r}: {counted(len(erased.facts), 'fact')}, "
                   f"{counted(erased.tombstones, 'tombstone')}, {counted(erased.snapshots, 'snapshot')}, "
                   f"{counted(erased.runs, 'run record')}")
        say_edit_files(done.edit_files)
        say_histories(done.host_histories)
    warn_unfinished(done.still_holding, scrubbed=done.erasure.scrubbed, in_users_text=done.in_users_text,
                    render_warnings=done.render_warnings)
    exit_unless_scrubbed(done.host_histories)


def say_edit_files(paths: Sequence[str]) -> None:
    """The kept `persona edit` files a forget removed because they held the text, in one line."""
    if paths:
        typer.echo(f"removed {counted(len(paths), 'kept `persona edit` file')} that held the text: "
                   f"{', '.join(paths)}")


def warn_unfinished(still_holding: list[str], *, scrubbed: bool, in_users_text: Sequence[str] = (),
                    render_warnings: Sequence[str] = ()) -> None:
    """What an erasure could not finish, each with what to do."""
    for warning in render_warnings:
        typer.echo(f"warning: {warning}", err=True)
    for path in still_holding:
        if path in in_users_text:
            typer.echo(f"warning: {path} still holds the text in your own lines, outside persona-tier's region "
                       "(persona-tier never edits those); edit it out by hand", err=True)
            continue
        typer.echo(f"warning: {path} still holds the text: this render could not write it, or no target writes "
                   "it any more; edit or delete it by hand", err=True)
    if not scrubbed:
        typer.echo("warning: a reader kept the database's write-ahead log from being emptied, so it may still hold "
                   "the text; run `persona scrub` once it is idle", err=True)


def say_histories(histories: HostHistories) -> None:
    """Every host history and memory file the forget changed (or, kept, that holds the text), one a line."""
    if histories.swept:
        typer.echo(f"removed {counted(histories.swept, 'temporary file')} an interrupted scrub had left")
    transcripts = [file for file in histories.files if not file.get("memory")]
    memories = [file for file in histories.files if file.get("memory")]
    if transcripts:
        many = len(transcripts)
        _say_files(transcripts, f"{counted(many, 'host history file')} still {'holds' if many == 1 else 'hold'} "
                   "the text (--keep-host-histories): a resumed session there sends it again" if histories.kept
                   else f"replaced the text with [forgotten] in {counted(many, 'host history file')}", "time")
    if memories:
        many = len(memories)
        _say_files(memories, f"{counted(many, 'host memory file')} still {'holds' if many == 1 else 'hold'} "
                   "it (--keep-host-histories): its host loads it at its next start" if histories.kept
                   else f"took the entry out of {counted(many, 'host memory file')}", "entry")


def _say_files(files: list[dict[str, Any]], what: str, unit: str) -> None:
    typer.echo(what + ":")
    plural = "entries" if unit == "entry" else None
    for file in files:
        typer.echo(f"  {file['path']} ({file['host']}, {counted(file['replaced'], unit, plural)})")


def warn_histories(histories: HostHistories) -> None:
    """Each host history that holds the text and could not be changed safely, with the reason; each holding a
    short fact where it is not replaced; and whether the journal keeps the scrub pending."""
    for file in histories.left:
        typer.echo(f"warning: {file['path']} ({file['host']}) still holds the text: {file['reason']}", err=True)
    for file in histories.short:
        typer.echo(f"warning: {file['path']} ({file['host']}) still holds the text: it is one or two short words, "
                   "replaced only where it is a message's whole text, and here it stands inside other text or "
                   "outside a message; edit it out by hand or delete the session", err=True)
    if not histories.kept and not histories.finished:
        typer.echo("warning: the scrub of the hosts' histories is pending; `persona scrub` (or the next forget or "
                   "status) finishes it", err=True)


def exit_unless_scrubbed(histories: HostHistories) -> None:
    """Name what the hosts' histories still hold, and exit 1 when anything is left."""
    warn_histories(histories)
    if not histories.complete:
        raise typer.Exit(1)
