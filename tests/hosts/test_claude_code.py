"""The real Claude Code (`claude -p`) reads what our presets and our SessionStart hook give it, once.

Everything is checked in the requests the fake model received. Claude Code 2.1.332 quotes each CLAUDE.md
whole in the first user message, with HTML comments (our region's marker lines) taken out, and puts a
SessionStart hook's additionalContext in a system turn of its own.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .facts import (
    FACTS,
    OWN_PROJECT,
    OWN_USER,
    add_facts,
    add_scoped_facts,
    assert_each_fact_once,
    assert_intact,
    assert_scoped_facts,
    main_request,
    user_and_project_regions,
    write_own,
)
from .fake_model import FakeModel, Request
from .hosts import CLAUDE, PERSONA, ClaudeSession, Host, base_env, claude_hook, persona, run_claude

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("host", [CLAUDE], ids=str, indirect=True)]
HOOK_LIMIT = 10_000  # characters of hook output Claude Code passes on whole (anthropics/claude-code#94358)
MATCHER = "startup|resume|clear|compact"  # the matcher docs/hosts.md gives


def own_files(home: Path, project: Path) -> tuple[Path, Path]:
    return write_own(home / ".claude" / "CLAUDE.md", OWN_USER), write_own(project / "CLAUDE.md", OWN_PROJECT)


def as_claude_shows(path: Path) -> str:
    """The file as Claude Code quotes it: without the HTML-comment lines that mark our region."""
    return "".join(line for line in path.read_text().splitlines(keepends=True) if not line.startswith("<!--"))


@pytest.mark.parametrize("scope", ["--user", "--project"])
def test_a_region_reaches_claude_code_once_beside_the_users_own_text(
        host: Host, scope: str, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    user_file, project_file = own_files(home, project)
    persona(home, "targets", "add", "claude-code", *([scope] if scope == "--user" else [scope, str(project)]))
    add_facts(home)
    add_scoped_facts(home, "claude-code", project, tmp_path / "elsewhere")
    persona(home, "render")
    request = main_request(run_claude(model, project, home, "hello"))
    assert_scoped_facts(request, project=scope == "--project")  # a user-level file: no project's facts
    assert_intact(request, OWN_USER, OWN_PROJECT, as_claude_shows(user_file), as_claude_shows(project_file))
    assert "persona-tier:begin" not in request.text  # Claude Code drops HTML comments: the markers cost nothing


@pytest.mark.parametrize("scope", ["--user", "--project"])
def test_a_rules_file_of_our_own_reaches_claude_code_once_and_claude_md_stays_the_users(
        host: Host, scope: str, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """`targets add claude-code --rules`: .claude/rules/persona.md, ours alone, in every session; both CLAUDE.md
    files are never touched; `targets remove` leaves no rules folder behind."""
    user_file, project_file = own_files(home, project)
    before = user_file.read_bytes(), project_file.read_bytes()
    persona(home, "targets", "add", "claude-code", "--rules",
            *([scope] if scope == "--user" else [scope, str(project)]))
    add_facts(home)
    add_scoped_facts(home, "claude-code", project, tmp_path / "elsewhere")
    persona(home, "render")
    rules = (home if scope == "--user" else project) / ".claude" / "rules" / "persona.md"
    assert rules.is_file() and (user_file.read_bytes(), project_file.read_bytes()) == before
    request = main_request(run_claude(model, project, home, "hello"))
    assert_scoped_facts(request, project=scope == "--project")
    assert_intact(request, OWN_USER, OWN_PROJECT)
    persona(home, "targets", "remove", "claude-code-rules")
    assert not rules.parent.exists()


def test_with_a_user_and_a_project_region_claude_code_gets_each_fact_of_its_scopes_once(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """Both presets at once (the user-level file and the project's): the host reads each fact of its scopes
    once."""
    own_files(home, project)
    user_and_project_regions(home, "claude-code", project, tmp_path / "elsewhere")
    request = main_request(run_claude(model, project, home, "hello"))
    assert_scoped_facts(request, project=True)
    assert_intact(request, OWN_USER, OWN_PROJECT)


# -- the SessionStart hook: `persona inject --format claude-code` --------------------------------------------


def install_hook(home: Path, matcher: str = MATCHER) -> None:
    """The hook as docs/hosts.md tells the user to add it, with no config file at all (injection.enabled is
    off, its default: the hook is the user's own consent); Claude Code runs it with the test's HOME."""
    claude_hook(home, f"{PERSONA} inject --format claude-code", matcher)


def hook_context(home: Path, project: Path) -> str:
    """What the hook gives Claude Code in ``project`` now: its additionalContext."""
    output = json.loads(persona(home, "inject", "--format", "claude-code", "--project", str(project)))
    return str(output["hookSpecificOutput"]["additionalContext"])


def test_the_hook_gives_claude_code_the_persona_at_startup_once(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """In its project: the global facts, Claude Code's own and the project's, once; no other project's or
    agent's."""
    own_files(home, project)
    add_facts(home)
    add_scoped_facts(home, "claude-code", project, tmp_path / "elsewhere")
    install_hook(home)
    context = hook_context(home, project)
    request = main_request(run_claude(model, project, home, "hello"))
    assert request.text.count(context.strip()) == 1
    assert_scoped_facts(request, project=True)
    assert_intact(request, OWN_USER, OWN_PROJECT)


def test_the_hook_persona_hooks_install_adds_gives_claude_code_the_persona(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """`persona hooks install claude-code --project` as the user runs it, into the project's own settings.json
    beside the user's settings: Claude Code runs it at startup; `hooks remove` gives the file back."""
    own_files(home, project)
    add_facts(home)
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(b'{\n  "env": {"PERSONA_TEST": "1"}\n}\n')
    persona(home, "hooks", "install", "claude-code", "--project", str(project))
    context = hook_context(home, project)
    request = main_request(run_claude(model, project, home, "hello"))
    assert request.text.count(context.strip()) == 1 and len(context) <= HOOK_LIMIT
    assert_each_fact_once(request)
    assert_intact(request, OWN_USER, OWN_PROJECT)
    persona(home, "hooks", "remove", "claude-code", "--project", str(project))
    assert settings.read_bytes() == b'{\n  "env": {"PERSONA_TEST": "1"}\n}\n'


def test_the_hook_gives_claude_code_the_persona_again_after_a_compaction(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """One session, no resume: startup, a fact added, /compact, a turn. The fact added after startup can only
    have come from the hook firing again at the compaction."""
    later = {"tools": FACTS["tools"]}
    add_facts(home, {topic: fact for topic, fact in FACTS.items() if topic not in later})
    install_hook(home)
    with ClaudeSession(model, project, home) as session:
        first = main_request(session.send("hello"))
        add_facts(home, later)
        compaction = session.send("/compact")
        after = main_request(session.send("after the compaction"))
    assert FACTS["tools"] not in first.text and FACTS["git"] in first.text
    assert compaction and all("<summary>" in summary.text for summary in compaction)
    assert "FAKE SUMMARY" in after.text  # the session really went on from the compaction's summary
    assert after.text.count(hook_context(home, project).strip()) == 1
    assert_each_fact_once(after)


def test_resuming_after_a_change_gives_claude_code_the_old_and_the_new_persona_today(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """The documented matcher includes resume. `claude --continue` keeps one copy when the hook's text is
    unchanged, but after a change it appends the new text beside the old one in the transcript: every fact
    that did not change then arrives twice (issue #30 asks for once; a matcher without resume avoids it)."""
    later = {"tools": FACTS["tools"]}
    add_facts(home, {topic: fact for topic, fact in FACTS.items() if topic not in later})
    install_hook(home)
    run_claude(model, project, home, "hello")
    unchanged = main_request(run_claude(model, project, home, "again", "--continue"))
    add_facts(home, later)
    changed = main_request(run_claude(model, project, home, "once more", "--continue"))
    assert unchanged.text.count(FACTS["git"]) == 1
    assert changed.text.count(FACTS["git"]) == 2 and changed.text.count(FACTS["tools"]) == 1


def static_hook(home: Path, context: str) -> None:
    output = home / "hook-output.json"
    output.write_text(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                         "additionalContext": context}}))
    claude_hook(home, f"cat {output}")


def test_claude_code_passes_hook_text_on_whole_up_to_10000_characters_only(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """The host's limit itself, pinned: 10,000 characters arrive whole, one more becomes a short preview."""
    for size, whole in ((HOOK_LIMIT, True), (HOOK_LIMIT + 1, False)):
        context = "".join(f"line {index:04d}: a persona fact of some length\n" for index in range(size // 40 + 1))
        static_hook(home, context[:size])
        request: Request = main_request(run_claude(model, project, home, "hello"))
        assert (context[:size] in request.text) is whole, size
        assert ("<persisted-output>" in request.text) is not whole, size


def test_a_full_persona_stays_under_the_hook_limit_and_arrives_whole(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """240 facts in 24 topics: the budget cuts the persona, and what is left fits Claude Code's limit."""
    facts = "facts:\n" + "".join(f"  - topic: topic-{index % 24:02d}\n    content: Fact {index:03d} says the user "
                                 "prefers small, reviewable commits with clear messages.\n" for index in range(240))
    persona(home, "import", str(write_own(tmp_path / "facts.yaml", facts)))
    install_hook(home)
    context = hook_context(home, project)
    request = main_request(run_claude(model, project, home, "hello"))
    assert "left out to fit" in context and len(context) <= HOOK_LIMIT, len(context)
    assert request.text.count(context.strip()) == 1


# -- the user's AGENTS.md, and each fact once (#39) -----------------------------------------------------------


def persona_fails(home: Path, *args: str) -> str:
    """Our CLI as the user runs it, expected to exit 1: what it said."""
    done = subprocess.run([str(PERSONA), *args], env=base_env(home), capture_output=True, text=True, timeout=120,
                          cwd=home, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, (done.stdout, done.stderr)
    return done.stdout + done.stderr


def test_beside_the_users_agents_md_claude_code_gets_their_lines_and_the_projects_facts(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """A repository with only the user's AGENTS.md: `targets add claude-code --project` writes the rules file and
    says so, no CLAUDE.md appears, and Claude Code sends AGENTS.md whole beside every fact of its scopes, once."""
    agents = write_own(project / "AGENTS.md", OWN_PROJECT)
    said = persona(home, "targets", "add", "claude-code", "--project", str(project))
    assert ".claude/rules/persona.md" in said and f"{agents} stays as it is and Claude Code still loads it" in said
    add_facts(home)
    add_scoped_facts(home, "claude-code", project, tmp_path / "elsewhere")
    persona(home, "render")
    assert not (project / "CLAUDE.md").exists() and agents.read_text() == OWN_PROJECT
    request = main_request(run_claude(model, project, home, "hello"))
    assert_intact(request, OWN_PROJECT)
    assert_scoped_facts(request, project=True)
    assert "each fact once" in persona(home, "targets", "check", "--project", str(project))


def test_a_claude_md_of_ours_takes_agents_md_out_of_claude_code_and_the_check_says_so(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """The load model's fallback, measured: a CLAUDE.md holding only our region, then the user's AGENTS.md beside
    it; Claude Code sends our facts and not one line of AGENTS.md, as `targets check` said (exit 1); a line
    @AGENTS.md in CLAUDE.md brings AGENTS.md back whole."""
    persona(home, "targets", "add", "claude-code", "--project", str(project))
    add_facts(home)
    persona(home, "render")
    agents = write_own(project / "AGENTS.md", OWN_PROJECT)
    said = persona_fails(home, "targets", "check", "--project", str(project))
    assert f"Claude Code no longer loads your {agents.resolve()}" in said
    request = main_request(run_claude(model, project, home, "hello"))
    assert_each_fact_once(request)
    assert "Run `make check` before every commit." not in request.text
    claude_md = project / "CLAUDE.md"
    claude_md.write_text("@AGENTS.md\n" + claude_md.read_text())
    assert "each fact once" in persona(home, "targets", "check", "--project", str(project))
    request = main_request(run_claude(model, project, home, "again"))
    assert_intact(request, OWN_PROJECT)
    assert_each_fact_once(request)


def test_the_users_file_and_the_hook_reach_claude_code_twice_until_hooks_install_switches(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """`persona init`'s user-level file, then the hook: `hooks install` refuses, naming the file; a hook added by
    hand makes every fact arrive twice in the real request, as `targets check` said (exit 1, both named);
    `hooks install --instead-of-targets` takes the file's region out and installs the hook: each fact once."""
    user_file = write_own(home / ".claude" / "CLAUDE.md", OWN_USER)
    assert "claude-code" in persona(home, "init", "--yes")  # the user-level preset, for the folder it found
    add_facts(home)
    persona(home, "render")
    refused = persona_fails(home, "hooks", "install", "claude-code")
    assert f"{user_file.resolve()} (target claude-code)" in refused and "--instead-of-targets" in refused
    install_hook(home)  # by hand, as docs/hosts.md once told the user
    said = persona_fails(home, "targets", "check", "--project", str(project))
    assert f"{len(FACTS)} facts would arrive twice: in {user_file.resolve()} (target claude-code) and in the " \
           "SessionStart hook" in said
    twice = main_request(run_claude(model, project, home, "hello"))
    assert all(twice.text.count(fact) == 2 for fact in FACTS.values())
    persona(home, "hooks", "remove", "claude-code")
    switched = persona(home, "hooks", "install", "claude-code", "--instead-of-targets")
    assert "removed target 'claude-code'" in switched and "added the SessionStart hook" in switched
    assert "each fact once" in persona(home, "targets", "check", "--project", str(project))
    once = main_request(run_claude(model, project, home, "again"))
    assert_each_fact_once(once)
    assert_intact(once, OWN_USER)


# -- a CLAUDE.md Claude Code reads as no file, and the order it sends the files in (#49) ----------------------


@pytest.mark.parametrize("claude_md", ["", "<!-- notes to come -->\n"], ids=["empty", "comment-only"])
def test_beside_a_blank_claude_md_the_users_agents_md_still_loads_whole_after_the_rules(
        host: Host, claude_md: str, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """An empty or comment-only CLAUDE.md is no file to Claude Code, which loads AGENTS.md in its place:
    `targets add claude-code --project` writes the rules file, leaves both files as they were, and the request
    carries AGENTS.md whole and each fact once; the rules file comes first, as `targets check` lists it."""
    agents = write_own(project / "AGENTS.md", OWN_PROJECT)
    claude_file = write_own(project / "CLAUDE.md", claude_md)
    said = persona(home, "targets", "add", "claude-code", "--project", str(project))
    assert ".claude/rules/persona.md" in said and f"{agents} stays as it is and Claude Code still loads it" in said
    add_facts(home)
    add_scoped_facts(home, "claude-code", project, tmp_path / "elsewhere")
    persona(home, "render")
    assert claude_file.read_text() == claude_md and agents.read_text() == OWN_PROJECT
    request = main_request(run_claude(model, project, home, "hello"))
    assert_intact(request, OWN_PROJECT)
    assert_scoped_facts(request, project=True)
    assert request.text.index(FACTS["git"]) < request.text.index("Run `make check` before every commit.")
    checked = persona(home, "targets", "check", "--project", str(project))
    assert "each fact once" in checked
    assert checked.index(".claude/rules/persona.md") < checked.index("AGENTS.md (project file, in place of")


def test_hook_first_then_init_or_a_target_each_fact_reaches_claude_code_once(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """The other order (#49): the hook installed first, then `persona init --yes` adds no Claude Code target and
    `targets add claude-code --project` is refused, naming --instead-of-hook; the real request carries each fact
    once. With --instead-of-hook the hook goes and the file comes: still each fact once."""
    user_file = write_own(home / ".claude" / "CLAUDE.md", OWN_USER)
    add_facts(home)
    persona(home, "hooks", "install", "claude-code")
    said = persona(home, "init", "--yes")
    assert "gets the persona from the session-start hook" in said and "add target 'claude-code'" not in said
    assert user_file.read_text() == OWN_USER
    refused = persona_fails(home, "targets", "add", "claude-code", "--project", str(project))
    assert "--instead-of-hook" in refused and not (project / "CLAUDE.md").exists()
    once = main_request(run_claude(model, project, home, "hello"))
    assert_each_fact_once(once)
    assert_intact(once, OWN_USER)
    switched = persona(home, "targets", "add", "claude-code", "--user", "--instead-of-hook")
    assert "removed the persona hook" in switched
    persona(home, "render")
    assert "each fact once" in persona(home, "targets", "check", "--project", str(project))
    again = main_request(run_claude(model, project, home, "again"))
    assert_each_fact_once(again)


def test_in_a_repository_with_tracked_instruction_files_the_persona_stays_out_of_git(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """#49: the team's CLAUDE.md and AGENTS.md are tracked: `targets add claude-code --project` writes the rules
    file, listed in .git/info/exclude; `git status` stays clean, and Claude Code gets the team's CLAUDE.md whole and
    each fact of its scopes once. Codex there is refused, naming --shared and --user."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(project), "-c", "user.name=T", "-c", "user.email=t@example.com",
                               *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    write_own(project / "CLAUDE.md", OWN_PROJECT)
    write_own(project / "AGENTS.md", OWN_PROJECT)
    git("add", "CLAUDE.md", "AGENTS.md")
    git("commit", "-qm", "team")
    said = persona(home, "targets", "add", "claude-code", "--project", str(project))
    assert "is shared through git" in said and ".claude/rules/persona.md" in said
    assert "--shared" in persona_fails(home, "targets", "add", "codex", "--project", str(project))
    add_facts(home)
    add_scoped_facts(home, "claude-code", project, tmp_path / "elsewhere")
    persona(home, "render")
    assert git("status", "--porcelain") == ""
    request = main_request(run_claude(model, project, home, "hello"))
    assert_intact(request, OWN_PROJECT)
    assert_scoped_facts(request, project=True)
