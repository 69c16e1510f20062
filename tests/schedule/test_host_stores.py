"""`persona forget` in what else the hosts keep: Codex's SQLite copies of its threads (scrubbed in place with SQL,
text columns only, the byte offsets into a shortened rollout moved with it; named while Codex holds them open), a
folder a symbolic link leads to (followed inside the home, named outside it), and a fact of one or two short words
(replaced only where it is a message's whole text; the transcripts where it stands elsewhere are named)."""

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
SECRET = "Drinks Quetzal tea, never coffee"
THREAD = "01a24ec6-18eb-7c60-883a-f33443d67345"


def configured(tmp_path: Path, *facts: str) -> tuple[list[str], list[int]]:
    db = tmp_path / "m.db"
    with PersonaStore(db, profile="alice") as alice:
        ids = [alice.add(fact, topic=f"t{n}").fact.id for n, fact in enumerate(facts)]
    with PersonaStore(db, profile="bob") as bob:
        bob.add(SECRET, topic="drinks")  # Bob's own copy of the text: his, and never forgotten here
    return ["--set", f"store.path={db}", "--set", f"injection.file={tmp_path / 'persona-{profile}.md'}"], ids


def rollout(codex: Path) -> Path:
    """A rollout in Codex's shape: its first line, the user's message, the answer."""
    path = codex / "sessions" / "2026" / "12" / "07" / f"rollout-2026-12-07T04-32-15-{THREAD}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [{"timestamp": "t", "type": "session_meta", "payload": {"id": THREAD, "cwd": "/work/a"}},
             {"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": f"Remember this about me: {SECRET}"}]}},
             {"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                                     "content": [{"type": "output_text",
                                                                                  "text": "Noted."}]}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return path


def databases(codex: Path, rollout_path: Path) -> tuple[Path, Path, list[int]]:
    """Codex 0.171's state_5 and thread_history_1 (the columns we read, as the real ones have them)."""
    state, history = codex / "state_5.sqlite", codex / "thread_history_1.sqlite"
    item = json.dumps({"type": "userMessage", "id": "i1", "content": [{"type": "text", "text": f"Remember: {SECRET}"}]})
    with closing(sqlite3.connect(state)) as conn, conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, cwd TEXT NOT NULL, "
                     "title TEXT NOT NULL, first_user_message TEXT NOT NULL DEFAULT '', preview TEXT NOT NULL "
                     "DEFAULT '', model TEXT)")
        conn.execute("INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (THREAD, str(rollout_path), "/work/Quetzal", f"Remember: {SECRET}", f"Remember: {SECRET}",
                      f"Remember: {SECRET}", "fake-model"))
    starts = [0]
    for line in rollout_path.read_bytes().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    with closing(sqlite3.connect(history)) as conn, conn:
        conn.execute("CREATE TABLE thread_items (thread_id TEXT NOT NULL, turn_id TEXT NOT NULL, item_id TEXT NOT "
                     "NULL, item_json TEXT NOT NULL, item_type TEXT NOT NULL DEFAULT '')")
        conn.execute("INSERT INTO thread_items VALUES (?, 't1', 'i1', ?, 'userMessage')", (THREAD, item))
        conn.execute("CREATE TABLE thread_turns (thread_id TEXT NOT NULL, turn_id TEXT NOT NULL, "
                     "rollout_byte_offset INTEGER, rollout_end_byte_offset INTEGER)")
        conn.execute("INSERT INTO thread_turns VALUES (?, 't1', ?, ?)", (THREAD, starts[1], starts[3]))
        conn.execute("CREATE TABLE thread_history_projection_state (thread_id TEXT PRIMARY KEY, "
                     "next_rollout_byte_offset INTEGER NOT NULL, next_rollout_ordinal INTEGER NOT NULL)")
        conn.execute("INSERT INTO thread_history_projection_state VALUES (?, ?, 3)", (THREAD, starts[3]))
    return state, history, starts


def test_codexs_databases_are_scrubbed_in_place_and_its_offsets_follow_the_rollout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    codex = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    path = rollout(codex)
    state, history, _ = databases(codex, path)
    base, [fact] = configured(tmp_path, SECRET)
    done = runner.invoke(app, [*base, "forget", str(fact), "-p", "alice"])
    assert done.exit_code == 0, done.output
    assert f"  {state} (Codex, 3 times)" in done.stdout and f"  {history} (Codex, 1 time)" in done.stdout
    with closing(sqlite3.connect(state)) as conn:
        assert conn.execute("SELECT id, rollout_path, cwd, title, first_user_message, preview, model FROM threads"
                            ).fetchone() == (THREAD, str(path), "/work/Quetzal", "Remember: [forgotten]",
                                             "Remember: [forgotten]", "Remember: [forgotten]", "fake-model")
    with closing(sqlite3.connect(history)) as conn:
        item = json.loads(conn.execute("SELECT item_json FROM thread_items").fetchone()[0])
        turn = conn.execute("SELECT rollout_byte_offset, rollout_end_byte_offset FROM thread_turns").fetchone()
        (following,) = conn.execute("SELECT next_rollout_byte_offset FROM thread_history_projection_state").fetchone()
    assert item["content"][0]["text"] == "Remember: [forgotten]" and item["type"] == "userMessage"
    starts = [0]
    for line in path.read_bytes().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    assert turn == (starts[1], starts[3]) and following == starts[3]  # each offset still starts its line
    assert b"Quetzal" not in state.read_bytes().replace(b"/work/Quetzal", b"")
    assert not Path(f"{state}-wal").exists() or b"Quetzal" not in Path(f"{state}-wal").read_bytes()


