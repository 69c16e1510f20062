"""`persona ui`: the local page, served until Ctrl-C."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import PersonaError, extra_needed
from .common import ProfileOption, state


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)


def ui(
    ctx: typer.Context,
    port: Annotated[int | None, typer.Option("--port", metavar="N", min=0, max=65_535,
                                             help="Listen on this port of 127.0.0.1 (default: ui.port).")] = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the address; open nothing.")] = False,
    profile: ProfileOption = None,
) -> None:
    """See and change what every agent knows, in a page on 127.0.0.1 (needs the `ui` extra); Ctrl-C stops it."""
    try:  # the web stack is an optional extra: only this command imports it
        from ..ui.server import load, serve

        load()
    except ImportError:
        raise PersonaError(extra_needed("the page (persona ui)", "ui")) from None
    cli = state(ctx)
    settings = cli.settings()  # read once now, so a bad config fails here rather than on the first page
    from .host_checks import hook_deliveries

    serve(cli.fresh_settings, profile=profile, port=settings.ui.port if port is None else port,
          open_browser=settings.ui.open_browser and not no_browser, say=typer.echo,
          hooks_of=lambda host, project: hook_deliveries(cli, profile, host, project))
