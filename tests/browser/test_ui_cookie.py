"""The page's key cookie in a real browser (headless Chromium): it is held for the page's own host name alone, so
another server on this machine (another port of 127.0.0.1 or localhost, another `.localhost` name) that the same
browser visits never receives it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from ..ui.running import Running


class Recorder(BaseHTTPRequestHandler):
    """Another local server, as another user could run one: it keeps every Cookie header it is sent."""

    seen: ClassVar[list[str]] = []  # each subclass (one per test) is given its own

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Cookie") or "")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"another server")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[tuple[int, list[str]]]:
    seen: ClassVar[list[str]] = []  # each subclass (one per test) is given its own
    handler = type("Recording", (Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_the_key_cookie_is_the_pages_host_alone_and_reaches_no_other_local_server(page: Page, ui: Running,
                                                                                     other_server):
    expect(page.locator("h1")).to_have_text("Facts")  # the key is in the cookie now, and left the address
    host = urlsplit(page.url).hostname
    port, seen = other_server
    elsewhere = page.context.new_page()
    for url in (f"http://127.0.0.1:{port}/", f"http://localhost:{port}/", f"http://other.localhost:{port}/",
                f"http://{host}.evil.localhost:{port}/"):
        elsewhere.goto(url)
        expect(elsewhere.locator("body")).to_have_text("another server")
    assert len(seen) >= 4 and not any(ui.token in cookie for cookie in seen), seen  # (and favicon requests)
    assert host is not None and host.endswith(".localhost") and host != "localhost"
    cookies = page.context.cookies()
    assert [(cookie["name"], cookie["domain"]) for cookie in cookies] == [(f"persona_ui_{ui.port}", host)]
    page.reload()
    expect(page.locator("h1")).to_have_text("Facts")  # and the page itself still has it
