"""Personal stays personal (#49): in a git checkout, a project target never changes a file git tracks unless the
user asks for a shared target (--shared). Claude Code's and Copilot's personas go to a file of the host's that git
does not share, listed in the clone's .git/info/exclude; Codex beside a tracked AGENTS.md is refused with one
message naming --shared and --user; a file of ours that git would see as new is listed there too. `git status`
stays clean, in real repositories.

Two projects (the shop, with tracked CLAUDE.md and AGENTS.md; the blog, with none) and two profiles.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .persona_cli import persona, write_config

TEAM = "# Team rules\n\nRun the tests before pushing.\n"
DANA = "Dana prefers terse answers."
BOBS = "Bob prefers long answers."


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True).stdout


def repository(tmp_path: Path, name: str, *tracked: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    git(root, "init", "-q")
    for relative in tracked:
        (root / relative).write_text(TEAM, encoding="utf-8")
    if tracked:
        git(root, "add", *tracked)
        git(root, "commit", "-qm", "team rules")
    return root


def add_facts(config: Path, shop: Path) -> None:
    persona(config, "add", DANA, "--topic", "style")
    persona(config, "add", "Ships the shop on Thursdays.", "--topic", "release", "--project", str(shop))
    persona(config, "add", BOBS, "--topic", "style", "--profile", "bob")


def test_claude_code_beside_a_tracked_claude_md_writes_an_excluded_rules_file_and_git_stays_clean(config, tmp_path):
    shop = repository(tmp_path, "shop", "CLAUDE.md", "AGENTS.md")
    blog = repository(tmp_path, "blog")
    for where in (shop, blog):
        said = persona(config, "targets", "add", "claude-code", "--project", str(where))
        rules = where / ".claude" / "rules" / "persona.md"
        assert f"writing the whole file {rules}" in said
        assert f"{where / 'CLAUDE.md'} is shared through git, so the persona goes in {rules}" in said
        assert "--shared writes" in said
        assert "/.claude/rules/persona.md" in (where / ".git" / "info" / "exclude").read_text().splitlines()
    add_facts(config, shop)
    persona(config, "render")
    for where in (shop, blog):
        assert git(where, "status", "--porcelain") == ""
        assert DANA in (where / ".claude" / "rules" / "persona.md").read_text()
        assert BOBS not in (where / ".claude" / "rules" / "persona.md").read_text()
    assert (shop / "CLAUDE.md").read_text() == TEAM and not (blog / "CLAUDE.md").exists()


def test_codex_beside_a_tracked_agents_md_is_refused_naming_shared_and_user(config, tmp_path):
    shop = repository(tmp_path, "shop", "CLAUDE.md", "AGENTS.md")
    before = config.read_bytes()
    refused = persona(config, "targets", "add", "codex", "--project", str(shop), code=1)
    assert refused.count("\n") == 1 and f"{shop / 'AGENTS.md'} is tracked by git" in refused
    assert f"`persona targets add codex --project {shop} --shared`" in refused
    assert "`persona targets add codex --user` keeps them in your home" in refused
    assert config.read_bytes() == before
    shared = persona(config, "targets", "add", "codex", "--project", str(shop), "--shared")
    assert f"writing a region of {shop / 'AGENTS.md'}" in shared
    add_facts(config, shop)
    persona(config, "render")
    assert DANA in (shop / "AGENTS.md").read_text()  # the user asked for it: the team's file carries it
    assert git(shop, "status", "--porcelain") == " M AGENTS.md\n"


def test_a_new_file_of_ours_in_a_checkout_is_excluded_for_every_host(config, tmp_path):
    """The blog tracks nothing of the hosts': Codex's and Gemini CLI's new files, Cursor's and Copilot's rules are
    each listed in .git/info/exclude; `git status` stays clean. A directory outside git is as before."""
    blog = repository(tmp_path, "blog")
    (blog / "README.md").write_text("blog\n")
    git(blog, "add", "README.md")
    git(blog, "commit", "-qm", "readme")
    for preset in ("codex", "gemini", "cursor", "copilot"):
        persona(config, "targets", "add", preset, "--project", str(blog))
    add_facts(config, blog)
    persona(config, "render")
    assert git(blog, "status", "--porcelain") == ""
    assert set((blog / ".git" / "info" / "exclude").read_text().splitlines()) >= {
        "/AGENTS.md", "/GEMINI.md", "/.cursor/rules/persona.mdc", "/.github/instructions/persona.instructions.md"}
    plain = tmp_path / "plain"
    plain.mkdir()
    assert f"writing a region of {plain / 'CLAUDE.md'}" in persona(config, "targets", "add", "claude-code",
                                                                     "--project", str(plain))


def test_an_existing_region_in_a_tracked_file_moves_on_the_next_render_with_a_notice(config, tmp_path):
    """A target added before #49 (a region of the shop's tracked CLAUDE.md, as `--shared` writes it today, without
    the setting that says the user asked): `persona render` takes the region out, gives the target the rules file,
    lists it in .git/info/exclude and says so; git status is clean again. The blog's target, which the user asked
    to share, stays; Codex's region in a tracked AGENTS.md is a warning naming --user."""
    shop = repository(tmp_path, "shop", "CLAUDE.md", "AGENTS.md")
    blog = repository(tmp_path, "blog", "CLAUDE.md")
    persona(config, "targets", "add", "claude-code", "--project", str(shop), "--shared", "--name", "shop")
    persona(config, "targets", "add", "codex", "--project", str(shop), "--shared", "--name", "shop-codex")
    persona(config, "targets", "add", "claude-code", "--project", str(blog), "--shared", "--name", "blog")
    add_facts(config, shop)
    assert DANA in (shop / "CLAUDE.md").read_text()
    text = config.read_text()
    config.write_text(text.replace("shared: true", "shared: false", 2))  # the shop's two, as older releases wrote
    said = persona(config, "render")
    rules = shop / ".claude" / "rules" / "persona.md"
    assert f"notice: {config}: removed target 'shop'; its region left {shop / 'CLAUDE.md'}" in said
    assert f"is tracked by git, so target 'shop' now writes {rules}, which git does not share" in said
    assert "warning: target 'shop-codex' writes a region of" in said and "`persona targets add codex --user`" in said
    assert (shop / "CLAUDE.md").read_text() == TEAM and DANA in rules.read_text()
    assert git(shop, "status", "--porcelain") == " M AGENTS.md\n"  # Codex's: warned, not moved
    assert DANA in (blog / "CLAUDE.md").read_text()  # asked for: stays
    persona(config, "targets", "remove", "shop-codex")
    assert git(shop, "status", "--porcelain") == ""


