"""Serve the page on 127.0.0.1, say where, open the browser, and stop cleanly on Ctrl-C."""

from __future__ import annotations

import contextlib
import html
import socket
import tempfile
import webbrowser
from collections.abc import Callable, Iterator
from pathlib import Path

from ..config.load_report import HooksOf, no_hooks
from ..config.schema import Settings
from ..fs.write import atomic_write_text
from .app import Ui, build_app
from .security import Keys

HOST = "127.0.0.1"  # loopback only: never another interface, whatever the settings say
LAUNCH_PAGE = ('<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
               '<title>persona ui</title><a href="{url}">Open persona ui</a>\n')


def load() -> None:
    """Import the web stack now; ImportError when the ``ui`` extra is missing."""
    import starlette.applications  # noqa: F401
    import uvicorn  # noqa: F401


def listening(port: int) -> socket.socket:
    """A socket listening on loopback (``port`` 0: a free one), made here so the URL names the real port, and
    listening before the URL is printed, so a browser opened at once is queued rather than refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    return sock


@contextlib.contextmanager
def launcher(url: str) -> Iterator[Path]:
    """A private page (0600, in a 0700 folder) that sends the browser on to ``url``. A browser started with the
    URL itself would show its key to every local user in the process list; removed when the server stops."""
    with tempfile.TemporaryDirectory(prefix="persona-ui-") as folder:
        page = Path(folder) / "open.html"
        atomic_write_text(page, LAUNCH_PAGE.format(url=html.escape(url)))
        yield page


def serve(settings: Callable[[], Settings], *, profile: str | None, port: int, open_browser: bool,
          say: Callable[[str], None], hooks_of: HooksOf = no_hooks) -> None:
    """Run until Ctrl-C: ``say`` the URL (it holds the run's key), and open it unless ``open_browser`` is off."""
    import uvicorn

    sock = listening(port)
    keys = Keys.new(sock.getsockname()[1])
    app = build_app(Ui(settings, profile, keys, hooks_of=hooks_of))
    # uvicorn's own access log would print every request's path; ours says only what the user needs.
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    say(f"persona ui: {keys.url}\n(only this address opens it; Ctrl-C stops)")
    with contextlib.ExitStack() as opened:
        if open_browser:
            webbrowser.open(opened.enter_context(launcher(keys.url)).as_uri())
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn shuts down, then raises the Ctrl-C again: asked for
            server.run(sockets=[sock])
    say("persona ui: stopped")
