"""`persona review [list | accept ID | dismiss ID]`: the facts writes said they may update, and the writes agents
asked for under ``writes.agents: ask`` (ids ``wN``), settled by the user.

Also the lines every write, `status` and `explain` print about proposals, so all of them say it alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from .common import JsonOption, ProfileOption, emit_json, say_rendered, shown, state, table
from .personal import render_written

MERGE = "merge"  # a proposal's kind (store/supersede_rules.py): the two say the same, ``new`` is the fuller

if TYPE_CHECKING:
    from ..store import Proposal
    from ..store.held_writes import HeldWrite

CONTENT_WIDTH = 60
review_app = typer.Typer(rich_markup_mode=None, invoke_without_command=True,
                         help="Settle proposals: facts a write said it may update (supersede.detect: propose).")
ProposalArg = Annotated[str, typer.Argument(metavar="PROPOSAL", help="The proposal's id, or a held write's wN "
                                             "(see `persona review`).")]
ScanOption = Annotated[bool, typer.Option(
    "--scan", help="First look over the stored persona and propose the merges and changes no single write saw.")]


def register(app: typer.Typer) -> None:
    app.add_typer(review_app, name="review")


def may_update(proposal: Proposal) -> str:
    """The line a write prints for each fact it may update or repeat: which, and how to settle it."""
    if proposal.kind == MERGE:
        return (f"may merge: #{proposal.old.id} {shown(proposal.old.content, CONTENT_WIDTH)} is said by the fuller "
                f"#{proposal.new.id}; to keep only #{proposal.new.id}: persona review accept {proposal.id}; to keep "
                f"both: persona review dismiss {proposal.id}")
    return (f"may update #{proposal.old.id}: {shown(proposal.old.content, CONTENT_WIDTH)}; to replace it: "
            f"persona review accept {proposal.id} (or persona replace {proposal.old.id} …); to keep both: "
            f"persona review dismiss {proposal.id}")


def proposal_line(proposal: dict[str, Any]) -> str:
    """One open proposal (as :meth:`Proposal.to_dict` gives it), as `status` and `explain` list them."""
    old, new = proposal["old"], proposal["new"]
    verb = "may merge (keeping itself)" if proposal.get("kind") == MERGE else "may update"
    return (f"proposal {proposal['id']}: #{new['id']} {shown(new['content'], CONTENT_WIDTH)} {verb} "
            f"#{old['id']} {shown(old['content'], CONTENT_WIDTH)}")


@review_app.callback()
def review(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False,
           scan: ScanOption = False) -> None:
    """List the open proposals (both facts still current), oldest first; accept or dismiss each."""
    if ctx.invoked_subcommand is None:
        list_proposals(ctx, profile, as_json, scan)


@review_app.command("list")
def list_proposals(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False,
                   scan: ScanOption = False) -> None:
    """List the open proposals, oldest first."""
    with state(ctx).store(profile, readonly=not scan) as store:
        found, held = store.proposals(scan=scan), store.held_writes()
    if as_json:
        emit_json([proposal.to_dict() for proposal in found] + [write.to_dict() for write in held])
        return
    if held:
        _list_held(held)
    if not found:
        typer.echo("no open proposals")
        return
    typer.echo(proposals_text(found))


def proposals_text(found: list[Proposal]) -> str:
    """The proposals as `persona review` lists them, with how to accept or dismiss one."""
    rows = [[str(p.id), p.kind, f"#{p.old.id} {shown(p.old.content, CONTENT_WIDTH)}",
             f"#{p.new.id} {shown(p.new.content, CONTENT_WIDTH)}", shown(p.old.topic, 24)] for p in found]
    return (table(["ID", "KIND", "OLDER FACT (UPDATE) / SHORTER (MERGE)", "MAY BE UPDATED BY / FULLER", "TOPIC"], rows)
            + "\n\n`persona review accept ID` replaces the older fact, or for a merge keeps only the fuller one "
              "(undo: `persona undo-replace`); `persona review dismiss ID` keeps both, and the pair is not proposed "
              "again.")


def _list_held(held: list[HeldWrite]) -> None:
    rows = [[write.name, write.writer, shown(write.summary(), 2 * CONTENT_WIDTH), write.held_at] for write in held]
    typer.echo(table(["ID", "ASKED BY", "WRITE (AWAITS YOUR APPROVAL)", "WHEN"], rows))
    typer.echo("\n`persona review accept wN` makes the write, as its agent asked; `persona review dismiss wN` drops "
               "it.\n")


def _is_held(proposal: str) -> bool:
    return proposal.strip().lower().startswith("w")


def _number(proposal: str) -> int:
    from ..errors import InputError
    from ..store import check_id

    if not proposal.strip().isdecimal():
        raise InputError(f"invalid proposal {proposal!r}: expected its number, or wN for a held write (see `persona "
                         "review`)")
    return check_id(int(proposal.strip()))


@review_app.command("accept")
def accept(ctx: typer.Context, proposal: ProposalArg, profile: ProfileOption = None,
           as_json: JsonOption = False) -> None:
    """Accept a proposal: its newer fact supersedes the older one, with lineage (`persona undo-replace` undoes it)."""
    cli = state(ctx)
    if _is_held(proposal):
        _approve(cli, proposal, profile, as_json)
        return
    with cli.store(profile) as store:
        done = store.accept(_number(proposal))
        rendered = render_written(cli, store)
    if as_json:
        emit_json({**done.to_dict(), **rendered.to_dict()})
    else:
        typer.echo(f"#{done.new.id} supersedes #{done.old.id} (proposal {done.id}; undo: persona undo-replace "
                   f"{done.new.id})")
    say_rendered(rendered, as_json=as_json)


@review_app.command("dismiss")
def dismiss(ctx: typer.Context, proposal: ProposalArg, profile: ProfileOption = None,
            as_json: JsonOption = False) -> None:
    """Dismiss a proposal: both facts stay, and the same pair of texts is never proposed again."""
    with state(ctx).store(profile) as store:
        if _is_held(proposal):
            held = store.dismiss_held(proposal)
            if as_json:
                emit_json(held.to_dict())
            else:
                typer.echo(f"dismissed {held.name}: nothing was written")
            return
        done = store.dismiss(_number(proposal))
    if as_json:
        emit_json(done.to_dict())
    else:
        typer.echo(f"dismissed proposal {done.id}: #{done.old.id} and #{done.new.id} both stay")


def _approve(cli: Any, proposal: str, profile: str | None, as_json: bool) -> None:
    """Accept a held write: the write is made now, as its agent asked, and rendered as every write is."""
    with cli.store(profile) as store:
        held, outcome = store.approve(proposal)
        rendered = render_written(cli, store)
    made = getattr(outcome, "fact", None) or getattr(outcome, "new", None) or outcome
    if as_json:
        emit_json({"held": held.to_dict(), "fact": made.to_dict(), **rendered.to_dict()})
    else:
        typer.echo(f"{held.name} accepted: {held.action} #{made.id} (written by {held.writer})")
    say_rendered(rendered, as_json=as_json)
