"""Per host and project, everything the host loads (#39): `targets check [--project DIR]`, `status`, `targets add`
beside a user's AGENTS.md, and `hooks install` over a file that already reaches the host.

Claude Code's load model is the one tests/hosts/test_claude_code.py measured in the real Claude Code: CLAUDE.md,
else AGENTS.md, .claude/rules beside it, ~/.claude/CLAUDE.md, `@path` imports, and the SessionStart hook.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.integrations.claude_hooks import hook_command, install

from .persona_cli import persona, write_config

THEIRS = "# House rules\n\nRun `make check` before every commit.\n"
GLOBAL_FACT = "Answers tersely."


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


def project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def hosts(config: Path, where: Path, code: int = 0) -> dict[str, dict[str, object]]:
    """`targets check --project WHERE --json`: the host entries, by host."""
    found = json.loads(persona(config, "targets", "check", "--project", str(where), "--json", code=code))
    return {str(entry["host"]): entry for entry in found if "host" in entry}


def facts(config: Path, shop: Path, blog: Path) -> None:
    persona(config, "add", GLOBAL_FACT, "--topic", "style")
    persona(config, "add", "Ships the shop on Thursdays.", "--topic", "release", "--project", str(shop))
    persona(config, "add", "Writes the blog in British English.", "--topic", "spelling", "--project", str(blog))


def test_claude_code_in_a_repo_with_agents_md_gets_the_rules_file_and_keeps_loading_agents_md(config, tmp_path):
    """The shop has only the user's AGENTS.md: `targets add claude-code` writes .claude/rules/persona.md and says
    why; the blog has a CLAUDE.md of the user's: its region goes there, as before."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    agents = write(shop / "AGENTS.md", THEIRS)
    write(blog / "CLAUDE.md", THEIRS)
    said = persona(config, "targets", "add", "claude-code", "--shared", "--project", str(shop))
    rules = shop / ".claude" / "rules" / "persona.md"
    assert f"writing the whole file {rules}" in said
    assert f"{agents} stays as it is and Claude Code still loads it" in said and "no CLAUDE.md" in said
    assert f"writing a region of {blog / 'CLAUDE.md'}" in persona(config, "targets", "add", "claude-code",
                                                                   "--shared", "--project", str(blog))
    facts(config, shop, blog)
    persona(config, "render")
    assert agents.read_text() == THEIRS and not (shop / "CLAUDE.md").exists()
    claude = hosts(config, shop)["claude-code"]
    assert [(f["path"], f["part"], f["target"]) for f in claude["files"]] == [  # type: ignore[union-attr]
        (str(rules.resolve()), "project rules", "claude-code-rules"),  # Claude Code sends its rules first
        (str(agents.resolve()), "project file, in place of CLAUDE.md or .claude/CLAUDE.md", None)]
    assert claude["outcome"] == "each fact once" and not claude["cut"]
    blogs = hosts(config, blog)["claude-code"]
    assert [f["target"] for f in blogs["files"]] == ["claude-code"]  # type: ignore[union-attr]


