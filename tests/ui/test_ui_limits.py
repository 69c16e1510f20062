"""`persona ui` bounds what a request may make it hold: a form larger than the cap is refused with 413 before its
body is read (a Content-Length over the cap), or as soon as the cap is passed (a chunked body), over a real socket
against the real server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.ui.app import MAX_FORM_BYTES

from .running import STARTUP_S, Running, config_file, start

pytestmark = pytest.mark.slow
HUGE = 314_572_800  # 300 MiB, the figure of the report (issue 41): never sent, only announced


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[Running]:
    running = start(tmp_path, config_file(tmp_path, {"store.path": str(tmp_path / "m.db"),
                                                     "injection.file": str(tmp_path / "persona.md")}))
    yield running
    assert running.stop() == 0


def opened(ui: Running, cookie: str, *, length: int | None) -> socket.socket:
    """A connection that has sent only the headers of an authenticated POST /do/add (the form's page's own)."""
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    head = (f"POST /do/add HTTP/1.1\r\nHost: {ui.authority}\r\nCookie: {cookie}\r\n"
            f"Origin: http://{ui.authority}\r\nContent-Type: application/x-www-form-urlencoded\r\n{framing}\r\n\r\n")
    sock = socket.create_connection(("127.0.0.1", ui.port), timeout=STARTUP_S)
    sock.sendall(head.encode())
    return sock


def status_line(sock: socket.socket) -> str:
    answer = b""
    while b"\r\n" not in answer:
        chunk = sock.recv(4096)
        assert chunk, f"the server closed without answering: {answer!r}"
        answer += chunk
    return answer.split(b"\r\n", 1)[0].decode()


def test_a_content_length_over_the_cap_is_refused_before_the_body_is_sent(ui):
    cookie = ui.login()
    with opened(ui, cookie, length=HUGE) as sock:
        assert " 413 " in status_line(sock)  # and not one byte of the body went
    with opened(ui, cookie, length=MAX_FORM_BYTES + 1) as sock:
        assert " 413 " in status_line(sock)
    assert ui.get("/", cookie).status == 200  # the server goes on


def test_a_chunked_body_is_refused_once_it_passes_the_cap_without_waiting_for_its_end(ui):
    cookie = ui.login()
    piece = b"a" * 65_536
    with opened(ui, cookie, length=None) as sock:
        for _ in range(MAX_FORM_BYTES // len(piece) + 2):  # just past the cap, and the body never ends
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        assert " 413 " in status_line(sock)
    assert ui.get("/", cookie).status == 200


def test_a_form_under_the_cap_still_goes_through(ui):
    cookie = ui.login()
    form = {"content": "Answers tersely.", "topic": "style", "csrf": ui.csrf(cookie), "pad": "x" * 500_000}
    assert "added #1" in ui.follow(ui.post("/do/add", cookie, form), cookie).body
