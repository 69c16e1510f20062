"""The ``persona`` typer app: the root group, its global options and the table of every command's module."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar

import typer

from ..fs.locations import package_version
from .common import CliState, configure_logging
from .lazy import LazyGroup


class PersonaCli(LazyGroup):
    """Every command, by the module under ``pipeline.cli`` whose ``register(app)`` adds it, in the order
    ``persona --help`` lists them. A new command: a function registered by its module's ``register``, and its
    name here; a test fails when a module registers a name this table does not give it."""

    modules: ClassVar[dict[str, str]] = {
        "promote": "store_cmds", "demote": "store_cmds", "list": "store_cmds", "reinforce": "store_cmds",
        "add": "store_cmds",
        "import": "import_cmds", "adopt": "import_cmds",
        "init": "init_cmds",
        "replace": "fact_cmds", "undo-replace": "fact_cmds", "history": "fact_cmds", "export": "fact_cmds",
        "lock": "fact_cmds", "unlock": "fact_cmds",
        "edit": "edit_cmds",
        "render": "render_cmds", "explain": "render_cmds", "inject": "render_cmds",
        "learn": "learn_cmds",
        "status": "tick_cmds", "tick": "tick_cmds", "watch": "tick_cmds", "retention": "tick_cmds",
        "mcp": "agent_cmds",
        "forget": "forget_cmds", "scrub": "forget_cmds",
        "ui": "ui_cmds",
        "hermes": "agent_cmds",
        "profile": "forget_cmds",
        "review": "review_cmds",
        "topics": "topic_cmds",
        "project": "project_cmds",
        "config": "config_cmds",
        "session": "session_cmds",
        "targets": "target_cmds",
        "hooks": "hook_cmds",
    }


app = typer.Typer(
    rich_markup_mode=None,  # plain help and one-line errors; rich costs ~70 ms of start-up
    cls=PersonaCli,
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


__all__ = ["app"]