def test_a_claude_md_of_ours_that_displaces_the_users_agents_md_fails_the_check(config, tmp_path):
    """A CLAUDE.md target added before the user wrote AGENTS.md: Claude Code now reads our CLAUDE.md and not their
    AGENTS.md. The check exits 1 naming both; a line @AGENTS.md in CLAUDE.md brings it back (an import). A
    CLAUDE.md with the user's own text is their choice: AGENTS.md is left out of the load set, with no problem."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    for where in (shop, blog):
        persona(config, "targets", "add", "claude-code", "--shared", "--project", str(where))
    facts(config, shop, blog)
    persona(config, "render")
    agents = write(shop / "AGENTS.md", THEIRS)
    claude = hosts(config, shop, code=1)["claude-code"]
    assert claude["problems"] == [
        f"Claude Code no longer loads your {agents.resolve()}: {(shop / 'CLAUDE.md').resolve()} holds target "
        f"'claude-code' and the host reads CLAUDE.md or .claude/CLAUDE.md in its place; add a line @AGENTS.md to "
        f"CLAUDE.md, or `persona targets remove` it and `persona targets add claude-code --rules --project "
        f"{agents.resolve().parent}`"]
    assert hosts(config, blog)["claude-code"]["outcome"] == "each fact once"  # the other project is fine
    assert "problem: Claude Code no longer loads your" in persona(config, "status")
    claude_md = shop / "CLAUDE.md"
    claude_md.write_text("@AGENTS.md\n" + claude_md.read_text())
    claude = hosts(config, shop)["claude-code"]
    assert [f["part"] for f in claude["files"]] == ["project file", "imported by CLAUDE.md"]  # type: ignore[union-attr]
    write(blog / "AGENTS.md", THEIRS)
    (blog / "CLAUDE.md").write_text("The blog's own notes.\n" + (blog / "CLAUDE.md").read_text())
    assert hosts(config, blog)["claude-code"]["problems"] == []


def test_the_load_set_lists_user_files_rules_and_imports_in_claude_codes_order(config, tmp_path):
    shop = project(tmp_path, "shop")
    home = Path.home()
    user = write(home / ".claude" / "CLAUDE.md", "Mine everywhere. See @~/notes/more.md, not `@ignored.md`.\n")
    more = write(home / "notes" / "more.md", "More of mine.\n")
    write(home / "ignored.md", "never imported: in a code span\n")
    user_rule = write(home / ".claude" / "rules" / "style.md", "Keep lines short.\n")
    own = write(shop / "CLAUDE.md", "```\n@not-an-import.md\n```\nThe guide: @docs/guide.md\n")
    write(shop / "not-an-import.md", "inside a code block\n")
    guide = write(shop / "docs" / "guide.md", "The guide.\n")
    agents = write(shop / "AGENTS.md", THEIRS)
    rule = write(shop / ".claude" / "rules" / "team.md", "Team rule.\n")
    persona(config, "targets", "add", "claude-code", "--shared", "--project", str(shop))
    persona(config, "add", GLOBAL_FACT, "--topic", "style")
    persona(config, "render")
    claude = hosts(config, shop)["claude-code"]
    assert [(Path(str(f["path"])), f["part"]) for f in claude["files"]] == [  # type: ignore[union-attr]
        (user.resolve(), "user file"), (more.resolve(), "imported by CLAUDE.md"), (user_rule.resolve(), "user rules"),
        (own.resolve(), "project file"), (guide.resolve(), "imported by CLAUDE.md"), (rule.resolve(), "project rules")]
    assert str(agents.resolve()) not in claude["loaded"]  # type: ignore[operator]
    text = persona(config, "targets", "check", "--project", str(shop))
    assert "Claude Code documents no limit on them" in text
    assert "the host drops HTML comments (our region's markers)" in text


def test_a_fact_in_the_users_file_and_the_hook_would_arrive_twice_and_the_check_says_where(config, tmp_path):
    """`persona init`'s user-level file plus the SessionStart hook: each global fact twice, in every project.
    The check exits 1 naming both, status shows the same line; the hook alone is each fact once."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    persona(config, "targets", "add", "claude-code", "--user")
    settings = Path.home() / ".claude" / "settings.json"
    install(settings, hook_command())  # by hand: `hooks install` and `targets add` each refuse the other (#49)
    facts(config, shop, blog)
    persona(config, "render")
    user = (Path.home() / ".claude" / "CLAUDE.md").resolve()
    twice = (f"1 fact would arrive twice: in {user} (target claude-code) and in the SessionStart hook "
             f"({settings})")
    for where in (shop, blog):
        claude = hosts(config, where, code=1)["claude-code"]
        assert claude["problems"] == [twice] and claude["hooks"] == [f"the SessionStart hook ({settings})"]
    assert f"problem: {twice}" in persona(config, "status")
    persona(config, "hooks", "remove", "claude-code")
    persona(config, "targets", "add", "claude-code", "--shared", "--project", str(shop))  # the shop alone
    persona(config, "add", f"{GLOBAL_FACT} Always, in the shop.", "--topic", "tone", "--project", str(shop))
    persona(config, "render")
    assert hosts(config, shop)["claude-code"]["outcome"] == "each fact once"  # one fact inside another is not it
    persona(config, "targets", "remove", "claude-code")
    assert "claude-code" not in hosts(config, blog)


