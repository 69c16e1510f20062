"""`persona targets add HOST`: each coding agent's own file gets the persona; `targets remove` gives it back.

A second profile (bob) shares the store; his facts never reach any host's file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app
from pipeline.fs.projects import project_of
from pipeline.scopes import project_scope

runner = CliRunner()
FILES = {"claude-code": "CLAUDE.md", "codex": "AGENTS.md", "gemini": "GEMINI.md",
         "copilot": ".github/copilot-instructions.md", "cursor": ".cursor/rules/persona.mdc"}
BUDGETS = {"claude-code": 2000, "codex": 2000, "gemini": 2000, "copilot": 1000, "cursor": 1500}
USER_TEXT = b"# Project rules\r\n\r\nRun `make test` before committing.\r\n"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    """The user's facts of the project (every preset's project file shows those; tests/stages/test_scopes.py
    shows what else each one shows), and bob's."""
    project = tmp_path / "project"
    project.mkdir()
    with PersonaStore(tmp_path / "m.db") as store:
        store.add("Answers tersely.", topic="style", scope=scoped_to(project))
    with PersonaStore(tmp_path / "m.db", profile="bob") as store:
        store.add("Bob's secret rule.", topic="bob", scope=scoped_to(project))
    config = tmp_path / "persona.yaml"
    config.write_text(f"# my settings\nstore:\n  path: {tmp_path / 'm.db'}  # the shared store\n"
                      f"injection:\n  file: {tmp_path / 'persona.md'}\n", encoding="utf-8")
    return config, project


def persona(config: Path, *args: str) -> object:
    result = runner.invoke(app, ["-c", str(config), *args])
    assert result.exit_code == 0, result.stderr
    return result


def add(config: Path, text: str) -> None:
    with PersonaStore(config.parent / "m.db") as store:
        store.add(text, topic="more", scope=scoped_to(config.parent / "project"))


def scoped_to(directory: Path) -> str:
    return project_scope(project_of(directory).identity)


@pytest.mark.parametrize("preset", sorted(FILES))
def test_every_preset_round_trips_and_leaves_the_users_text_alone(setup, preset):
    config, project = setup
    original_config = config.read_bytes()
    path = project / FILES[preset]
    owned = preset == "cursor"
    if not owned:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(USER_TEXT)
    persona(config, "targets", "add", preset, "--project", str(project))
    listed = json.loads(persona(config, "targets", "list", "--json").stdout)
    mine = next(t for t in listed if t["name"] == preset)
    assert mine["path"] == str(path) and mine["budget"] == BUDGETS[preset]
    assert mine["output"] == ("file" if owned else "region")
    persona(config, "render")
    first = path.read_bytes()
    assert b"Answers tersely." in first and b"Bob" not in first
    if not owned:
        assert first.startswith(USER_TEXT) and b"<!-- persona-tier:begin profile=default -->" in first
        edited = b"Added on top by hand.\r\n" + first + b"\r\nAdded below by hand.\r\n"
        path.write_bytes(edited)
    add(config, "Prefers small commits.")
    persona(config, "render")
    second = path.read_bytes()
    assert b"Prefers small commits." in second and b"Bob" not in second
    if not owned:
        assert second.startswith(b"Added on top by hand.\r\n" + USER_TEXT)
        assert second.endswith(b"\r\nAdded below by hand.\r\n")
    removed = persona(config, "targets", "remove", preset)
    assert "removed target" in removed.stdout
    assert config.read_bytes() == original_config  # the config is back, comments and all
    if owned:
        assert not path.exists()
    else:
        left = path.read_bytes()
        assert b"persona-tier" not in left and b"Answers" not in left
        assert left.startswith(b"Added on top by hand.\r\n" + USER_TEXT) and left.endswith(b"Added below by hand.\r\n")


def test_the_cursor_rule_is_front_matter_plus_markdown(setup):
    config, project = setup
    persona(config, "targets", "add", "cursor", "--project", str(project))
    persona(config, "render")
    text = (project / ".cursor" / "rules" / "persona.mdc").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert set(meta) == {"description", "globs", "alwaysApply"} and meta["alwaysApply"] is True
    assert isinstance(meta["description"], str) and meta["description"]
    assert "## style" in body and "- Answers tersely." in body and "Bob" not in body
    assert (project / ".cursor" / "rules" / "persona.mdc").stat().st_mode & 0o777 == 0o600


