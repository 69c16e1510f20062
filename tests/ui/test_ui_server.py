"""`persona ui` is safe by construction: a real server process, refused without its key, from another host name
or from another site; fact text is inert; every action is the CLI's, refusals included; a forget through the page
leaves no byte of the fact anywhere the tier keeps, and the page no longer serves it."""

from __future__ import annotations

import html
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import PersonaStore, load_settings

from ..schedule.test_forget_everywhere import KEPT, SECRET, configured, everything_kept, seed, spellings
from ..support.databases import open_database
from .running import REPO, Running, config_file, start

pytestmark = pytest.mark.slow
SCRIPT = "<script>alert('persona')</script> Uses uv, never pip."


@pytest.fixture
def db_settings(tmp_path: Path) -> dict[str, str]:
    return {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md")}


@pytest.fixture
def ui(tmp_path: Path, db_settings: dict[str, str]) -> Iterator[Running]:
    settings = load_settings(overrides=db_settings)
    with PersonaStore.from_settings(settings) as store:
        store.add(SCRIPT, topic="tools")
        store.add("Answers tersely.", topic="style")
    running = start(tmp_path, config_file(tmp_path, db_settings))
    yield running
    assert running.stop() == 0
    assert "persona ui: stopped" in running.out.read_text()


def test_without_the_key_nothing_is_served(ui):
    for path in ("/", "/agents", "/proposals", "/history/1", "/forget/1", "/changes", "/static/ui.js"):
        answer = ui.request("GET", path)
        assert answer.status == 403, path
        assert "tersely" not in answer.body and "open the address" in answer.body


def test_a_wrong_key_is_refused_in_the_url_and_in_the_cookie(ui):
    wrong = "x" + ui.token[1:]
    assert ui.request("GET", f"/?token={wrong}").status == 403
    assert ui.get("/", f"persona_ui_{ui.port}={wrong}").status == 403
    assert ui.get("/", f"persona_ui_{ui.port + 1}={ui.token}").status == 403  # another server's cookie name


def test_the_key_in_the_url_becomes_a_strict_cookie_and_leaves_the_address(ui):
    first = ui.request("GET", f"/agents?token={ui.token}")
    assert first.status == 303 and first.headers["location"] == "/agents"
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert ui.get("/agents", ui.login()).status == 200


def test_every_answer_forbids_caching_and_foreign_content(ui):
    cookie = ui.login()
    for answer in (ui.request("GET", "/"), ui.get("/", cookie), ui.get("/static/ui.css", cookie),
                   ui.get("/changes", cookie), ui.get("/history/999", cookie)):
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["content-security-policy"].startswith("default-src 'self'")
        assert answer.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1.nip.io:{port}", "192.168.1.5:{port}",
                                  "localhost:1", "127.0.0.1"])
