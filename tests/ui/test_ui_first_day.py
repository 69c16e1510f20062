"""What a newcomer met on the page (#52): the open proposals counted in the header, a demote that asks first, and
what each agent sees told once and short: a summary of every target, the history every target leaves out alike
said once, and each target's details folded away unless something is wrong. A real `persona ui` process."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import PersonaStore, load_settings
from pipeline.config.presets import PRESETS

from .running import Running, config_file, start

pytestmark = pytest.mark.slow
OLD, NEW = "Indents with two spaces.", "Indents with four spaces in Python."
NPM, PNPM = "Uses npm for JavaScript projects", "Uses pnpm for JavaScript projects"
GONE = "Writes long preambles."


@pytest.fixture
def overrides(tmp_path: Path) -> dict[str, object]:
    codex = PRESETS["codex"].target("codex", tmp_path / "AGENTS.md", tmp_path)
    return {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md"),
            "targets.codex": {**codex, "budget": 40}}


@pytest.fixture
def ui(tmp_path: Path, overrides: dict[str, object]) -> Iterator[Running]:
    settings = load_settings(overrides=overrides)
    with PersonaStore.from_settings(settings, writer="cli") as store:
        store.add("Answers tersely; no preamble.", topic="style", tier="permanent")
        store.add("Never force-push; ask first.", topic="git")
        old = store.add(OLD, topic="style").fact
        store.replace(old.id, NEW)
        store.demote(store.add(GONE, topic="style").fact.id)
        store.add(NPM, topic="tools")
        store.add(PNPM, topic="tools")  # may update the npm fact: one open proposal
    with PersonaStore.from_settings(settings, profile="bob", writer="cli") as bob:
        bob.add("Bob's own rule.", topic="style")
        bob.demote(bob.add("Bob's demoted rule.", topic="style").fact.id)
    running = start(tmp_path, config_file(tmp_path, overrides))
    yield running
    assert running.stop() == 0


def test_every_page_counts_the_open_proposals_in_its_header(ui: Running) -> None:
    cookie = ui.login()
    for path in ("/", "/agents", "/proposals", "/history/1"):
        header = html.unescape(ui.get(path, cookie).body).partition("<main>")[0]
        assert re.search(r'href="/proposals"[^>]*>Proposals <span class="count"[^>]*>\(1\)</span></a>', header), path


def test_demote_asks_first_and_says_what_it_does(ui: Running, overrides: dict[str, object]) -> None:
    cookie = ui.login()
    facts = ui.get("/", cookie).body
    assert 'action="/do/demote"' not in facts and 'href="/demote/1"' in facts
    asked = " ".join(html.unescape(ui.get("/demote/1", cookie).body).split())
    assert "Demote #1?" in asked and "Answers tersely; no preamble." in asked
    assert "a tombstone keeps it from being proposed or imported again" in asked and "use Forget instead" in asked
    with PersonaStore.from_settings(load_settings(overrides=overrides), readonly=True) as store:
        assert 1 in {fact.id for fact in store.list()}  # asking changed nothing
    done = ui.follow(ui.post("/do/demote", cookie,
                             {"id": "1", "csrf": ui.csrf(cookie), "next": "/demote/1"}), cookie)
    assert "demoted #1" in html.unescape(done.body) and "Demote #1?" not in done.body  # back to the facts
    assert ui.get("/demote/999", cookie).status == 404


def test_what_each_agent_sees_is_a_summary_then_each_target_with_the_history_said_once(ui: Running) -> None:
    cookie = ui.login()
    page = html.unescape(ui.get("/agents", cookie).body)
    summary = page.partition('<table class="summary">')[2].partition("</table>")[0]
    assert '<a href="#target-markdown">markdown</a>' in summary and '<a href="#target-codex">codex</a>' in summary
    history = page.partition('<details class="history">')[2].partition("</details>")[0]
    assert "2 facts superseded or demoted" in history  # the profile's own: never bob's
    assert OLD in history and GONE in history and "Bob's" not in page
    sections = page.split('<section class="agent"')[1:]
    assert len(sections) == 2
    for section in sections:
        assert OLD not in section and GONE not in section  # the history is not repeated per target
    codex = next(section for section in sections if 'id="target-codex"' in section)
    assert '<details class="left-out">' in codex and "fitted out (budget)" in codex  # folded, with what it holds
    assert "<details" not in page.replace('<details class="load-set">', "").replace(
        '<details class="left-out">', "").replace('<details class="history">', ""), "every fold starts closed"


def test_forgetting_an_imported_fact_in_the_page_names_the_file_still_holding_it(ui: Running, tmp_path: Path,
                                                                                overrides: dict[str, object]) -> None:
    source = tmp_path / "my-facts.yaml"
    source.write_text("facts:\n  - topic: drinks\n    content: Drinks green tea.\n", encoding="utf-8")
    settings = load_settings(overrides=overrides)
    with PersonaStore.from_settings(settings, writer=f"import:facts:{source}") as store:
        fact = store.add("Drinks green tea.", topic="drinks").fact
    cookie = ui.login()
    row = html.unescape(ui.get("/", cookie).body).partition(f'<tr id="fact-{fact.id}">')[2].partition("</tr>")[0]
    assert '<td class="writer" title="import:facts:' in row and ">import:my-facts.yaml</td>" in row  # whole
    said = html.unescape(ui.follow(ui.post("/do/forget", cookie, {"id": str(fact.id), "csrf": ui.csrf(cookie)}),
                                   cookie).body)
    assert f"the file it was imported from still holds it (edit it out by hand): {source}" in said