def test_claude_code_for_the_user_goes_to_the_home_claude_md(setup):
    config, _ = setup
    home = Path.home()  # the test's own HOME (conftest)
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_bytes(b"Mine.\n")
    with PersonaStore(config.parent / "m.db") as store:  # the user-level file shows global facts
        store.add("Answers tersely.", topic="style")
    persona(config, "targets", "add", "claude-code", "--user")
    persona(config, "render")
    data = (home / ".claude" / "CLAUDE.md").read_bytes()
    assert data.startswith(b"Mine.\n") and b"Answers tersely." in data and b"Bob" not in data
    persona(config, "targets", "remove", "claude-code")
    assert (home / ".claude" / "CLAUDE.md").read_bytes() == b"Mine.\n"


@pytest.mark.parametrize(("args", "message"), [
    (["copilot", "--user"], "no per-user instruction file"),
    (["vim"], "unknown preset 'vim'"),
    (["codex", "--user", "--project", "."], "not both"),
])
def test_a_bad_preset_request_is_one_error_and_changes_nothing(setup, args, message):
    config, _ = setup
    before = config.read_bytes()
    result = runner.invoke(app, ["-c", str(config), "targets", "add", *args])
    assert result.exit_code == 1 and message in result.stderr and config.read_bytes() == before


def test_a_second_preset_on_the_same_name_or_file_is_refused(setup):
    config, project = setup
    persona(config, "targets", "add", "codex", "--project", str(project))
    again = runner.invoke(app, ["-c", str(config), "targets", "add", "codex", "--project", str(project)])
    assert again.exit_code == 1 and "already exists" in again.stderr
    same_file = runner.invoke(app, ["-c", str(config), "targets", "add", "codex", "--project", str(project),
                                    "--name", "codex2"])
    assert same_file.exit_code == 1 and "both write the region" in same_file.stderr


def test_remove_refuses_broken_markers_and_changes_nothing(setup):
    config, project = setup
    persona(config, "targets", "add", "gemini", "--project", str(project))
    broken = b"mine\n<!-- persona-tier:begin profile=default -->\nno end\n"
    (project / "GEMINI.md").write_bytes(broken)
    before = config.read_bytes()
    result = runner.invoke(app, ["-c", str(config), "targets", "remove", "gemini"])
    assert result.exit_code == 1 and "line 2" in result.stderr
    assert config.read_bytes() == before and (project / "GEMINI.md").read_bytes() == broken


def test_remove_leaves_a_whole_file_that_is_not_our_last_render_and_says_so(setup):
    config, project = setup
    rule = project / FILES["cursor"]
    rule.parent.mkdir(parents=True)
    rule.write_bytes(b"---\ndescription: mine, by hand\n---\nUse tabs.\n")
    added = persona(config, "targets", "add", "cursor", "--project", str(project))
    assert f"warning: {rule} already exists" in added.stderr and "persona adopt" in added.stderr
    removed = persona(config, "targets", "remove", "cursor")
    assert f"left {rule} as it is" in removed.stdout and "not persona-tier's last render" in removed.stdout
    assert rule.read_bytes() == b"---\ndescription: mine, by hand\n---\nUse tabs.\n"


def test_remove_leaves_our_render_once_edited_by_hand_and_deletes_it_untouched(setup):
    config, project = setup
    rule = project / FILES["cursor"]
    assert "warning" not in persona(config, "targets", "add", "cursor", "--project", str(project)).stderr
    persona(config, "render")
    rule.write_bytes(rule.read_bytes() + b"- Added by hand.\n")
    assert "left" in persona(config, "targets", "remove", "cursor").stdout and rule.exists()
    persona(config, "targets", "add", "cursor", "--project", str(project))
    persona(config, "render", "--force")  # overwrites the edited file on purpose (a copy of it stays beside it)
    removed = persona(config, "targets", "remove", "cursor")
    assert f"deleted {rule}" in removed.stdout and not rule.exists()