def test_codexs_database_held_open_is_named_and_finished_once_codex_quits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    codex = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    state, _, _ = databases(codex, rollout(codex))
    base, [fact] = configured(tmp_path, SECRET)
    code = "import sys, sqlite3; c = sqlite3.connect(sys.argv[1]); c.execute('select 1'); print('open', flush=True);" \
           " sys.stdin.read()"
    with subprocess.Popen([sys.executable, "-c", code, str(state)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as codex_running:
        assert codex_running.stdout is not None and codex_running.stdout.readline() == "open\n"
        done = runner.invoke(app, [*base, "forget", str(fact), "-p", "alice"])
        codex_running.communicate("")
    assert done.exit_code == 1
    assert f"warning: {state} (Codex) still holds the text: a running process (pid {codex_running.pid}) holds it " \
           "open (the host is running)" in done.stderr
    assert runner.invoke(app, [*base, "scrub", "-p", "alice"]).exit_code == 0
    with closing(sqlite3.connect(state)) as conn:
        assert conn.execute("SELECT title FROM threads").fetchone() == ("Remember: [forgotten]",)


def test_a_folder_linked_inside_the_home_is_scrubbed_and_one_outside_is_named(tmp_path: Path) -> None:
    base, [fact] = configured(tmp_path, SECRET)
    projects = Path.home() / ".claude" / "projects"
    inside, outside = Path.home() / "elsewhere" / "-work-a", tmp_path / "outside" / "-work-b"
    for folder in (inside, outside):
        folder.mkdir(parents=True)
        (folder / "s.jsonl").write_text(json.dumps({"type": "user", "message": {"content": SECRET}}) + "\n", "utf-8")
    projects.mkdir(parents=True)
    (projects / "-work-a").symlink_to(inside)
    (projects / "-work-b").symlink_to(outside)
    done = runner.invoke(app, [*base, "forget", str(fact), "-p", "alice"])
    assert done.exit_code == 1
    assert "Quetzal" not in (inside / "s.jsonl").read_text("utf-8") and (projects / "-work-a").is_symlink()
    assert "Quetzal" in (outside / "s.jsonl").read_text("utf-8")
    assert f"warning: {projects / '-work-b'} (Claude Code) still holds the text: a symbolic link to a folder " \
           "outside your home" in done.stderr


def test_a_linked_folder_no_history_lives_in_is_neither_entered_nor_named(tmp_path: Path) -> None:
    """A Hermes plugin installed as a link to its source (outside the home) holds no history: the forget neither
    walks it nor names it, and exits 0 when every transcript was scrubbed."""
    base, [fact] = configured(tmp_path, SECRET)
    hermes = Path.home() / ".hermes"
    source = tmp_path / "src" / "mnemosyne"
    source.mkdir(parents=True)
    (source / "notes.jsonl").write_text(json.dumps({"content": SECRET}) + "\n", "utf-8")
    (hermes / "plugins").mkdir(parents=True)
    (hermes / "plugins" / "mnemosyne").symlink_to(source)
    (hermes / "sessions").mkdir()
    log = hermes / "sessions" / "s1.jsonl"
    log.write_text(json.dumps({"role": "user", "content": f"Remember: {SECRET}"}) + "\n", "utf-8")
    done = runner.invoke(app, [*base, "forget", str(fact), "-p", "alice"])
    assert done.exit_code == 0, done.output
    assert "Quetzal" not in log.read_text("utf-8") and "plugins" not in done.output
    assert "Quetzal" in (source / "notes.jsonl").read_text("utf-8")  # not ours, never touched


def test_short_facts_leave_structure_alone_and_name_the_transcripts_left(tmp_path: Path) -> None:
    """Forgetting `user` and `Go` turned every "type":"user" into "[forgotten]": now only a message that is the
    fact alone changes, and each transcript holding it inside other text is named; forget exits 1."""
    base, ids = configured(tmp_path, "user", "Go")
    session = Path.home() / ".claude" / "projects" / "-home-me-Go" / "s.jsonl"
    session.parent.mkdir(parents=True)
    lines = [{"type": "user", "cwd": "/home/me/Go", "gitBranch": "main", "message": {"role": "user", "content": "Go"}},
             {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text",
                                                                                 "text": "Go is a fine choice"}]}}]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    user = runner.invoke(app, [*base, "forget", str(ids[0]), "-p", "alice"])
    assert user.exit_code == 0 and session.read_text("utf-8").splitlines() == [json.dumps(line) for line in lines]
    go = runner.invoke(app, [*base, "forget", str(ids[1]), "-p", "alice"])
    assert go.exit_code == 1
    assert f"warning: {session} (Claude Code) still holds the text: it is one or two short words" in go.stderr
    after = [json.loads(line) for line in session.read_text("utf-8").splitlines()]
    assert after[0] == {**lines[0], "message": {"role": "user", "content": "[forgotten]"}}
    assert after[1] == lines[1]
