"""Every write in the page renders the profile's files before its note is shown, as the CLI's writes do, and its
note says so (issue 38, 7); a real `persona ui` process, driven over HTTP."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import PersonaStore, load_settings

from .running import Running, config_file, start

pytestmark = pytest.mark.slow
NPM, PNPM = "Uses npm for JavaScript projects", "Uses pnpm for JavaScript projects"


@pytest.fixture
def overrides(tmp_path: Path) -> dict[str, str]:
    return {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md")}


@pytest.fixture
def ui(tmp_path: Path, overrides: dict[str, str]) -> Iterator[Running]:
    with PersonaStore.from_settings(load_settings(overrides=overrides)) as store:
        store.add("Answers tersely.", topic="style")  # the store's own write: nothing rendered yet
    running = start(tmp_path, config_file(tmp_path, overrides))
    yield running
    assert running.stop() == 0


def note(running: Running, cookie: str, action: str, form: dict[str, str]) -> str:
    """The note the page shows after ``action``."""
    body = running.follow(running.post(f"/do/{action}", cookie, {**form, "csrf": running.csrf(cookie)}), cookie).body
    return html.unescape(body)


def test_add_replace_undo_demote_and_accept_in_the_page_each_leave_the_file_current(ui, tmp_path, overrides):
    cookie = ui.login()
    persona_md = tmp_path / "persona.md"
    assert not persona_md.exists()
    assert "added #2; rendered 1 target" in note(ui, cookie, "add", {"content": "Prefers tabs.", "topic": "style"})
    assert "Prefers tabs." in persona_md.read_text() and "Answers tersely." in persona_md.read_text()
    replaced = note(ui, cookie, "replace", {"id": "2", "content": "Prefers spaces."})
    assert "#3 supersedes #2" in replaced and "rendered 1 target" in replaced
    assert "Prefers spaces." in persona_md.read_text() and "tabs" not in persona_md.read_text()
    assert "rendered 1 target" in note(ui, cookie, "undo-replace", {"id": "3"})
    assert "Prefers tabs." in persona_md.read_text()
    assert "rendered 1 target" in note(ui, cookie, "demote", {"id": "2"})
    assert "tabs" not in persona_md.read_text()
    note(ui, cookie, "add", {"content": NPM, "topic": "tools"})
    note(ui, cookie, "add", {"content": PNPM, "topic": "tools"})
    with PersonaStore.from_settings(load_settings(overrides=overrides), readonly=True) as store:
        [proposal] = store.proposals()
    accepted = note(ui, cookie, "accept", {"proposal": str(proposal.id)})
    assert f"(proposal {proposal.id}); rendered 1 target" in accepted
    assert PNPM in persona_md.read_text() and NPM not in persona_md.read_text()


def test_a_file_the_page_cannot_render_is_named_in_the_note_and_the_write_stands(ui, tmp_path, overrides):
    (tmp_path / "persona.md").write_text("My own persona, written by hand.\n")
    cookie = ui.login()
    said = note(ui, cookie, "add", {"content": "Prefers tabs.", "topic": "style"})
    assert "added #2; no target was rendered" in said and "warning: target 'markdown'" in said
    assert (tmp_path / "persona.md").read_text() == "My own persona, written by hand.\n"
    with PersonaStore.from_settings(load_settings(overrides=overrides), readonly=True) as store:
        assert [fact.content for fact in store.list(topic="style")] == ["Answers tersely.", "Prefers tabs."]


def test_a_text_forgotten_in_the_page_is_refused_there_in_any_dress(ui, tmp_path, overrides):
    """Issue 48 point 5: the page's add and replace refuse a forgotten text dressed in quotes, emphasis, a bullet,
    brackets or an emoji, as every other writer does."""
    cookie = ui.login()
    assert "added #2" in note(ui, cookie, "add", {"content": "Door code is 4721, then the gate.", "topic": "home"})
    assert "forgot" in note(ui, cookie, "forget", {"id": "2"})
    for dressed in ('"Door code is 4721, then the gate"', "**Door code is 4721 \u2014 then the gate**",
                    "- (door code is 4721; then the gate) \U0001f510"):
        said = note(ui, cookie, "add", {"content": dressed, "topic": "other"})
        assert "error: that fact was forgotten (persona forget)" in said
        said = note(ui, cookie, "replace", {"id": "1", "content": dressed})
        assert "error: that fact was forgotten (persona forget)" in said
    assert "4721" not in (tmp_path / "persona.md").read_text()
    with PersonaStore.from_settings(load_settings(overrides=overrides), readonly=True) as store:
        assert [fact.content for fact in store.list()] == ["Answers tersely."]
