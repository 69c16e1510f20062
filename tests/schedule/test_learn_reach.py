"""Each learned fact once per host (issue 53, point 2): a fact learned from a host's own memory is left out of that
host's files (it loads that memory itself) and reaches every other host; one learned from a project's memory reaches
the others in that project only. Through the CLI (`persona learn`, `render`, `explain`), both backends, two profiles
and two projects."""

from __future__ import annotations

import os
import re
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import write
from ..stages.test_scopes import repository

METRIC, TOX, HUGO = "Prefers metric units.", "Runs the tests with tox.", "Deploys with hugo."


def cli(database, config: Path, *args: str):
    where = ["--db", str(database.target), "-c", str(config), "--set", "store.profile=alice"]
    return CliRunner().invoke(app, [*where, "--set", f"injection.file={config.parent / 'p-{profile}.md'}", *args])


def claude_memory(home: Path, project: Path, text: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(project))
    return write(home / ".claude" / "projects" / slug / "memory" / "MEMORY.md", text)


def learned_world(database, tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """Gemini CLI's model saved METRIC in its global memory, Claude Code's TOX in project a's; alice learned both.
    Every host's user file and project a's and b's files are targets."""
    home, config = Path(os.environ["HOME"]), write(tmp_path / "persona.yaml", "")
    projects = {name: repository(tmp_path / name, f"git@github.com:me/{name}.git") for name in ("a", "b")}
    gemini_md = write(home / ".gemini" / "GEMINI.md", "# Mine\n\n- Use 4 spaces.\n")
    assert cli(database, config, "learn", "-p", "alice").exit_code == 0  # the first learn notes the user's lines
    gemini_md.write_text(gemini_md.read_text() + f"\n## Gemini Added Memories\n- {METRIC}\n")
    claude_memory(home, projects["a"], f"- {TOX}\n")
    claude_memory(home, projects["b"], f"- {HUGO}\n")
    assert cli(database, config, "add", "Answers tersely.", "--topic", "style", "-p", "bob").exit_code == 0
    done = cli(database, config, "learn", "-p", "alice")
    assert done.exit_code == 0 and "learned 3 new facts" in done.output, done.output
    for preset in ("gemini", "codex", "claude-code"):
        assert cli(database, config, "targets", "add", preset, "--user", "--name", f"{preset}-user").exit_code == 0
        for name, project in projects.items():
            added = cli(database, config, "targets", "add", preset, "--shared", "--project", str(project),
                        "--name", f"{preset}-{name}")
            assert added.exit_code == 0, added.output
    rendered = cli(database, config, "render")
    assert rendered.exit_code == 0, rendered.output
    return config, projects


def shows(path: Path, profile: str = "alice") -> set[str]:
    text = path.read_text()
    found = re.search(rf"<!-- persona-tier:begin profile={profile} -->\n(.*?)<!-- persona-tier:end", text, re.S)
    return {fact for fact in (METRIC, TOX, HUGO) if found and fact in found.group(1)}


def test_a_learned_fact_reaches_every_other_host_and_never_its_own(database, tmp_path):
    _, projects = learned_world(database, tmp_path)
    home = Path(os.environ["HOME"])
    assert shows(home / ".gemini" / "GEMINI.md") == set()  # Gemini CLI loads its own memory: not twice
    assert shows(home / ".codex" / "AGENTS.md") == {METRIC}
    assert shows(home / ".claude" / "CLAUDE.md") == {METRIC}
    # a project's memory reaches the other hosts in that project only, and not Claude Code, which saved it
    assert shows(projects["a"] / "AGENTS.md") == {TOX} and shows(projects["b"] / "AGENTS.md") == {HUGO}
    assert shows(projects["a"] / "GEMINI.md") == {TOX} and shows(projects["b"] / "GEMINI.md") == {HUGO}
    claude_a = next((projects["a"] / name) for name in ("CLAUDE.md", ".claude/rules/persona.md")
                    if (projects["a"] / name).exists())
    assert TOX not in claude_a.read_text() and HUGO not in claude_a.read_text()
    listed = cli(database, tmp_path / "persona.yaml", "list", "-p", "bob")
    assert "Answers tersely." in listed.output and not {METRIC, TOX, HUGO} & set(listed.output.split())
    assert all(fact not in listed.output for fact in (METRIC, TOX, HUGO))  # alice's learned facts are alice's


def test_explain_says_why_a_host_does_not_get_what_it_saved(database, tmp_path):
    config, _ = learned_world(database, tmp_path)
    explained = cli(database, config, "explain", "--target", "gemini-user")
    assert explained.exit_code == 0, explained.output
    assert "learned from host gemini's own memory, which that host loads itself" in explained.output
    assert "learned from host" not in cli(database, config, "explain", "--target", "codex-user").output
