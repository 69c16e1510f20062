"""`persona forget` and the transcripts the real CLIs write: a resumed session must not send the text again.

Claude Code 2.1.332 keeps a session under ~/.claude/projects/<directory>/<session>.jsonl and Gemini CLI 0.61.0
under ~/.gemini/tmp/<project>/chats/session-*.jsonl; both resume from that file, so once forget has replaced the
text there with [forgotten], `--resume` sends the marker and not the text, and the whole session besides: every
turn before it, each record still read as the host wrote it. Codex 0.171.0 resumes from its rollout
(~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) the same way; its SQLite copies of the thread (state_5.sqlite,
thread_history_1.sqlite) are scrubbed in place, and Codex goes on resuming and growing the thread.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
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


def valid_json_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def same_structure(before: list[dict[str, object]], after: list[dict[str, object]]) -> None:
    """Every record kept its keys and its type (a scrub changes text fields only)."""
    assert [sorted(record) for record in before] == [sorted(record) for record in after]
    assert [record.get("type") for record in before] == [record.get("type") for record in after]


@pytest.mark.parametrize("host", [CLAUDE], ids=str, indirect=True)
def test_claude_code_resumes_a_session_with_the_marker_once_forget_ran(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    fact = secret_fact(home, "claude-code")
    assert "Quetzal" in main_request(run_claude(model, project, home, PROMPT)).text
    [transcript] = (home / ".claude" / "projects").glob("*/*.jsonl")
    assert "Quetzal" in transcript.read_text(encoding="utf-8")
    before = valid_json_lines(transcript)
    said = persona(home, "forget", fact)
    assert f"  {transcript} (Claude Code, " in said
    assert "Quetzal" not in transcript.read_text(encoding="utf-8")
    same_structure(before, valid_json_lines(transcript))
    resumed = main_request(run_claude(model, project, home, "What do I drink?", "--resume", transcript.stem))
    assert "[forgotten]" in resumed.text and "Quetzal" not in resumed.text
    assert "Remember this about me: [forgotten]" in resumed.text  # the whole session, read back
    assert "OK from the fake model" in resumed.text and "What do I drink?" in resumed.text


@pytest.mark.parametrize("host", [GEMINI], ids=str, indirect=True)
def test_gemini_cli_resumes_a_chat_with_the_marker_once_forget_ran(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    fact = secret_fact(home, "gemini")
    assert "Quetzal" in main_request(run_gemini(model, project, home, PROMPT)).text
    [chat] = (home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")
    before = valid_json_lines(chat)
    said = persona(home, "forget", fact)
    assert f"  {chat} (Gemini CLI, " in said
    assert "Quetzal" not in chat.read_text(encoding="utf-8")
    same_structure(before, valid_json_lines(chat))
    resumed = main_request(run_gemini(model, project, home, "What do I drink?", "--resume", "latest"))
    assert "[forgotten]" in resumed.text and "Quetzal" not in resumed.text
    assert "Remember this about me: [forgotten]" in resumed.text and "What do I drink?" in resumed.text


@pytest.mark.parametrize("host", [CODEX], ids=str, indirect=True)
def test_codex_resumes_a_rollout_with_the_marker_and_its_databases_are_scrubbed(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    fact = secret_fact(home, "codex")
    run_codex(model, project, home, PROMPT)
    [rollout] = (home / ".codex" / "sessions").glob("**/rollout-*.jsonl")
    before = valid_json_lines(rollout)
    said = persona(home, "forget", fact)
    codex = home / ".codex"
    assert f"  {rollout} (Codex, " in said
    assert all(f"  {codex / name} (Codex, " in said for name in ("state_5.sqlite", "thread_history_1.sqlite"))
    assert "still holds the text" not in said
    assert "Quetzal" not in rollout.read_text(encoding="utf-8")
    same_structure(before, valid_json_lines(rollout))
    for name in ("state_5.sqlite", "thread_history_1.sqlite"):
        with closing(sqlite3.connect(codex / name)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert all(b"Quetzal" not in path.read_bytes() for path in codex.glob(f"{name}*")), name
    thread = rollout.stem[-36:]  # rollout-<time>-<thread id>
    for question in ("What do I drink?", "And what never?"):  # twice: the resumed rollout still grows right
        resumed = main_request(run_codex(model, project, home, question, "resume", thread))
        assert "[forgotten]" in resumed.text and "Quetzal" not in resumed.text and question in resumed.text
    last = main_request(run_codex(model, project, home, "Last.", "resume", thread)).text
    assert "What do I drink?" in last and "Remember this about me: [forgotten]" in last  # read whole
    with closing(sqlite3.connect(codex / "state_5.sqlite")) as conn:
        assert conn.execute("SELECT title FROM threads").fetchone() == ("Remember this about me: [forgotten].",)
