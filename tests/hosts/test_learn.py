"""Learning from the hosts' own memory (issue 53), with the real CLIs: each host's model saves a memory the way
it does (the fake model asks for the edit, the CLI's own tool makes it), and the other hosts' next prompts carry
it, once, through the paths a user has (`persona tick` from a timer, Claude Code's SessionStart hook); the host
that saved it gets it from its own memory only, never also from our region.

- Gemini CLI 0.61's model edits `~/.gemini/GEMINI.md` with its `replace` tool (`--approval-mode auto_edit`, the
  folder allowed with `--include-directories`: in `-p` nothing can be approved by hand).
- Claude Code's model writes its project auto memory, `~/.claude/projects/<slug>/memory/MEMORY.md`, with its
  `Write` tool (allowed there with no flag).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .facts import FACTS, OWN_PROJECT, OWN_USER, main_request, write_own
from .fake_model import FakeModel, ToolCall
from .hosts import PERSONA, claude_hook, persona, run_claude, run_codex, run_gemini

pytestmark = pytest.mark.slow
METRIC = "Prefers metric units in every answer."
TOX = "Runs this project's tests with tox, never bare pytest."
LAST_OWN_LINE = OWN_USER.splitlines()[-1] + "\n"


def counts(text: str, *facts: str) -> dict[str, int]:
    return {fact: text.count(fact) for fact in facts}


def test_a_line_gemini_clis_model_adds_to_its_global_memory_reaches_codex_once_and_gemini_only_from_its_file(
        home: Path, project: Path) -> None:
    """Gemini's edit of GEMINI.md, then the user's timer (`persona tick`): Codex's next prompt carries the line
    once (its user-level region); Gemini's next prompt carries it once, from its own file, not from our region in
    that same file. The user's own lines there before are never taken in."""
    gemini_md = write_own(home / ".gemini" / "GEMINI.md", OWN_USER)
    persona(home, "targets", "add", "gemini", "--user")
    persona(home, "targets", "add", "codex", "--user")
    persona(home, "add", FACTS["style"], "--topic", "style")
    persona(home, "tick")  # the timer's first run: renders both, and notes what GEMINI.md holds as the user's own
    edit = ToolCall("replace", {"file_path": str(gemini_md), "old_string": LAST_OWN_LINE,
                                "new_string": f"{LAST_OWN_LINE}- {METRIC}\n", "instruction": "Save a memory."})
    with FakeModel(calls=[edit]) as model:
        run_gemini(model, project, home, "Remember: I prefer metric units.", "--approval-mode", "auto_edit",
                   "--include-directories", str(gemini_md.parent))
        assert not model.calls, model.dump()  # the CLI offered its edit tool and ran it
    assert f"- {METRIC}" in gemini_md.read_text()
    assert "learned 1 new fact" in persona(home, "tick")  # the timer's next run
    with FakeModel() as model:
        codex = main_request(run_codex(model, project, home, "hello")).text
        gemini = main_request(run_gemini(model, project, home, "hello")).text
    own = "Write `TODO(name)`, never a bare TODO."
    assert counts(codex, METRIC, FACTS["style"], own) == {METRIC: 1, FACTS["style"]: 1, own: 0}
    assert counts(gemini, METRIC, FACTS["style"], own) == {METRIC: 1, FACTS["style"]: 1, own: 1}
    listed = persona(home, "list")
    assert METRIC in listed and "learn:gemini" in listed and own not in listed


def slug(directory: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(directory))


def test_claude_codes_project_memory_reaches_codex_in_that_project_once_and_never_in_another(
        home: Path, tmp_path: Path) -> None:
    """Claude Code's model writes its auto memory in project a; its next session there starts the SessionStart
    hook's full path, which learns the entry as a fact of project a and renders what is due, with no timer:
    Codex in project a carries it once, Codex in project b does not, and Claude Code gets it once, from its own
    memory, never also from the hook."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    write_own(a / "CLAUDE.md", OWN_PROJECT)  # the user's own: Claude Code then leaves Codex's AGENTS.md unread
    for directory in (a, b):
        persona(home, "targets", "add", "codex", "--project", str(directory))
    persona(home, "add", FACTS["style"], "--topic", "style")
    persona(home, "render")
    claude_hook(home, f"{PERSONA} inject --format claude-code")
    memory = home / ".claude" / "projects" / slug(a) / "memory" / "MEMORY.md"
    with FakeModel(calls=[ToolCall("Write", {"file_path": str(memory), "content": f"- {TOX}\n"})]) as model:
        run_claude(model, a, home, "Remember: this project's tests run with tox.")
        assert not model.calls, model.dump()
    assert memory.read_text() == f"- {TOX}\n"
    with FakeModel() as model:
        claude = main_request(run_claude(model, a, home, "hello")).text  # the hook's next start learns
        in_a = main_request(run_codex(model, a, home, "hello")).text
        in_b = main_request(run_codex(model, b, home, "hello")).text
    assert counts(claude, TOX, FACTS["style"]) == {TOX: 1, FACTS["style"]: 1}
    assert f"(user's auto-memory, persists across conversations):\n\n- {TOX}" in claude  # Claude Code's own load
    assert counts(in_a, TOX, FACTS["style"]) == {TOX: 1, FACTS["style"]: 1}
    assert counts(in_b, TOX, FACTS["style"]) == {TOX: 0, FACTS["style"]: 1}
    listed = persona(home, "list", "--json")
    assert TOX in listed and "learn:claude-code" in listed