def test_a_host_name_other_than_loopback_is_refused_even_with_the_key(ui, host):
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: the Host header gives it away."""
    cookie = ui.login()
    answer = ui.request("GET", "/", host=host.format(port=ui.port), cookie=cookie)
    assert answer.status == 421 and "tersely" not in answer.body
    assert ui.request("GET", "/", cookie=cookie).status == 200  # the name the address printed


def test_a_change_without_the_pages_csrf_token_changes_nothing(ui, db_settings):
    cookie = ui.login()
    form = {"content": "Planted by another site.", "topic": "x", "next": "/"}
    assert ui.post("/do/add", cookie, form).status == 403
    assert ui.post("/do/add", cookie, {**form, "csrf": "guess"}).status == 403
    assert ui.post("/do/add", cookie, {**form, "csrf": ui.token}).status == 403  # the key is not the CSRF token
    assert ui.request("GET", "/do/add?" + "content=x&topic=x", cookie=cookie).status == 405
    assert "Planted" not in ui.get("/", cookie).body
    assert _contents(db_settings) == {SCRIPT, "Answers tersely."}


def test_a_post_from_another_origin_is_refused_even_with_the_token(ui, db_settings):
    cookie = ui.login()
    form = {"content": "Planted by another site.", "topic": "x", "csrf": ui.csrf(cookie)}
    assert ui.post("/do/add", cookie, form, origin="http://evil.example").status == 403
    assert ui.post("/do/add", cookie, form, origin="null").status == 403
    cross = ui.request("POST", "/do/add", cookie=cookie, headers={"Sec-Fetch-Site": "cross-site"},
                       body="content=x&topic=x&csrf=" + form["csrf"])
    assert cross.status == 403
    assert _contents(db_settings) == {SCRIPT, "Answers tersely."}
    done = ui.follow(ui.post("/do/add", cookie, form), cookie)  # the same form from the page itself
    assert "added #3" in done.body and "Planted by another site." in done.body


def test_a_fact_holding_a_script_is_shown_as_text_on_every_page(ui):
    cookie = ui.login()
    for path in ("/", "/agents", "/history/1", "/forget/1", "/?q=script"):
        body = ui.get(path, cookie).body
        assert html.escape(SCRIPT, quote=False) in body.replace("&#39;", "'"), path
        assert "<script>alert" not in body, path
        assert body.count("<script") == 1, "our own script file, and no other"


def test_a_refusal_reads_as_the_cli_says_it(ui, tmp_path, db_settings):
    cookie = ui.login()
    csrf = ui.csrf(cookie)
    page = ui.follow(ui.post("/do/add", cookie, {"content": "  ", "topic": "style", "csrf": csrf}), cookie)
    cli = subprocess.run([sys.executable, "-m", "pipeline", "-c", str(config_file(tmp_path, db_settings)), "add",
                          "  ", "--topic", "style"], capture_output=True, text=True, cwd=tmp_path,
                         env={"HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)})
    said = cli.stderr.strip()
    assert cli.returncode == 1 and said.startswith("error: ")
    assert html.escape(said, quote=False) in page.body.replace("&#39;", "'")
    missing = ui.follow(ui.post("/do/demote", cookie, {"id": "999", "csrf": csrf}), cookie)
    assert 'class="note error"' in missing.body and "no persona fact with id 999" in missing.body
    unknown = ui.get("/history/999", cookie)
    assert unknown.status == 404 and "no persona fact with id 999" in unknown.body


def test_edit_demote_undo_and_history_go_through_the_store(ui, db_settings):
    cookie = ui.login()
    csrf = ui.csrf(cookie)
    edited = ui.follow(ui.post("/do/replace", cookie, {"id": "2", "content": "Answers in one line.", "csrf": csrf}),
                       cookie)
    assert "#3 supersedes #2" in edited.body
    history = ui.get("/history/3", cookie).body
    assert "Answers tersely." in history and "superseded by #3" in history
    undone = ui.follow(ui.post("/do/undo-replace", cookie, {"id": "3", "csrf": csrf, "next": "/history/2"}), cookie)
    assert "restored #2" in undone.body
    ui.post("/do/demote", cookie, {"id": "1", "csrf": csrf})
    assert _contents(db_settings) == {"Answers tersely."}
    assert ui.follow(ui.post("/do/add", cookie, {"content": SCRIPT, "topic": "tools", "csrf": csrf}),
                     cookie).body.count("demoted") >= 1, "the CLI's refusal of a demoted fact"


def test_the_proposals_page_shows_a_merge_beside_an_update_with_its_kind_and_accepts_it(ui, db_settings):
    cookie = ui.login()
    csrf = ui.csrf(cookie)
    fuller = "Answers tersely; no summary of what was just said."
    added = ui.follow(ui.post("/do/add", cookie, {"content": fuller, "topic": "style", "csrf": csrf}), cookie)
    assert "#2 and #3 may say the same (merge)" in added.body
    with PersonaStore.from_settings(load_settings(overrides=db_settings)) as store:
        store.add("Uses npm for JavaScript projects", topic="js")
        store.add("Uses pnpm for JavaScript projects", topic="js")
        merge, update = store.proposals()
    page = ui.get("/proposals", cookie).body
    assert '<td class="kind">merge</td>' in page and '<td class="kind">update</td>' in page
    accepted = ui.follow(ui.post("/do/accept", cookie, {"proposal": str(merge.id), "csrf": csrf}), cookie)
    assert f"#{merge.new.id} supersedes #{merge.old.id}" in accepted.body and update.kind == "update"
    assert "Answers tersely." not in _contents(db_settings) and fuller in _contents(db_settings)


def test_the_change_poll_moves_with_a_change_made_elsewhere(ui, db_settings):
    cookie = ui.login()
    before = ui.get("/changes", cookie).body
    with PersonaStore.from_settings(load_settings(overrides=db_settings)) as store:
        store.add("Prefers tabs.", topic="style")  # as the CLI or an agent's tool call would
    after = ui.get("/changes", cookie).body
    assert before != after and "generation" in after


def test_after_a_forget_in_the_page_no_byte_we_keep_holds_the_fact_and_no_page_serves_it(tmp_path):
    """The same check as `persona forget`'s own test (tests/schedule/test_forget_everywhere.py), on the bytes of
    every table and file, the server's own output included."""
    database = next(open_database("sqlite", tmp_path))
    secret = seed(database, tmp_path)
    settings = configured(database, tmp_path)
    overrides = {**database.settings(), **_overrides_of(settings, tmp_path)}
    ui = start(tmp_path, config_file(tmp_path, overrides), "--profile", "alice")
    try:
        cookie = ui.login()
        confirm = ui.get(f"/forget/{secret}", cookie).body
        assert "cannot be undone" in confirm
        done = ui.follow(ui.post("/do/forget", cookie, {"id": str(secret), "csrf": ui.csrf(cookie),
                                                        "next": f"/forget/{secret}"}), cookie)
        assert f"forgot #{secret}" in done.body
        served = "".join(ui.get(path, cookie).body for path in
                         ("/", "/agents", "/proposals", f"/history/{secret}", f"/forget/{secret}"))
        searched = ui.get("/?q=Quetzal", cookie).body
    finally:
        assert ui.stop() == 0
    after = everything_kept(database, tmp_path)
    assert [spelling for spelling in spellings(SECRET) if spelling in after] == []
    assert [spelling for spelling in spellings(SECRET) if spelling in html.unescape(served)] == []
    assert KEPT in after and KEPT in served
    assert "No fact holds" in searched