def test_hooks_install_over_a_file_that_reaches_claude_code_says_so_and_offers_the_switch(config, tmp_path):
    """The shop's own file reaches Claude Code in the shop, not in the blog: a hook for the blog installs, one for
    the shop is refused naming the file; --instead-of-targets removes the target and installs the hook."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    write(shop / "CLAUDE.md", THEIRS)
    persona(config, "targets", "add", "claude-code", "--shared", "--project", str(shop))
    facts(config, shop, blog)
    persona(config, "render")
    assert "added the SessionStart hook" in persona(config, "hooks", "install", "claude-code", "--project", str(blog))
    refused = persona(config, "hooks", "install", "claude-code", "--project", str(shop), code=1)
    assert f"already gets the persona from {(shop / 'CLAUDE.md').resolve()} (target claude-code)" in refused
    assert f"`persona hooks install claude-code --project {shop} --instead-of-targets`" in refused
    assert "keep the file and skip the hook" in refused
    assert not (shop / ".claude" / "settings.json").exists()
    switched = persona(config, "hooks", "install", "claude-code", "--project", str(shop), "--instead-of-targets")
    assert "removed target 'claude-code'" in switched and "added the SessionStart hook" in switched
    assert (shop / "CLAUDE.md").read_text() == THEIRS
    assert hosts(config, shop)["claude-code"]["outcome"] == "each fact once"


def test_a_user_level_hook_is_refused_beside_a_user_level_file(config, tmp_path):
    persona(config, "targets", "add", "claude-code", "--user")  # not rendered yet: it will reach the host
    refused = persona(config, "hooks", "install", "claude-code", code=1)
    assert f"{(Path.home() / '.claude' / 'CLAUDE.md').resolve()} (target claude-code)" in refused
    assert not (Path.home() / ".claude" / "settings.json").exists()


def test_codex_cutting_the_users_own_agents_md_is_a_warning_naming_the_file(config, tmp_path):
    """Our region goes first in AGENTS.md (Codex cuts from the end), so 32 KiB cut the user's own text: said in
    bytes, as a warning; the other project's short AGENTS.md has none."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    line = "- House rule: keep the build green and every test fast.\n"
    long_agents = write(shop / "AGENTS.md", line * (40_000 // len(line)))
    write(blog / "AGENTS.md", THEIRS)
    for where in (shop, blog):
        persona(config, "targets", "add", "codex", "--project", str(where))
    facts(config, shop, blog)
    persona(config, "render")
    codex = hosts(config, shop)["codex"]
    size = long_agents.stat().st_size
    [loaded] = codex["files"]  # type: ignore[misc]
    assert loaded["size"] == size and loaded["target"] == "codex" and loaded["ours"] > 0
    assert loaded["cut"] == f"cut after 32,768 bytes: {size - 32_768:,} of yours and 0 of ours not loaded"
    assert codex["warnings"] == [f"warning: Codex cuts your own text: {long_agents.resolve()} after 32,768 bytes; "
                                 f"{size - 32_768:,} bytes of yours never reach it"]
    assert codex["measures"] == [f"{size:,} of 32,768 bytes for the whole chain"]
    assert hosts(config, blog)["codex"]["warnings"] == []
    assert "warning: Codex cuts your own text" in persona(config, "status")


def test_a_per_file_limit_cuts_each_file_and_says_whose_text_is_past_it(config, tmp_path):
    """Copilot code review's 4,000 characters a file: the shop's long instructions put ours and some of theirs past
    it (our region goes at the end); the blog's short file is whole."""
    shop, blog = project(tmp_path, "shop"), project(tmp_path, "blog")
    long_file = write(shop / ".github" / "copilot-instructions.md", "é" * 3_900 + "\n")
    write(blog / ".github" / "copilot-instructions.md", THEIRS)
    for where in (shop, blog):
        persona(config, "targets", "add", "copilot", "--shared", "--project", str(where))
    facts(config, shop, blog)
    persona(config, "render")
    copilot = hosts(config, shop, code=1)["copilot"]
    [loaded] = copilot["files"]  # type: ignore[misc]
    size = len(long_file.read_text(encoding="utf-8"))
    assert loaded["size"] == size and loaded["yours"] == size - loaded["ours"]
    assert loaded["cut"] == f"cut after 4,000 characters: 0 of yours and {size - 4_000:,} of ours not loaded"
    assert copilot["measures"] == [f"largest file {size:,} of 4,000 characters a file"] and copilot["warnings"] == []
    assert hosts(config, blog)["copilot"]["files"][0]["cut"] == ""  # type: ignore[index]