@pytest.mark.parametrize("write", ["add", "replace", "forget"])
def test_the_render_after_a_write_moves_an_older_target_out_of_a_tracked_file_too(config, tmp_path, write):
    """#49: not only `persona render`: the render a write does (add, replace, forget) moves the shop's older target
    first, with the notice, and writes the rules file; the blog's, which the user asked to share, stays."""
    shop = repository(tmp_path, "shop", "CLAUDE.md")
    blog = repository(tmp_path, "blog", "CLAUDE.md")
    persona(config, "targets", "add", "claude-code", "--project", str(shop), "--shared", "--name", "shop")
    persona(config, "targets", "add", "claude-code", "--project", str(blog), "--shared", "--name", "blog")
    persona(config, "add", DANA, "--topic", "style")
    old = persona(config, "add", "Ships on Fridays.", "--topic", "release")
    config.write_text(config.read_text().replace("shared: true", "shared: false", 1))  # the shop's, as before #49
    said = {"add": lambda: persona(config, "add", "Reviews on Mondays.", "--topic", "review"),
            "replace": lambda: persona(config, "replace", old.split("#")[1].split()[0], "Ships on Thursdays."),
            "forget": lambda: persona(config, "forget", old.split("#")[1].split()[0])}[write]()
    rules = shop / ".claude" / "rules" / "persona.md"
    assert f"notice: {config}: removed target 'shop'; its region left {shop / 'CLAUDE.md'}" in said
    assert (shop / "CLAUDE.md").read_text() == TEAM and DANA in rules.read_text()
    assert ("Ships on Fridays." in rules.read_text()) == (write == "add")
    assert git(shop, "status", "--porcelain") == ""
    assert DANA in (blog / "CLAUDE.md").read_text()  # asked for: stays


def test_a_user_file_git_tracks_in_a_home_or_a_dotfiles_repository_is_refused_unless_shared(config, tmp_path):
    """#49: a user-level file is personal too. ~/.claude/CLAUDE.md tracked in a home kept in git, and
    ~/.codex/AGENTS.md a symlink into a dotfiles repository that tracks it: each refused in one line naming
    --shared, nothing changed; --shared writes it. A new file in a home kept in git is listed in its exclude."""
    home = Path(os.environ["HOME"])
    claude = home / ".claude" / "CLAUDE.md"
    claude.parent.mkdir(parents=True)
    claude.write_text(TEAM, encoding="utf-8")
    git(home, "init", "-q")
    git(home, "add", ".claude/CLAUDE.md")
    git(home, "commit", "-qm", "dotfiles")
    dotfiles = repository(tmp_path, "dotfiles", "AGENTS.md")
    (home / ".codex").mkdir()
    (home / ".codex" / "AGENTS.md").symlink_to(dotfiles / "AGENTS.md")
    before = config.read_bytes()
    refused = persona(config, "targets", "add", "claude-code", "--user", code=1)
    assert refused.count("\n") == 1 and f"{claude} is tracked by git" in refused
    assert "`persona targets add claude-code --user --shared`" in refused
    linked = persona(config, "targets", "add", "codex", "--user", code=1)
    assert f"{dotfiles / 'AGENTS.md'} in the git repository {dotfiles} is tracked by git" in linked
    assert config.read_bytes() == before
    persona(config, "targets", "add", "codex", "--user", "--shared")
    added = persona(config, "targets", "add", "gemini", "--user")  # ~/.gemini/GEMINI.md: new, in the home's checkout
    assert f"{home / '.git' / 'info' / 'exclude'} lists {home / '.gemini' / 'GEMINI.md'}" in added
    persona(config, "add", DANA, "--topic", "style")
    assert DANA in (dotfiles / "AGENTS.md").read_text() and DANA in (home / ".gemini" / "GEMINI.md").read_text()
    # Nothing tracked changed, and no file of ours shows; the symlink is the user's own.
    assert ".claude" not in git(home, "status", "--porcelain") and ".gemini" not in git(home, "status", "--porcelain")
    assert git(home, "status", "--porcelain", "--untracked-files=no") == ""
    config.write_text(config.read_text().replace("shared: true", "shared: false"))  # as before #49
    assert "warning: target 'codex' writes a region of" in persona(config, "render")