def _overrides_of(settings, tmp_path: Path) -> dict[str, object]:
    """The settings `configured` built, as the config file the server reads."""
    dumped = settings.model_dump(mode="json", exclude={"store"})
    return {key: value for key, value in dumped.items() if key in ("injection", "render", "targets")}


def test_without_the_ui_extra_the_command_says_how_to_install_it(tmp_path):
    blocked = ("import sys; sys.modules['uvicorn'] = None; from pipeline.cli import app; "
               "app(['ui', '--no-browser'], prog_name='persona')")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, cwd=tmp_path,
                          env={"HOME": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert done.returncode == 1
    assert "needs persona-tier's optional extra 'ui': pip install 'persona-tier[ui]'" in done.stderr
    assert "uv tool install --force 'SOURCE[ui]'" in done.stderr and "Traceback" not in done.stderr


def _contents(db_settings: dict[str, str]) -> set[str]:
    with PersonaStore.from_settings(load_settings(overrides=db_settings), readonly=True) as store:
        return {fact.content for fact in store.list()}


def test_the_browser_is_given_a_private_page_that_leads_on_not_the_key_itself(tmp_path, db_settings):
    """A browser's command line is public to every local user: it gets a 0600 file that redirects to the key."""
    seen = tmp_path / "seen"
    seen.mkdir()
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nf="${{1#file://}}"\necho "$1" > {seen}/arg\nstat -c %a "$f" > {seen}/mode\n'
                       f'cat "$f" > {seen}/page\n')
    browser.chmod(0o700)
    ui = start(tmp_path, config_file(tmp_path, db_settings), flags=("--port", "0"), env={"BROWSER": str(browser)})
    try:
        page = _eventually(seen / "page")
        assert ui.token not in (seen / "arg").read_text() and (seen / "mode").read_text().strip() == "600"
        assert f'content="0;url={ui.url}"' in page
        assert ui.request("GET", ui.url.removeprefix(f"http://{ui.authority}")).status == 303
        opened = Path((seen / "arg").read_text().strip().removeprefix("file://"))
        assert opened.exists()
    finally:
        assert ui.stop() == 0
    assert not opened.exists() and not opened.parent.exists(), "removed when the server stops"


def test_the_port_flag_wins_over_the_setting(tmp_path, db_settings):
    wanted, other = _free_port(), _free_port()
    ui = start(tmp_path, config_file(tmp_path, {**db_settings, "ui.port": other, "ui.open_browser": False}),
               flags=("--port", str(wanted)))
    try:
        assert ui.port == wanted
    finally:
        assert ui.stop() == 0
    ui = start(tmp_path, config_file(tmp_path, {**db_settings, "ui.port": other, "ui.open_browser": False}),
               flags=())
    try:
        assert ui.port == other
    finally:
        assert ui.stop() == 0


def test_the_core_never_imports_the_web_stack(tmp_path):
    code = ("import sys, pipeline, pipeline.cli; from pipeline.cli import app\n"
            "print(sorted(m for m in ('starlette', 'uvicorn') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"HOME": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]", done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _eventually(path: Path) -> str:
    """What the fake browser wrote, once it ran (webbrowser waits for the command, but after the URL is printed)."""
    import time

    deadline = time.monotonic() + 30
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"the browser command never ran: {path}"
        time.sleep(0.05)
    return path.read_text()


def test_a_config_broken_while_it_runs_is_the_clis_one_line_not_a_crash(ui, tmp_path):
    cookie = ui.login()
    (tmp_path / "ui-config.yaml").write_text("cap: {token_cap: lots}\n")
    answer = ui.get("/", cookie)
    assert answer.status == 400 and answer.body.startswith("error: invalid configuration")
    assert answer.headers["cache-control"] == "no-store"
