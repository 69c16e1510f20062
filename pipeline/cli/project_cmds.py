"""`persona project list | move`: the projects a profile keeps facts for, and moving one's facts to another."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from .common import JsonOption, ProfileOption, emit_json, shown, state, table

project_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                          help="The projects a profile keeps facts for; move a project's facts to another.")
ProjectArg = Annotated[str, typer.Argument(metavar="PROJECT", help="A directory (its project), or a project's "
                                           "identity as `persona project list` shows it (github.com/x/y).")]


def register(app: typer.Typer) -> None:
    app.add_typer(project_app, name="project")


@project_app.command("list")
def list_projects(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Each project the profile has facts for, how many, and which one the working directory is in."""
    from ..fs.projects import project_of
    from ..store.births import projects

    here = project_of(Path.cwd()).identity
    with state(ctx).store(profile, readonly=True) as store, store.read() as conn:
        found = projects(conn, store.profile)
    if as_json:
        emit_json([{"project": name, "facts": count, "here": name == here} for name, count in found.items()])
    elif not found:
        typer.echo("no project facts (persona add ... --project)")
    else:
        rows = [[shown(name, 100), str(count), "yes" if name == here else ""] for name, count in found.items()]
        typer.echo(table(["PROJECT", "FACTS", "HERE"], rows))


@project_app.command("move")
def move(ctx: typer.Context, old: ProjectArg, new: ProjectArg, profile: ProfileOption = None) -> None:
    """Move a project's facts to another project: after the repository moved host, was renamed, or a checkout
    without a remote moved to another directory."""
    from ..scopes import project_scope
    from ..store.births import move_scope

    source, destination = _identity(old), _identity(new)
    if source == destination:
        raise InputError(f"{old} and {new} are the same project ({source}); nothing to move")
    with state(ctx).store(profile) as store, store.transaction() as conn:
        moved = move_scope(conn, store.profile, project_scope(source), project_scope(destination))
        if moved:
            store.touch(conn)
    if not moved:
        raise InputError(f"profile {shown(store.profile, 80)!r} has no facts for project {source} "
                         "(see `persona project list`)")
    typer.echo(f"moved {moved} fact(s) from project {source} to {destination}; `persona render` writes them where "
               "they now belong")


def _identity(text: str) -> str:
    """A directory's project, or a project's identity, normalised as a remote is."""
    from ..fs.projects import identity_of

    return identity_of(text)
