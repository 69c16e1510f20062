"""`persona session show | compact | list | delete`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from ..inject.sessions import SessionSnapshots
from ..text import counted
from .common import JsonOption, ProfileOption, emit_json, state, table

session_app = typer.Typer(rich_markup_mode=None,
                          help="Per-session persona snapshots, refreshed only at compaction.",
                          no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(session_app, name="session")


SessionArg = Annotated[str, typer.Argument(metavar="SESSION_ID", help="The session id the agent host uses.")]


def _snapshots(ctx: typer.Context, profile: str | None, *, readonly: bool = False,
               session_id: str | None = None) -> SessionSnapshots:
    """The profile's snapshots, as ``session_id``'s reader (its agent and project, as first recorded) sees them."""
    from ..inject.sessions import SessionSnapshots
    from ..inject.views import NOBODY, Reader
    from ..store.snapshots import session_reader

    cli = state(ctx)
    store = cli.store(profile, readonly=readonly)
    known = None if session_id is None else session_reader(store, session_id)
    return SessionSnapshots(cli.settings(), store=store, reader=NOBODY if known is None else Reader(*known))


@session_app.command("show")
def show(ctx: typer.Context, session_id: SessionArg, profile: ProfileOption = None,
         as_json: JsonOption = False) -> None:
    """Print a session's snapshot, its generation and hash (recording it if it has none)."""
    with _snapshots(ctx, profile, session_id=session_id) as snapshots:
        snapshot = snapshots.snapshot(session_id)
    if as_json:
        emit_json(snapshot.to_dict())
        return
    typer.echo(f"session {snapshot.session_id}, target {snapshot.target}, generation {snapshot.generation}, "
               f"sha256 {snapshot.sha256}, recorded {snapshot.recorded_at or 'never'}", err=True)
    typer.echo(snapshot.text, nl=False)


@session_app.command("compact")
def compact(ctx: typer.Context, session_id: SessionArg, profile: ProfileOption = None,
            as_json: JsonOption = False) -> None:
    """Run the compaction-boundary refresh: re-record only if the persona file changed."""
    with _snapshots(ctx, profile, session_id=session_id) as snapshots:
        result = snapshots.refresh_at_compaction(session_id)
    if as_json:
        emit_json(result.to_dict())
    elif result.error:
        typer.echo(f"unchanged (generation {result.generation}): could not read the persona file: {result.error}")
    else:
        typer.echo(f"{'changed' if result.changed else 'unchanged'} (generation {result.generation})")


@session_app.command("list")
def list_sessions(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """List sessions with a snapshot."""
    with _snapshots(ctx, profile, readonly=True) as snapshots:
        found = snapshots.list()
    if as_json:
        emit_json([{k: v for k, v in s.to_dict().items() if k != "text"} for s in found])
    elif not found:
        typer.echo("no session snapshots")
    else:
        rows = [[s.session_id, str(s.generation), s.sha256[:12], s.recorded_at, s.host or "-", s.project or "-"]
                for s in found]
        typer.echo(table(["SESSION", "GENERATION", "SHA256", "RECORDED", "HOST", "PROJECT"], rows))


@session_app.command("delete")
def delete(ctx: typer.Context, session_id: SessionArg, profile: ProfileOption = None) -> None:
    """Delete a session's snapshots, e.g. when the session ends."""
    with _snapshots(ctx, profile) as snapshots:
        removed = snapshots.delete(session_id)
    typer.echo(f"deleted session {session_id} ({counted(removed, 'snapshot')})")


# The old name, kept one release: "forget" now means only the privacy erasure (`persona forget ID`).
@session_app.command("forget", hidden=True)
def _delete_by_old_name(ctx: typer.Context, session_id: SessionArg, profile: ProfileOption = None) -> None:
    """Deprecated: `persona session delete`."""
    typer.echo("warning: `persona session forget` is deprecated; call it `persona session delete`", err=True)
    delete(ctx, session_id, profile)
