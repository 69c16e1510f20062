"""`persona adopt PATH`: a target's file persona-tier did not write has its facts imported, then is taken over by
the next render, its old bytes kept beside it (0600); nothing the user had is lost. Both backends, two profiles."""

from __future__ import annotations

import os
import shutil

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

from ..conftest import REPO, digest, write

runner = CliRunner()
DATA = REPO / "tests" / "data" / "imports"
HANDWRITTEN = "# About me\n\n## style\n\n- I like short answers.\n- No emojis.\n"


def persona(database, tmp_path, *args: str, overrides: dict[str, str] | None = None):
    pairs = {**database.settings(), "injection.file": str(tmp_path / "persona.md"), **(overrides or {})}
    return runner.invoke(app, [*(part for key, value in pairs.items() for part in ("--set", f"{key}={value}")),
                               *args])


def held(database, profile: str = "default") -> dict[str, tuple[str, str]]:
    with PersonaStore(database.target, profile=profile) as store:
        return {fact.content: (fact.topic, fact.writer or "") for fact in store.list()}


def test_a_hand_written_persona_is_imported_then_taken_over_and_its_bytes_kept(database, tmp_path):
    path = write(tmp_path / "persona.md", HANDWRITTEN)
    assert persona(database, tmp_path, "add", "Prefers tea.", "--topic", "drinks").exit_code == 0
    assert persona(database, tmp_path, "render").exit_code == 1  # not ours: left untouched, pointing at adopt
    done = persona(database, tmp_path, "adopt", str(path))
    assert done.exit_code == 0, done.output
    assert held(database) == {"Prefers tea.": ("drinks", "cli"), "I like short answers.": ("style", f"adopt:{path}"),
                              "No emojis.": ("style", f"adopt:{path}")}
    [copy] = tmp_path.glob("persona.md.before-persona-tier-*")
    assert copy.read_text() == HANDWRITTEN and os.stat(copy).st_mode & 0o777 == 0o600
    assert f"{path} is now rendered by target 'markdown'; its old bytes are kept in {copy}" in done.stdout
    rendered = path.read_text()
    assert all(text in rendered for text in ("I like short answers.", "No emojis.", "Prefers tea."))
    assert os.stat(path).st_mode & 0o777 == 0o600
    again = persona(database, tmp_path, "render")  # the file is ours now: the next render writes it
    assert again.exit_code == 0 and "(unchanged)" in again.stdout
    assert persona(database, tmp_path, "adopt", str(path)).exit_code == 0  # adopting it again adds nothing
    assert len(held(database)) == 3 and len(list(tmp_path.glob("persona.md.before-persona-tier-*"))) == 1


def test_the_dry_run_writes_nothing_and_says_what_it_would_do(database, tmp_path):
    path = write(tmp_path / "persona.md", HANDWRITTEN)
    persona(database, tmp_path, "add", "Prefers tea.", "--topic", "drinks")
    before = digest(path)
    done = persona(database, tmp_path, "adopt", str(path), "--dry-run")
    assert done.exit_code == 0, done.output
    assert "would add (2)" in done.stdout and "would then render target 'markdown' over" in done.stdout
    assert digest(path) == before and list(held(database)) == ["Prefers tea."]
    assert list(tmp_path.glob("persona.md.before-persona-tier-*")) == []


def test_mnemosynes_own_persona_md_keeps_its_tiers_and_confidences(database, tmp_path):
    path = tmp_path / "persona.md"
    shutil.copy(DATA / "mnemosyne" / "persona.md", path)
    assert persona(database, tmp_path, "adopt", str(path)).exit_code == 0
    with PersonaStore(database.target) as store:
        facts = {fact.content: (fact.tier, fact.confidence) for fact in store.list()}
    assert facts["Answers tersely."] == ("permanent", 0.9) and facts["Uses uv, never pip."] == ("long_term", 0.75)


def test_a_forgotten_fact_in_the_file_stops_the_adoption_and_the_file_stays(database, tmp_path):
    persona(database, tmp_path, "add", "No emojis.", "--topic", "style")
    with PersonaStore(database.target) as store:
        from pipeline.store.erasure import forget_fact

        forget_fact(store, store.list()[0].id)
    path = write(tmp_path / "persona.md", HANDWRITTEN)
    done = persona(database, tmp_path, "adopt", str(path))
    assert done.exit_code == 1 and "line 6: that fact was forgotten" in done.stderr
    assert path.read_text() == HANDWRITTEN and held(database) == {}
    assert list(tmp_path.glob("persona.md.before-persona-tier-*")) == []


def test_a_file_that_is_no_targets_is_one_clear_error(tmp_path):
    other = write(tmp_path / "notes.md", "- A note.\n")
    done = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "adopt", str(other)])
    assert done.exit_code == 1
    assert done.stderr.strip() == (f"error: {other} is no target's file (see `persona targets list`), so there is "
                                   "nothing to take over; to import its facts, use `persona import --from FORMAT "
                                   f"{other}`")


def test_a_regions_file_keeps_every_byte_of_the_users_text(database, tmp_path):
    claude = tmp_path / "CLAUDE.md"
    shutil.copy(DATA / "claude" / "CLAUDE.md", claude)
    before = claude.read_text()
    done = persona(database, tmp_path, "adopt", str(claude), overrides={
        "targets.claude.output": "region", "targets.claude.path": str(claude)})
    assert done.exit_code == 0, done.output
    assert len(held(database)) == 5
    assert claude.read_text().startswith(before) and "<!-- persona-tier:begin profile=default -->" in \
        claude.read_text()
    assert list(tmp_path.glob("CLAUDE.md.before-persona-tier-*")) == []


@pytest.mark.parametrize("profile", ["alice", "bob"])
def test_each_profile_adopts_its_own_file(database, tmp_path, profile):
    paths = {name: write(tmp_path / f"persona-{name}.md", f"## style\n\n- {name.title()} likes short answers.\n")
             for name in ("alice", "bob")}
    overrides = {"injection.file": str(tmp_path / "persona-{profile}.md")}
    done = persona(database, tmp_path, "adopt", str(paths[profile]), "--profile", profile, overrides=overrides)
    assert done.exit_code == 0, done.output
    assert list(held(database, profile)) == [f"{profile.title()} likes short answers."]
    other = "bob" if profile == "alice" else "alice"
    assert held(database, other) == {} and paths[other].read_text().startswith("## style")
    wrong = persona(database, tmp_path, "adopt", str(paths[other]), "--profile", profile, overrides=overrides)
    assert wrong.exit_code == 1 and "is no target's file" in wrong.stderr
