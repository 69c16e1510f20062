"""Each fact once, whatever the order the user set things up in (#49): `targets add` and `persona init` beside our
session-start hook say so and add nothing unless the user chooses the file (--instead-of-hook), as `hooks install`
beside a target already did; and `targets check` counts a fact the user wrote in their own loaded file beside our
region as twice.

Two projects (the shop, the blog) and two profiles (bob's facts are never the default profile's).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .persona_cli import persona, write_config

TERSE = "Answers tersely."
BOBS = "Indents with tabs."


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


def project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def claude(config: Path, where: Path, code: int = 0) -> dict[str, object]:
    found = json.loads(persona(config, "targets", "check", "--project", str(where), "--json", code=code))
    return next(entry for entry in found if entry.get("host") == "claude-code")


def add_facts(config: Path, shop: Path, blog: Path) -> None:
    persona(config, "add", TERSE, "--topic", "style")
    persona(config, "add", "Ships the shop on Thursdays.", "--topic", "release", "--project", str(shop))
    persona(config, "add", "Writes the blog in British English.", "--topic", "spelling", "--project", str(blog))
    persona(config, "add", BOBS, "--topic", "style", "--profile", "bob")


def test_targets_add_beside_the_users_hook_is_refused_and_instead_of_hook_switches(config, tmp_path):
    """The hook first, then a target: refused in both projects and for the user's file, naming the hook and the
    option, with the config and settings.json byte for byte as they were; --instead-of-hook removes the hook and
    adds the target, and the check says each fact once."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    add_facts(config, shop, blog)
    persona(config, "hooks", "install", "claude-code")
    settings = Path.home() / ".claude" / "settings.json"
    before = config.read_bytes(), settings.read_bytes()
    for args in (["--project", str(shop)], ["--project", str(blog)], ["--user"], ["--rules", "--project", str(shop)]):
        refused = persona(config, "targets", "add", "claude-code", *args, code=1)
        assert f"Claude Code already gets the persona from the session-start hook in {settings}" in refused
        assert f"`persona targets add claude-code {' '.join(args)} --instead-of-hook`" in refused
        assert "keep the hook and skip the target" in refused
        assert (config.read_bytes(), settings.read_bytes()) == before
    assert not (shop / "CLAUDE.md").exists()
    switched = persona(config, "targets", "add", "claude-code", "--project", str(shop), "--instead-of-hook")
    assert f"{settings}: removed the persona hook" in switched and "added target 'claude-code-rules'" in switched
    persona(config, "render")
    assert claude(config, shop)["outcome"] == "each fact once" and claude(config, shop)["hooks"] == []


def test_a_projects_own_hook_refuses_that_projects_target_and_the_users_not_the_other_projects(config, tmp_path):
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    add_facts(config, shop, blog)
    persona(config, "targets", "add", "gemini", "--project", str(blog))  # the blog is a project we know
    persona(config, "hooks", "install", "claude-code", "--project", str(blog))
    blog_hook = blog / ".claude" / "settings.json"
    assert "added target 'claude-code-rules'" in persona(config, "targets", "add", "claude-code", "--project",
                                                         str(shop))
    refused = persona(config, "targets", "add", "claude-code", "--project", str(blog), code=1)
    assert f"session-start hook in {blog_hook}" in refused
    assert f"session-start hook in {blog_hook}" in persona(config, "targets", "add", "claude-code", "--user", code=1)
    persona(config, "render")
    assert claude(config, shop)["outcome"] == "each fact once"
    assert claude(config, blog)["outcome"] == "each fact once"


def test_init_beside_the_users_hook_adds_no_claude_code_target_unless_asked(tmp_path):
    """init with Claude Code's and Codex's folders and our hook installed: Codex gets its target, Claude Code none
    (the plan says why and how to switch); the line counts every target init rendered. `init --instead-of-hook`
    removes the hook and adds the target."""
    home = Path.home()
    (home / ".claude").mkdir()
    (home / ".codex").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("# Mine\n\nKeep lines short.\n")
    persona(None, "hooks", "install", "claude-code")
    settings = home / ".claude" / "settings.json"
    persona(None, "add", TERSE, "--topic", "style")
    persona(None, "add", BOBS, "--topic", "style", "--profile", "bob")
    done = persona(None, "init", "--yes")
    assert (f"Claude Code gets the persona from the session-start hook in {settings}: no target added for "
            f"{home / '.claude' / 'CLAUDE.md'}, so each fact arrives once (`persona init --instead-of-hook` removes "
            "the hook and adds the target)") in done
    assert "add target 'codex'" in done and "add target 'claude-code'" not in done
    assert (home / ".claude" / "CLAUDE.md").read_text() == "# Mine\n\nKeep lines short.\n"
    codex = (home / ".codex" / "AGENTS.md").read_text()
    assert TERSE in codex and BOBS not in codex
    assert "rendered 2 targets" in done  # codex's region and the persona file
    switched = persona(None, "init", "--yes", "--instead-of-hook")
    assert f"{settings}: removed the persona hook" in switched and "add target 'claude-code'" in switched
    assert TERSE in (home / ".claude" / "CLAUDE.md").read_text()
    assert not settings.exists()  # install made it: remove gives it back as it was, absent


def test_a_fact_the_user_wrote_in_their_own_loaded_file_beside_our_region_counts_twice(config, tmp_path,
                                                                                       monkeypatch):
    """Our ~/.claude/CLAUDE.md region holds 'Answers tersely.'; the shop's own CLAUDE.md says it too, as a bullet of
    the user's: Claude Code reads it twice, and the check says so (exit 1). The blog's own file does not, and a line
    of bob's fact in it is no fact of the default profile's."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    (shop / "CLAUDE.md").write_text("# Shop\n\n- answers tersely\n- Runs the tests first.\n")
    (blog / "CLAUDE.md").write_text(f"# Blog\n\n- {BOBS}\n")
    persona(config, "targets", "add", "claude-code", "--user")
    add_facts(config, shop, blog)
    persona(config, "render")
    user = (Path.home() / ".claude" / "CLAUDE.md").resolve()
    assert claude(config, shop, code=1)["problems"] == [
        f"1 fact would arrive twice: in your own {(shop / 'CLAUDE.md').resolve()} and in {user} (target "
        "claude-code) (take it out of your file, or `persona forget` it)"]
    assert claude(config, blog)["outcome"] == "each fact once"
    monkeypatch.chdir(shop)
    assert "problem: 1 fact would arrive twice: in your own" in persona(config, "status")
