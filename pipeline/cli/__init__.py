"""The ``persona`` command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..fs.locations import package_version
from . import (
    agent_cmds,
    edit_cmds,
    fact_cmds,
    forget_cmds,
    import_cmds,
    init_cmds,
    project_cmds,
    render_cmds,
    review_cmds,
    store_cmds,
    tick_cmds,
)
from .common import CliState, PersonaGroup, configure_logging
from .config_cmds import config_app
from .hook_cmds import hooks_app
from .session_cmds import session_app
from .target_cmds import targets_app

app = typer.Typer(
    rich_markup_mode=None,  # plain help and one-line errors; rich costs ~70 ms of start-up
    cls=PersonaGroup,
    name="persona",
    help="The L3 persona tier: durable behavioural facts about the user, rendered into the system prompt.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool | None) -> None:
    if value:
        typer.echo(f"persona-tier {package_version()}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    config: Annotated[
        list[Path] | None,
        typer.Option("--config", "-c", metavar="FILE", help="YAML config file; repeatable, later files win."),
    ] = None,
    env: Annotated[
        str | None, typer.Option("--env", metavar="NAME", help="Config section to apply (else $MNEMOSYNE_ENV).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="Override a setting: key.path=value; repeatable."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", metavar="FILE|URL", help="SQLite file or postgresql:// URL (overrides the config)."),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
    version: Annotated[
        bool | None,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = None,
) -> None:
    """Global options apply to every command."""
    configure_logging(debug)
    ctx.obj = CliState(config_files=list(config or []), env_name=env, set_pairs=list(set_ or []), db=db, debug=debug)


store_cmds.register(app)
import_cmds.register(app)
init_cmds.register(app)
fact_cmds.register(app)
edit_cmds.register(app)
render_cmds.register(app)
tick_cmds.register(app)
agent_cmds.register(app)
forget_cmds.register(app)
review_cmds.register(app)
project_cmds.register(app)
app.add_typer(config_app, name="config")
app.add_typer(session_app, name="session")
app.add_typer(targets_app, name="targets")
app.add_typer(hooks_app, name="hooks")

__all__ = ["app"]
