"""`persona forget` reaches the hosts' own histories: Claude Code's and Codex's transcripts, Gemini CLI's chats and
checkpoints, Hermes' sessions. Each holding file is listed, rewritten with `[forgotten]` where the text stood and
nothing else changed; `--keep-host-histories` only lists them; a file it cannot change safely is named with why.

The transcripts here are in the shapes the real CLIs write (tests/hosts/test_histories.py runs the real ones),
in a HOME (and CODEX_HOME, ...) of the test's own; two profiles, two projects.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

runner = CliRunner()
SECRET = 'Drinks "Quetzal" tea & <honey>'
BOB = "Bob plays the cello."
ESCAPED = json.dumps(SECRET)[1:-1]


def jsonl(path: Path, *records: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records), "utf-8")
    return path


def said(text: str) -> dict[str, object]:
    return {"type": "user", "message": {"role": "user", "content": f"remember: {text}"}}


@pytest.fixture
def histories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every host's history, each holding Alice's secret beside Bob's fact; Codex in $CODEX_HOME."""
    home = Path.home()
    codex_home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    claude = home / ".claude" / "projects"
    made = {
        "claude-a": jsonl(claude / "-work-a" / "s1.jsonl", said(SECRET), said(BOB)),
        "claude-b": jsonl(claude / "-work-b" / "s2.jsonl", said(BOB)),  # another project: holds only Bob's fact
        "codex": jsonl(codex_home / "sessions" / "2026" / "12" / "02" / "rollout-1.jsonl",
                       {"type": "function_call", "arguments": json.dumps({"note": SECRET})}, said(BOB)),
        "gemini": jsonl(home / ".gemini" / "tmp" / "proj" / "chats" / "session-1.jsonl", said(SECRET)),
        "hermes": jsonl(home / ".hermes" / "sessions" / "abc.jsonl", said(SECRET)),
        "codex-prompts": jsonl(codex_home / "history.jsonl", {"session_id": "1", "text": SECRET}),
    }
    checkpoint = home / ".gemini" / "tmp" / "proj" / "checkpoint-tag.json"
    checkpoint.write_text(json.dumps([{"role": "user", "parts": [{"text": SECRET}]}], indent=2), "utf-8")
    made["checkpoint"] = checkpoint
    return made


def configured(tmp_path: Path) -> tuple[list[str], int]:
    """CLI settings of a store where Alice holds the secret and Bob his fact; the secret's id."""
    db = tmp_path / "m.db"
    with PersonaStore(db, profile="alice") as alice:
        secret = alice.add(SECRET, topic="drinks").fact.id
    with PersonaStore(db, profile="bob") as bob:
        bob.add(BOB, topic="music")
    return ["--set", f"store.path={db}", "--set", f"injection.file={tmp_path / 'persona-{profile}.md'}"], secret


def test_forget_replaces_the_text_in_every_hosts_history_and_lists_each_file(
        tmp_path: Path, histories: dict[str, Path]) -> None:
    base, secret = configured(tmp_path)
    before = {name: path.read_bytes() for name, path in histories.items()}
    done = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    assert done.exit_code == 0, done.output
    changed = {name for name, path in histories.items() if path.read_bytes() != before[name]}
    assert changed == {"claude-a", "codex", "gemini", "hermes", "checkpoint", "codex-prompts"}  # in $CODEX_HOME
    assert "replaced the text with [forgotten] in 6 host history files:" in done.stdout
    for name in changed:
        assert f"  {histories[name]} (" in done.stdout
        data = histories[name].read_bytes()
        assert b"Quetzal" not in data and b"[forgotten]" in data
        for quoted in (ESCAPED, json.dumps(ESCAPED)[1:-1], SECRET):  # every other byte as it was
            data = data.replace(b"[forgotten]", quoted.encode(), 1) if quoted.encode() in before[name] else data
        assert data == before[name], name
    assert f"  {histories['gemini']} (Gemini CLI, 1 time)" in done.stdout
    assert f"  {histories['codex']} (Codex, 1 time)" in done.stdout
    assert BOB in histories["claude-b"].read_text() and BOB in histories["claude-a"].read_text()


def test_keep_host_histories_leaves_every_byte_and_lists_the_files(
        tmp_path: Path, histories: dict[str, Path]) -> None:
    base, secret = configured(tmp_path)
    before = {name: path.read_bytes() for name, path in histories.items()}
    done = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice", "--keep-host-histories", "--json"])
    assert done.exit_code == 0, done.output
    assert {name: path.read_bytes() for name, path in histories.items()} == before
    shown = json.loads(done.stdout)["host_histories"]
    assert shown["kept"] is True and shown["left"] == []
    assert {file["path"] for file in shown["files"]} == {
        str(histories[name]) for name in ("claude-a", "codex", "gemini", "hermes", "checkpoint", "codex-prompts")}
    plain = runner.invoke(app, [*base, "profile", "erase", "bob", "--yes", "--keep-host-histories"])
    assert "3 host history files still hold the text (--keep-host-histories)" in plain.stdout
    assert f"  {histories['claude-b']} (Claude Code, 1 time)" in plain.stdout  # Bob's fact, in both projects
    assert f"  {histories['claude-a']} (Claude Code, 1 time)" in plain.stdout


