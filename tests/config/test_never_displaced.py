"""Claude Code treats a CLAUDE.md that is empty, or holds only HTML comments, as absent, and then loads the
project's AGENTS.md (#49, seen in the real Claude Code 2.1.332): the load model knows it, `targets add` never
writes the region that would hide the user's AGENTS.md, and `targets check` lists what the host sends, in its
order (the rules folder before AGENTS.md).

Two projects (one with an empty CLAUDE.md, one with a comment-only one) and two profiles (bob's facts never reach
the default profile's files).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .persona_cli import persona, write_config

THEIRS = "# House rules\n\n" + "".join(f"- Rule {n}: keep the build green.\n" for n in range(732))
COMMENT_ONLY = "<!-- our notes go here, one day -->\n\n"
BOBS = "Bob's own: tabs, never spaces."


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


def project(tmp_path: Path, name: str, claude_md: str) -> tuple[Path, Path, Path]:
    """A git repository holding the user's 732-line AGENTS.md and a CLAUDE.md Claude Code reads as no file."""
    root = tmp_path / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_text(THEIRS, encoding="utf-8")
    (root / "CLAUDE.md").write_text(claude_md, encoding="utf-8")
    return root, root / "AGENTS.md", root / "CLAUDE.md"


def claude(config: Path, where: Path, code: int = 0) -> dict[str, object]:
    found = json.loads(persona(config, "targets", "check", "--project", str(where), "--json", code=code))
    return next(entry for entry in found if entry.get("host") == "claude-code")


def add_facts(config: Path, shop: Path, blog: Path) -> None:
    persona(config, "add", "Answers tersely.", "--topic", "style")
    persona(config, "add", "Ships the shop on Thursdays.", "--topic", "release", "--project", str(shop))
    persona(config, "add", "Writes the blog in British English.", "--topic", "spelling", "--project", str(blog))
    persona(config, "add", BOBS, "--topic", "style", "--profile", "bob")


@pytest.mark.parametrize("claude_md", ["", COMMENT_ONLY, "\n<!--\n a comment\n over lines -->\n"],
                         ids=["empty", "comment", "multi-line-comment"])
def test_a_blank_claude_md_keeps_the_users_agents_md_loading_and_the_persona_goes_to_the_rules(
        config, tmp_path, claude_md):
    shop, shop_agents, shop_claude = project(tmp_path, "shop", claude_md)
    blog, blog_agents, blog_claude = project(tmp_path, "blog", COMMENT_ONLY)
    said = persona(config, "targets", "add", "claude-code", "--project", str(shop))
    rules = shop / ".claude" / "rules" / "persona.md"
    assert f"writing the whole file {rules}" in said
    assert f"{shop_agents} stays as it is and Claude Code still loads it" in said
    assert "writing the whole file" in persona(config, "targets", "add", "claude-code", "--project", str(blog))
    add_facts(config, shop, blog)
    persona(config, "render")
    for agents, claude_file, text in ((shop_agents, shop_claude, claude_md), (blog_agents, blog_claude, COMMENT_ONLY)):
        assert agents.read_text() == THEIRS and claude_file.read_text() == text  # neither file touched
    assert "Ships the shop on Thursdays." in rules.read_text() and BOBS not in rules.read_text()
    for where, agents in ((shop, shop_agents), (blog, blog_agents)):
        found = claude(config, where)
        assert [(f["path"], f["part"]) for f in found["files"]] == [  # type: ignore[union-attr]
            (str((where / ".claude" / "rules" / "persona.md").resolve()), "project rules"),
            (str(agents.resolve()), "project file, in place of CLAUDE.md or .claude/CLAUDE.md")]
        assert found["outcome"] == "each fact once"


def test_a_region_in_a_comment_only_claude_md_hides_agents_md_and_the_check_fails(config, tmp_path):
    """A target added while the project had no AGENTS.md: once the user writes one, Claude Code reads our region in
    CLAUDE.md (their comment counts as nothing) instead of it. The check names both and exits 1; the other project,
    whose CLAUDE.md holds a line of the user's, is their choice and no problem."""
    shop = tmp_path / "shop"
    blog = tmp_path / "blog"
    for where in (shop, blog):
        where.mkdir()
        (where / "CLAUDE.md").write_text(COMMENT_ONLY, encoding="utf-8")
        persona(config, "targets", "add", "claude-code", "--project", str(where))
    (blog / "CLAUDE.md").write_text(COMMENT_ONLY + "Use the blog's style guide.\n", encoding="utf-8")
    add_facts(config, shop, blog)
    persona(config, "render")
    for where in (shop, blog):
        (where / "AGENTS.md").write_text(THEIRS, encoding="utf-8")
    problems = claude(config, shop, code=1)["problems"]
    assert problems == [
        f"Claude Code no longer loads your {(shop / 'AGENTS.md').resolve()}: {(shop / 'CLAUDE.md').resolve()} holds "
        "target 'claude-code' and the host reads CLAUDE.md or .claude/CLAUDE.md in its place; add a line @AGENTS.md "
        "to CLAUDE.md, or `persona targets remove` it and `persona targets add claude-code --rules --project "
        f"{shop.resolve()}`"]
    assert claude(config, blog)["problems"] == []


def test_a_blank_claude_md_is_no_file_to_the_check_and_agents_md_loads_in_its_place(config, tmp_path):
    """No target in the project, only the user-level file: the check lists what Claude Code loads there, a blank
    CLAUDE.md left out and AGENTS.md in its place; a CLAUDE.md with a line of text is loaded instead."""
    shop, shop_agents, _ = project(tmp_path, "shop", COMMENT_ONLY)
    blog, blog_agents, blog_claude = project(tmp_path, "blog", "Blog notes.\n")
    persona(config, "targets", "add", "claude-code", "--user")
    add_facts(config, shop, blog)
    persona(config, "render")
    user = (Path.home() / ".claude" / "CLAUDE.md").resolve()
    assert claude(config, shop)["loaded"] == [str(user), str(shop_agents.resolve())]
    assert claude(config, blog)["loaded"] == [str(user), str(blog_claude.resolve())]
    assert str(blog_agents.resolve()) not in claude(config, blog)["loaded"]  # type: ignore[operator]
