"""A fact is data to every host's loader (#49): each host module declares what its loader interprets, the render
escapes a fact the host's way (Claude Code's and Gemini CLI's `@path` imports: CommonMark's `\\@`, which neither
imports), and `targets check` reads the files as the host would (no import from an escaped fact, `@~/path` only
from the user's own Claude Code files).

Two projects (the shop for Claude Code, the blog for Gemini CLI and Codex) and two profiles.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.hosts import registry
from pipeline.integrations.claude_hooks import hook_command, install

from .persona_cli import persona, write_config

IMPORTING = "Reads @notes/todo.md first"
HOME_IMPORT = "Keeps @~/secret.md near"
AS_WRITTEN = ("Says {{ name }} and {% raw %}", "Hides <!-- this --> too", "Mails dana@example.com")
BOBS = "Bob reads @notes/bob.md"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


def host(config: Path, where: Path, name: str, code: int = 0) -> dict[str, object]:
    found = json.loads(persona(config, "targets", "check", "--project", str(where), "--json", code=code))
    return next(entry for entry in found if entry.get("host") == name)


def projects(tmp_path: Path) -> tuple[Path, Path]:
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    for where in (shop, blog):
        (where / "notes").mkdir(parents=True)
        (where / "notes" / "todo.md").write_text("SECRET of the project\n")
    (Path.home() / "secret.md").write_text("SECRET of the home\n")
    return shop, blog


def add_facts(config: Path) -> None:
    for index, fact in enumerate((IMPORTING, HOME_IMPORT, *AS_WRITTEN)):
        persona(config, "add", fact, "--topic", f"topic{index}")
    persona(config, "add", BOBS, "--topic", "notes", "--profile", "bob")


def test_each_host_declares_what_its_loader_interprets():
    interprets = {name: found.interprets for name, found in registry.HOSTS.items()}
    assert "at-import" in interprets["claude-code"] and "html-comment" in interprets["claude-code"]
    assert "at-import" in interprets["gemini"] and "at-import" not in interprets["codex"]
    assert all("heading" in syntaxes for name, syntaxes in interprets.items() if name not in ("mcp", "hermes"))


def test_a_fact_holding_at_path_is_escaped_for_claude_code_and_gemini_and_written_as_is_for_codex(config, tmp_path):
    shop, blog = projects(tmp_path)
    persona(config, "targets", "add", "claude-code", "--project", str(shop))
    persona(config, "targets", "add", "gemini", "--project", str(blog))
    persona(config, "targets", "add", "codex", "--project", str(blog))
    add_facts(config)
    persona(config, "render")
    for written in (shop / "CLAUDE.md", blog / "GEMINI.md"):
        text = written.read_text()
        assert "- Reads \\@notes/todo.md first" in text and "- Keeps \\@~/secret.md near" in text
        assert all(f"- {fact}" in text for fact in AS_WRITTEN) and "bob" not in text.lower()
    codex = (blog / "AGENTS.md").read_text()
    assert f"- {IMPORTING}" in codex and f"- {HOME_IMPORT}" in codex
    claude = host(config, shop, "claude-code")
    assert claude["loaded"] == [str((shop / "CLAUDE.md").resolve())]  # nothing imported through a fact
    assert claude["outcome"] == "each fact once"
    gemini = host(config, blog, "gemini")
    assert gemini["loaded"] == [str((blog / "GEMINI.md").resolve())]


def test_the_check_reads_at_path_as_each_host_does(config, tmp_path):
    """A project's CLAUDE.md: `@notes/todo.md` imports, `\\@notes/todo.md` and `@~/secret.md` do not (an import
    outside the project waits for approval); the user's ~/.claude/CLAUDE.md does import `@~/secret.md`. Gemini CLI
    imports no `@~/` path at all."""
    shop, blog = projects(tmp_path)
    (shop / "CLAUDE.md").write_text("Escaped: \\@notes/todo.md, home: @~/secret.md\n")
    (blog / "CLAUDE.md").write_text("Plain: @notes/todo.md\n")
    (blog / "GEMINI.md").write_text("Home: @~/secret.md\n")
    (Path.home() / ".claude").mkdir()
    (Path.home() / ".claude" / "CLAUDE.md").write_text("Mine: @~/secret.md\n")
    for where in (shop, blog):
        persona(config, "targets", "add", "claude-code", "--project", str(where))
    persona(config, "targets", "add", "gemini", "--project", str(blog))
    add_facts(config)
    persona(config, "render")
    user, secret = (Path.home() / ".claude" / "CLAUDE.md").resolve(), (Path.home() / "secret.md").resolve()
    assert host(config, shop, "claude-code")["loaded"] == [str(user), str(secret), str((shop / "CLAUDE.md").resolve())]
    assert host(config, blog, "claude-code")["loaded"] == [
        str(user), str(secret), str((blog / "CLAUDE.md").resolve()), str((blog / "notes" / "todo.md").resolve())]
    assert host(config, blog, "gemini")["loaded"] == [str((blog / "GEMINI.md").resolve())]


def test_an_escaped_fact_in_a_file_and_the_hook_still_counts_twice(config, tmp_path):
    """The file holds `\\@`, the hook the fact as it is: the check knows both are the same fact."""
    shop, blog = projects(tmp_path)
    persona(config, "targets", "add", "claude-code", "--user")
    install(Path.home() / ".claude" / "settings.json", hook_command())  # by hand
    add_facts(config)
    persona(config, "render")
    for where in (shop, blog):
        problems = host(config, where, "claude-code", code=1)["problems"]
        assert len(problems) == 1 and problems[0].startswith("5 facts would arrive twice")  # type: ignore[index]