def test_a_file_it_cannot_change_and_a_hosts_database_are_named_with_the_reason(
        tmp_path: Path, histories: dict[str, Path]) -> None:
    """A half-written last line (its host still writing), and Hermes' SQLite store, which only Hermes rewrites."""
    base, secret = configured(tmp_path)
    half = histories["claude-a"].parent / "s3.jsonl"
    half.write_text(json.dumps(said(SECRET)) + "\n" + json.dumps(said(SECRET))[:-3], "utf-8")
    state = Path.home() / ".hermes" / "state.db"
    with closing(sqlite3.connect(state)) as conn, conn:
        conn.execute("CREATE TABLE messages (content TEXT)")
        conn.execute("INSERT INTO messages VALUES (?)", (SECRET,))
    kept = state.read_bytes()
    done = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    assert done.exit_code == 1, done.output  # a history still holds the text
    assert state.read_bytes() == kept
    # the cut last line is left as it is, and named: it holds the text; the whole line before it is scrubbed
    lines = half.read_text("utf-8").split("\n")
    assert json.loads(lines[0])["message"]["content"] == "remember: [forgotten]"
    assert lines[1] == json.dumps(said(SECRET))[:-3]
    assert f"warning: {half} (Claude Code) still holds the text: line 2 is not JSON" in done.stderr
    assert (f"warning: {state} (Hermes Agent) still holds the text: Hermes' own SQLite store, with full-text "
            "indexes: persona-tier never rewrites it; `hermes sessions delete ID` removes a session") in done.stderr
    assert "Quetzal" not in histories["hermes"].read_text()


def test_the_hosts_folders_follow_their_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDE_CONFIG_DIR is Claude Code's folder, GEMINI_CLI_HOME Gemini CLI's home, HERMES_HOME Hermes'; the
    folders under HOME are then not Claude Code's, Gemini's or Hermes' and stay as they are."""
    base, secret = configured(tmp_path)
    moved = {"CLAUDE_CONFIG_DIR": tmp_path / "claude-config", "GEMINI_CLI_HOME": tmp_path / "gemini-home",
             "HERMES_HOME": tmp_path / "hermes-home"}
    for name, folder in moved.items():
        monkeypatch.setenv(name, str(folder))
    there = [jsonl(moved["CLAUDE_CONFIG_DIR"] / "projects" / "-a" / "s.jsonl", said(SECRET)),
             jsonl(moved["GEMINI_CLI_HOME"] / ".gemini" / "tmp" / "p" / "chats" / "session-1.jsonl", said(SECRET)),
             jsonl(moved["HERMES_HOME"] / "sessions" / "abc.jsonl", said(SECRET))]
    not_theirs = [jsonl(Path.home() / ".claude" / "projects" / "-a" / "s.jsonl", said(SECRET)),
                  jsonl(Path.home() / ".hermes" / "sessions" / "abc.jsonl", said(SECRET))]
    done = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    assert done.exit_code == 0, done.output
    assert all("Quetzal" not in path.read_text() for path in there)
    assert all("Quetzal" in path.read_text() for path in not_theirs)


def test_a_transcript_a_running_process_holds_open_is_named_and_left(tmp_path: Path,
                                                                     histories: dict[str, Path]) -> None:
    """A host's running session writing to its transcript would go on writing to the replaced file's old inode
    and lose those lines: the file is named, with the process, and the others are scrubbed."""
    base, secret = configured(tmp_path)
    held = histories["claude-a"]
    before = held.read_bytes()
    code = "import sys; f = open(sys.argv[1], 'a'); print('open', flush=True); sys.stdin.read()"
    with subprocess.Popen([sys.executable, "-c", code, str(held)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "open\n"
        done = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
        writer.communicate("")
    assert done.exit_code == 1, done.output
    assert held.read_bytes() == before
    assert (f"warning: {held} (Claude Code) still holds the text: a running process (pid {writer.pid}) holds it "
            "open, so a replaced file would lose what it writes next; `persona scrub` finishes it once that session "
            "has ended") in done.stderr
    assert "warning: the scrub of the hosts' histories is pending" in done.stderr
    finished = runner.invoke(app, [*base, "scrub", "-p", "alice"])  # the session has ended: the journal finishes
    assert finished.exit_code == 0, finished.output
    assert f"  {held} (Claude Code, 1 time)" in finished.stdout
    assert "Quetzal" not in held.read_text("utf-8")
    assert "Quetzal" not in histories["gemini"].read_text()
