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
from pipeline.fs.yaml import read_front_matter
from pipeline.scopes import project_scope

runner = CliRunner()
FILES = {"claude-code": "CLAUDE.md", "codex": "AGENTS.md", "gemini": "GEMINI.md",
         "copilot": ".github/copilot-instructions.md", "cursor": ".cursor/rules/persona.mdc",
         "claude-code-rules": ".claude/rules/persona.md",
         "copilot-path": ".github/instructions/persona.instructions.md",
         "windsurf": ".windsurf/rules/persona.md", "cline": ".clinerules/persona.md",
         "continue": ".continue/rules/persona.md", "kiro": ".kiro/steering/persona.md"}
BUDGETS = {"claude-code": 2000, "codex": 2000, "gemini": 2000, "copilot": 1000, "cursor": 1500,
           "claude-code-rules": 2000, "copilot-path": 1000, "windsurf": 1500, "cline": 2000, "continue": 2000,
           "kiro": 2000}
OWNED = {"cursor", "claude-code-rules", "copilot-path", "windsurf", "cline", "continue", "kiro"}
# Each rules file's front matter as its host documents it (docs/hosts.md); None: the file has none.
FRONT_MATTER = {"claude-code-rules": None, "cline": None, "copilot-path": {"applyTo": "**"},
                "windsurf": {"trigger": "always_on"}, "kiro": {"inclusion": "always"},
                "continue": {"name": "persona-tier", "alwaysApply": True,
                             "description": "The user's standing preferences, kept by persona-tier"}}
# The user-level file of each new preset that has one, under the home directory, and whether it is ours alone.
USER_FILES = {"claude-code-rules": (".claude/rules/persona.md", True),
              "cline": ("Documents/Cline/Rules/persona.md", True),
              "continue": (".continue/rules/persona.md", True), "kiro": (".kiro/steering/persona.md", True),
              "windsurf": (".codeium/windsurf/memories/global_rules.md", False)}


def add_args(preset: str, *scope: str) -> list[str]:
    """`targets add` for a preset name of this test (claude-code-rules is `claude-code --rules`)."""
    if preset == "claude-code-rules":
        return ["targets", "add", "claude-code", "--rules", *scope, "--name", preset]
    return ["targets", "add", preset, *scope]
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
    owned = preset in OWNED
    if not owned:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(USER_TEXT)
    persona(config, *add_args(preset, "--project", str(project)))
    listed = json.loads(persona(config, "targets", "list", "--json").stdout)
    mine = next(t for t in listed if t["name"] == preset)
    assert mine["path"] == str(path) and mine["budget"] == BUDGETS[preset]
    assert mine["output"] == ("file" if owned else "region")
    persona(config, "render")
    first = path.read_bytes()
    assert b"Answers tersely." in first and b"Bob" not in first
    title, _, rest = USER_TEXT.partition(b"\r\n\r\n")
    if not owned:  # Codex cuts its chain from the end: our region goes first there, under the user's title (#49)
        assert first.startswith(title + b"\r\n\r\n<!--") and first.endswith(rest) if preset == "codex" else \
            first.startswith(USER_TEXT)
        assert b"<!-- persona-tier:begin profile=default -->" in first
        edited = b"Added on top by hand.\r\n" + first + b"\r\nAdded below by hand.\r\n"
        path.write_bytes(edited)
    add(config, "Prefers small commits.")
    persona(config, "render")
    second = path.read_bytes()
    assert b"Prefers small commits." in second and b"Bob" not in second
    if not owned:
        assert second.startswith(b"Added on top by hand.\r\n")
        assert second.endswith(rest + b"\r\nAdded below by hand.\r\n" if preset == "codex" else
                               b"\r\nAdded below by hand.\r\n")
    removed = persona(config, "targets", "remove", preset)
    assert "removed target" in removed.stdout
    assert config.read_bytes() == original_config  # the config is back, comments and all
    if owned:  # the file and the folders it alone filled are gone; the project is as it was
        assert not path.exists() and not any(project.iterdir())
    else:
        # Byte for byte what the user wrote: no blank line of ours left between their text and what they added.
        assert path.read_bytes() == b"Added on top by hand.\r\n" + USER_TEXT + b"\r\nAdded below by hand.\r\n"
    assert not [p for p in project.rglob("*") if p.name.endswith(".lock")]  # nothing of ours left in the project


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
    (["copilot-path", "--user"], "no per-user instruction file"),  # copilot --user is the Copilot CLI's file
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
    again = runner.invoke(app, ["-c", str(config), "targets", "add", "codex", "--project", str(project),
                                "--name", "codex"])
    assert again.exit_code == 1 and "target 'codex' already exists; give this one another name with --name" \
        in again.stderr and "invalid configuration" not in again.stderr
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


@pytest.mark.parametrize("preset", sorted(FRONT_MATTER))
def test_each_rules_file_carries_its_hosts_front_matter(setup, preset):
    config, project = setup
    persona(config, *add_args(preset, "--project", str(project)))
    persona(config, "render")
    text = (project / FILES[preset]).read_text(encoding="utf-8")
    expected = FRONT_MATTER[preset]
    assert read_front_matter(text) == expected
    if expected is not None:
        body = text.split("\n---\n", 1)[1]
        assert "---" not in body and "- Answers tersely." in body
    assert (project / FILES[preset]).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("preset", sorted(USER_FILES))
def test_each_new_preset_for_the_user_goes_to_its_hosts_home_file_and_back(setup, preset):
    config, _ = setup
    home = Path.home()
    relative, owned = USER_FILES[preset]
    path = home / relative
    if not owned:  # Windsurf's global rules are the user's own file: ours is a region of it
        path.parent.mkdir(parents=True)
        path.write_bytes(b"My global rules.\n")
    with PersonaStore(config.parent / "m.db") as store:
        store.add("Answers tersely.", topic="style")
    persona(config, *add_args(preset, "--user"))
    persona(config, "render")
    data = path.read_bytes()
    assert b"Answers tersely." in data and b"Bob" not in data
    persona(config, "targets", "remove", preset)
    if owned:
        assert not path.exists() and sorted(p.name for p in home.iterdir()) == [".hermes"]
    else:
        assert path.read_bytes() == b"My global rules.\n"


def test_rules_is_only_for_claude_code(setup):
    config, project = setup
    result = runner.invoke(app, ["-c", str(config), "targets", "add", "codex", "--rules", "--project", str(project)])
    assert result.exit_code == 1 and "--rules is for claude-code only" in result.stderr


def test_a_project_target_beside_the_hosts_user_target_gets_a_name_of_its_own(setup, tmp_path):
    """`persona init` adds the user-level `claude-code` target; a project's then takes its directory's name, and
    a second project another, so no newcomer meets "already exists" and remove names the right one."""
    config, project = setup
    other = tmp_path / "blog"
    other.mkdir()
    persona(config, "targets", "add", "claude-code", "--user")
    first = persona(config, "targets", "add", "claude-code", "--project", str(project))
    assert "added target 'claude-code-project'" in first.stdout
    second = persona(config, "targets", "add", "claude-code", "--project", str(other))
    assert "added target 'claude-code-blog'" in second.stdout
    listed = {target["name"] for target in json.loads(persona(config, "targets", "list", "--json").stdout)}
    assert {"claude-code", "claude-code-project", "claude-code-blog"} <= listed
    persona(config, "targets", "remove", "claude-code-project")
    left = {target["name"] for target in json.loads(persona(config, "targets", "list", "--json").stdout)}
    assert "claude-code-project" not in left and {"claude-code", "claude-code-blog"} <= left
