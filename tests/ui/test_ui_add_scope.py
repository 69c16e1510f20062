"""The page's add form scopes a fact to one of the user's projects or agents; a long writer stays short in its
column, whole in its title; the favicon is there (issue 39, 8). A real `persona ui` process, driven over HTTP."""

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


@pytest.fixture
def projects(tmp_path: Path) -> tuple[Path, Path]:
    made = tmp_path / "alpha", tmp_path / "beta"
    for project in made:
        project.mkdir()
    return made


@pytest.fixture
def overrides(tmp_path: Path, projects: tuple[Path, Path]) -> dict[str, object]:
    """Two projects with a Codex target each, so the user has two projects before any project fact."""
    alpha, beta = projects
    return {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md"),
            "targets.codex-alpha": PRESETS["codex"].target("codex", alpha / "AGENTS.md", alpha),
            "targets.codex-beta": PRESETS["codex"].target("codex", beta / "AGENTS.md", beta)}


@pytest.fixture
def ui(tmp_path: Path, overrides: dict[str, object]) -> Iterator[Running]:
    with PersonaStore.from_settings(load_settings(overrides=overrides), writer="adopt:" + "/very/long" * 20 +
                                    "/CLAUDE.md") as store:
        store.add("Answers tersely.", topic="style")
    running = start(tmp_path, config_file(tmp_path, overrides))
    yield running
    assert running.stop() == 0


def add(running: Running, cookie: str, form: dict[str, str]) -> str:
    answer = running.post("/do/add", cookie, {"topic": "release", **form, "csrf": running.csrf(cookie)})
    return html.unescape(running.follow(answer, cookie).body)


def test_a_fact_added_for_one_project_reaches_that_projects_file_only(ui: Running, projects: tuple[Path, Path],
                                                                     overrides: dict[str, object]) -> None:
    alpha, beta = projects
    cookie = ui.login()
    page = ui.get("/", cookie).body
    options = re.findall(r'<option value="(project:[^"]+)">', page)
    assert options == [f"project:{alpha}", f"project:{beta}"]  # the user's projects, from the targets
    assert '<option value="host:codex">codex only</option>' in page
    said = add(ui, cookie, {"content": "Ships alpha on Thursdays.", "scope": f"project:{alpha}"})
    assert "added #2" in said
    assert "Ships alpha on Thursdays." in (alpha / "AGENTS.md").read_text()
    assert "Ships alpha on Thursdays." not in (beta / "AGENTS.md").read_text()
    assert add(ui, cookie, {"content": "Uses tabs in Codex.", "scope": "host:codex"}).count("added #3")
    with PersonaStore.from_settings(load_settings(overrides=overrides), readonly=True) as store:
        assert {fact.content: fact.scope for fact in store.list(topic="release")} == {
            "Ships alpha on Thursdays.": f"project:{alpha}", "Uses tabs in Codex.": "host:codex"}
    refused = add(ui, cookie, {"content": "Nowhere.", "scope": "planet:mars"})
    assert "error: unknown scope 'planet:mars'" in refused


def test_a_long_writer_is_short_in_its_column_and_whole_in_its_title_and_there_is_a_favicon(ui: Running) -> None:
    cookie = ui.login()
    page = html.unescape(ui.get("/", cookie).body)
    [cell] = re.findall(r'<td class="writer" title="([^"]*)">([^<]*)</td>', page)
    assert cell[1] == "adopt:CLAUDE.md"
    assert cell[0].startswith("adopt:" + "/very/long" * 20 + "/CLAUDE.md, created ")
    icon = ui.get("/favicon.ico", cookie)
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert ui.get("/static/favicon.svg", cookie).status == 200 and 'rel="icon"' in page


def test_a_forget_in_the_page_reaches_the_hosts_histories_too(ui: Running, tmp_path: Path) -> None:
    transcript = tmp_path / "home" / ".claude" / "projects" / "-work-a" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"message":{"content":"Answers tersely."}}\n', encoding="utf-8")
    cookie = ui.login()
    answer = ui.post("/do/forget", cookie, {"id": "1", "csrf": ui.csrf(cookie)})
    said = html.unescape(ui.follow(answer, cookie).body)
    assert "replaced it with [forgotten] in 1 host history file" in said
    assert transcript.read_text(encoding="utf-8") == '{"message":{"content":"[forgotten]."}}\n'  # its full stop stays
