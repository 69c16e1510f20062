"""`persona mcp` and `persona hermes install | uninstall`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import PersonaError, extra_needed
from .common import state

hermes_app = typer.Typer(rich_markup_mode=None, help="Install persona-tier into Hermes Agent.",
                         no_args_is_help=True)
HermesHome = Annotated[
    Path | None, typer.Option("--hermes-home", help="Hermes home (default: $HERMES_HOME, else ~/.hermes).")
]


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
    app.add_typer(hermes_app, name="hermes")


def mcp(ctx: typer.Context) -> None:
    """Run the MCP server over stdio (needs the `mcp` extra)."""
    try:  # the SDK is an optional extra and slow to import: only this command pays for it
        from ..integrations.mcp import load_sdk, serve

        load_sdk()
    except ImportError:
        raise PersonaError(extra_needed("the MCP server", "mcp")) from None
    # Settings are read on every tool call, so edits to the config are seen without a restart.
    serve(state(ctx).fresh_settings)


@hermes_app.command("install")
def install(
    hermes_home: HermesHome = None,
    activate: Annotated[bool, typer.Option("--activate", help="Also enable it in Hermes' config.yaml.")] = False,
    as_provider: Annotated[bool, typer.Option(
        "--as-provider", help="Install as Hermes' memory provider instead of a plugin beside it (only when no "
        "other memory provider is selected).")] = False,
) -> None:
    """Install into $HERMES_HOME/plugins/persona/: a plugin beside your memory provider (safe to run twice)."""
    from ..integrations.hermes_install import install_plugin

    typer.echo(install_plugin(hermes_home, activate=activate, as_provider=as_provider).describe())


@hermes_app.command("uninstall")
def uninstall(hermes_home: HermesHome = None) -> None:
    """Reverse install: undo its config.yaml edits and remove the plugin directory."""
    from ..integrations.hermes_install import uninstall_plugin

    done = uninstall_plugin(hermes_home)
    typer.echo(f"removed {done.plugin_dir}" + (f"; restored {done.config}" if done.config else ""))
