"""`persona ui` answers at a host name of its own launch (`<random>.localhost`), so the key's cookie belongs to
that name alone: a browser sends cookies to every port of a host, and 127.0.0.1 or localhost is every other local
server's host too. The real server process, over plain HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .running import Running, config_file, start

pytestmark = pytest.mark.slow


@pytest.fixture
def db_settings(tmp_path: Path) -> dict[str, str]:
    return {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md")}


@pytest.fixture
def ui(tmp_path: Path, db_settings: dict[str, str]) -> Iterator[Running]:
    running = start(tmp_path, config_file(tmp_path, db_settings))
    yield running
    assert running.stop() == 0


def test_each_launch_prints_an_address_of_its_own_localhost_name(tmp_path, ui, db_settings):
    name = urlsplit(ui.url).hostname or ""
    assert name.endswith(".localhost") and len(name.removesuffix(".localhost")) >= 16
    (tmp_path / "again").mkdir()
    again = start(tmp_path / "again", config_file(tmp_path, db_settings))
    try:
        assert urlsplit(again.url).hostname != name
    finally:
        assert again.stop() == 0


def test_the_key_cookie_is_host_only_for_that_name(ui):
    first = ui.request("GET", f"/?token={ui.token}")
    assert first.status == 303
    cookie = SimpleCookie(first.headers["set-cookie"])[f"persona_ui_{ui.port}"]
    assert cookie["domain"] == "" and cookie["path"] == "/"  # no Domain: the exact host, never its parents


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "other.localhost:{port}",
                                  "{name}.evil.example:{port}", "x{name}:{port}", "{name}:1"])
def test_loopback_names_other_than_the_launchs_own_are_refused_even_with_the_key(ui, host):
    cookie = ui.login()
    name = urlsplit(ui.url).hostname or ""
    other = host.format(port=ui.port, name=name)
    answer = ui.request("GET", "/", host=other, cookie=cookie)
    assert answer.status == 421 and "tersely" not in answer.body
    assert name not in answer.body  # a rebinding page learns nothing of the name
    assert ui.request("GET", f"/?token={ui.token}", host=other).status == 421  # nor is a cookie set for it
    assert ui.get("/", cookie).status == 200


def test_a_post_naming_the_loopback_address_as_its_origin_is_refused(ui):
    cookie = ui.login()
    form = {"content": "Planted by another local page.", "topic": "x", "csrf": ui.csrf(cookie)}
    for origin in (f"http://127.0.0.1:{ui.port}", f"http://localhost:{ui.port}"):
        assert ui.post("/do/add", cookie, form, origin=origin).status == 403
    assert "Planted" not in ui.get("/", cookie).body
