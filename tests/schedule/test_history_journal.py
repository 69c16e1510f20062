"""A forget's scrub of the hosts' histories always finishes: the erasure journals it (keyed hashes, never the
text), and `persona scrub`, the next forget or `persona status` finish what a Ctrl-C, a crash or a full disk left,
finding the text by its hash alone; temporary files a killed scrub left are swept. Two profiles, two projects."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app
from pipeline.fs import json_scrub
from pipeline.schedule import host_histories

runner = CliRunner()
SECRET = "Drinks Quetzal tea, never coffee"
BOB = "Bob plays the cello every evening"


def transcript(path: Path, *texts: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"type": "user", "cwd": "/work/a", "message": {
        "role": "user", "content": f"remember: {text}"}}) + "\n" for text in texts), "utf-8")
    return path


@pytest.fixture
def setup(tmp_path: Path) -> tuple[list[str], int, int, dict[str, Path]]:
    """Alice's secret and Bob's fact in one store; transcripts of two projects holding both."""
    db = tmp_path / "m.db"
    with PersonaStore(db, profile="alice") as alice:
        secret = alice.add(SECRET, topic="drinks").fact.id
    with PersonaStore(db, profile="bob") as bob:
        cello = bob.add(BOB, topic="music").fact.id
    projects = Path.home() / ".claude" / "projects"
    files = {"a": transcript(projects / "-work-a" / "s1.jsonl", SECRET, BOB),
             "b": transcript(projects / "-work-b" / "s2.jsonl", SECRET)}
    base = ["--set", f"store.path={db}", "--set", f"injection.file={tmp_path / 'persona-{profile}.md'}"]
    return base, secret, cello, files


def pending(tmp_path: Path, profile: str) -> list[tuple[str, ...]]:
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn:
        return conn.execute("SELECT digest, tokens, chars, short FROM persona_history_scrubs WHERE profile = ?",
                            (profile,)).fetchall()


def interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next scrub is stopped (Ctrl-C) after the erasure committed, as a kill would stop it."""
    def stop(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt
    monkeypatch.setattr(host_histories, "_scrub_host", stop)


def test_a_forget_stopped_mid_scrub_is_finished_by_persona_scrub_and_its_temp_files_swept(
        tmp_path: Path, setup: tuple[list[str], int, int, dict[str, Path]], monkeypatch: pytest.MonkeyPatch) -> None:
    base, secret, _, files = setup
    with monkeypatch.context() as patch:
        interrupted(patch)
        stopped = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    assert stopped.exit_code == 130  # Ctrl-C
    assert all("Quetzal" in path.read_text("utf-8") for path in files.values())
    journal = pending(tmp_path, "alice")
    assert journal and all("Quetzal" not in str(row) and "quetzal" not in str(row) for row in journal)
    assert (tmp_path / "m.db").read_bytes().find(b"Quetzal") == -1  # the journal holds hashes, never the text
    left = files["a"].with_name(".s1.jsonl.persona-scrub-0123456789ab")
    left.write_bytes(files["a"].read_bytes())  # the full-size copy a kill leaves beside the transcript
    again = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    assert again.exit_code == 1 and "no persona fact" in again.stderr
    done = runner.invoke(app, [*base, "scrub", "-p", "alice"])
    assert done.exit_code == 0, done.output
    assert "removed 1 temporary file an interrupted scrub had left" in done.stdout
    assert "replaced the text with [forgotten] in 2 host history files:" in done.stdout
    assert not left.exists() and pending(tmp_path, "alice") == []
    assert all("Quetzal" not in path.read_text("utf-8") for path in files.values())
    assert BOB in files["a"].read_text("utf-8")


def test_status_shows_a_pending_scrub_and_finishes_it(
        tmp_path: Path, setup: tuple[list[str], int, int, dict[str, Path]], monkeypatch: pytest.MonkeyPatch) -> None:
    base, secret, _, files = setup
    with monkeypatch.context() as patch:
        interrupted(patch)
        runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    shown = runner.invoke(app, [*base, "status", "-p", "alice", "--json"])
    assert shown.exit_code == 0, shown.output
    scrub = json.loads(shown.stdout)["history_scrub"]
    assert scrub["pending"] == 0 and scrub["since"] and len(scrub["finished"]["files"]) == 2
    assert all("Quetzal" not in path.read_text("utf-8") for path in files.values())
    plain = runner.invoke(app, [*base, "status", "-p", "alice"])
    assert "host histories" not in plain.stdout  # nothing pending any more


def test_the_next_forget_finishes_a_pending_scrub_and_another_profiles_stays_its_own(
        tmp_path: Path, setup: tuple[list[str], int, int, dict[str, Path]], monkeypatch: pytest.MonkeyPatch) -> None:
    base, secret, cello, files = setup
    with monkeypatch.context() as patch:
        interrupted(patch)
        runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    bobs = runner.invoke(app, [*base, "scrub", "-p", "bob"])  # Bob's scrub: nothing of Alice's
    assert bobs.exit_code == 0 and "Quetzal" in files["b"].read_text("utf-8") and pending(tmp_path, "alice")
    with PersonaStore(tmp_path / "m.db", profile="alice") as alice:
        other = alice.add("Answers tersely and skips the preamble", topic="style").fact.id
    done = runner.invoke(app, [*base, "forget", str(other), "-p", "alice"])
    assert done.exit_code == 0, done.output
    assert "Quetzal" not in files["a"].read_text("utf-8") + files["b"].read_text("utf-8")
    assert pending(tmp_path, "alice") == [] and BOB in files["a"].read_text("utf-8")
    assert runner.invoke(app, [*base, "forget", str(cello), "-p", "bob"]).exit_code == 0
    assert BOB not in files["a"].read_text("utf-8")


def test_a_full_disk_leaves_the_scrub_pending_and_a_later_scrub_finishes_it(
        tmp_path: Path, setup: tuple[list[str], int, int, dict[str, Path]], monkeypatch: pytest.MonkeyPatch) -> None:
    base, secret, _, files = setup
    write = json_scrub._write_all

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(json_scrub, "_write_all", full)
    done = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice"])
    assert done.exit_code == 1
    assert f"warning: {files['a']} (Claude Code) still holds the text: it cannot be read or replaced: No space " \
           "left on device" in done.stderr
    assert "the scrub of the hosts' histories is pending" in done.stderr
    assert not list(files["a"].parent.glob(".*persona-scrub*"))  # no copy left beside it
    monkeypatch.setattr(json_scrub, "_write_all", write)
    assert runner.invoke(app, [*base, "scrub", "-p", "alice"]).exit_code == 0
    assert "Quetzal" not in files["a"].read_text("utf-8") and pending(tmp_path, "alice") == []


def test_keep_host_histories_journals_nothing(tmp_path: Path,
                                              setup: tuple[list[str], int, int, dict[str, Path]]) -> None:
    base, secret, _, files = setup
    done = runner.invoke(app, [*base, "forget", str(secret), "-p", "alice", "--keep-host-histories"])
    assert done.exit_code == 0, done.output
    assert pending(tmp_path, "alice") == [] and all("Quetzal" in p.read_text("utf-8") for p in files.values())
