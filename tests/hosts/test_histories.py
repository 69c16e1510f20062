"""`persona forget` and the transcripts the real CLIs write: a resumed session must not send the text again.

Claude Code 2.1.332 keeps a session under ~/.claude/projects/<directory>/<session>.jsonl and Gemini CLI 0.61.0
under ~/.gemini/tmp/<project>/chats/session-*.jsonl; both resume from that file, so once forget has replaced the
text there with [forgotten], `--resume` sends the marker and not the text. Codex 0.171.0 resumes from its rollout
(~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) the same way; its SQLite copies of the thread are named, not
rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .facts import main_request
from .fake_model import FakeModel
from .hosts import CLAUDE, CODEX, GEMINI, Host, persona, run_claude, run_codex, run_gemini

pytestmark = pytest.mark.slow
SECRET = 'Drinks "Quetzal" tea — never coffee.'
PROMPT = f"Remember this about me: {SECRET}"


def secret_fact(home: Path, preset: str) -> str:
    """The secret as a fact in the host's user-level file, and its id."""
    persona(home, "targets", "add", preset, "--user")
    persona(home, "add", SECRET, "--topic", "drinks")
    [fact] = json.loads(persona(home, "list", "--json"))
    return str(fact["id"])


def valid_json_lines(path: Path) -> None:
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            json.loads(line)


@pytest.mark.parametrize("host", [CLAUDE], ids=str, indirect=True)
def test_claude_code_resumes_a_session_with_the_marker_once_forget_ran(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    fact = secret_fact(home, "claude-code")
    assert "Quetzal" in main_request(run_claude(model, project, home, PROMPT)).text
    [transcript] = (home / ".claude" / "projects").glob("*/*.jsonl")
    assert "Quetzal" in transcript.read_text(encoding="utf-8")
    said = persona(home, "forget", fact)
    assert f"  {transcript} (Claude Code, " in said
    assert "Quetzal" not in transcript.read_text(encoding="utf-8")
    valid_json_lines(transcript)
    resumed = main_request(run_claude(model, project, home, "What do I drink?", "--resume", transcript.stem))
    assert "[forgotten]" in resumed.text and "Quetzal" not in resumed.text


@pytest.mark.parametrize("host", [GEMINI], ids=str, indirect=True)
def test_gemini_cli_resumes_a_chat_with_the_marker_once_forget_ran(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    fact = secret_fact(home, "gemini")
    assert "Quetzal" in main_request(run_gemini(model, project, home, PROMPT)).text
    [chat] = (home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")
    said = persona(home, "forget", fact)
    assert f"  {chat} (Gemini CLI, " in said
    assert "Quetzal" not in chat.read_text(encoding="utf-8")
    valid_json_lines(chat)
    resumed = main_request(run_gemini(model, project, home, "What do I drink?", "--resume", "latest"))
    assert "[forgotten]" in resumed.text and "Quetzal" not in resumed.text


@pytest.mark.parametrize("host", [CODEX], ids=str, indirect=True)
def test_codex_resumes_a_rollout_with_the_marker_and_its_databases_are_named(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    fact = secret_fact(home, "codex")
    run_codex(model, project, home, PROMPT)
    [rollout] = (home / ".codex" / "sessions").glob("**/rollout-*.jsonl")
    said = persona(home, "forget", fact)
    assert f"  {rollout} (Codex, " in said
    assert f"warning: {home / '.codex' / 'thread_history_1.sqlite'} (Codex) still holds the text: a SQLite copy" in said
    assert "Quetzal" not in rollout.read_text(encoding="utf-8")
    valid_json_lines(rollout)
    thread = rollout.stem[-36:]  # rollout-<time>-<thread id>
    for question in ("What do I drink?", "And what never?"):  # twice: the resumed rollout still grows right
        resumed = main_request(run_codex(model, project, home, question, "resume", thread))
        assert "[forgotten]" in resumed.text and "Quetzal" not in resumed.text and question in resumed.text
    assert "What do I drink?" in main_request(run_codex(model, project, home, "Last.", "resume", thread)).text
