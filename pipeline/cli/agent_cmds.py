"""`persona mcp` and `persona hermes install | uninstall`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import PersonaError
from ..integrations.hermes_install import install_plugin, uninstall_plugin
from .common import state

hermes_app = typer.Typer(help="Install the Hermes Agent memory-provider plugin.", no_args_is_help=True)
HermesHome = Annotated[
    Path | None, typer.Option("--hermes-home", help="Hermes home (default: $HERMES_HOME, else ~/.hermes).")
]


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
    app.add_typer(hermes_app, name="hermes")


def mcp(ctx: typer.Context) -> None:
    """Run the MCP server over stdio (needs the `mcp` extra)."""
    try:  # the SDK is an optional extra and slow to import: only this command pays for it
        from ..mcp_server import serve
    except ImportError:
        raise PersonaError("the MCP server needs the optional extra 'mcp': run pip install '.[mcp]' in the "
                           "persona-tier checkout (make install includes it)") from None
    # Settings are read on every tool call, so edits to the config are seen without a restart.
    serve(state(ctx).fresh_settings)


@hermes_app.command("install")
def install(
    hermes_home: HermesHome = None,
    activate: Annotated[bool, typer.Option("--activate", help="Also set memory.provider: persona.")] = False,
) -> None:
    """Install the plugin into $HERMES_HOME/plugins/persona/ (safe to run twice)."""
    done = install_plugin(hermes_home, activate=activate)
    typer.echo(f"installed {done.plugin_dir}" + (f"; {done.config} now selects memory.provider: persona"
                                                   if done.config else ""))


@hermes_app.command("uninstall")
def uninstall(hermes_home: HermesHome = None) -> None:
    """Reverse install: put back the memory.provider it replaced, and remove the plugin."""
    done = uninstall_plugin(hermes_home)
    typer.echo(f"removed {done.plugin_dir}" + (f"; restored memory.provider in {done.config}" if done.config
                                                else ""))
