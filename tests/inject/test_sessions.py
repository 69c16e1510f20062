"""Session snapshots: first write wins, refresh only at compaction, byte-stable otherwise."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaInjector, PersonaPromptMixin, PersonaStore, SessionSnapshots, load_settings, run_pipeline
from pipeline.cli import app
from pipeline.store.snapshots import digest

from ..conftest import REPO, local_settings, obeying_file_modes, write

HEADER = "\n\n# L3 Persona (Active Behavioral Rules)\n"
V1 = "## style\n\n- Answers tersely.\n"
V2 = "## style\n\n- Answers in full sentences.\n"


@pytest.fixture
def settings(tmp_path):
    return local_settings(tmp_path, {
        "injection.file": str(tmp_path / "persona.md"),
        "injection.enabled": True, "injection.mode": "session",
    })


@pytest.fixture
def persona(tmp_path) -> Path:
    return write(tmp_path / "persona.md", V1)


@pytest.fixture
def snapshots(settings, persona, clock):
    clock.step = timedelta(seconds=1)  # every reading is later, so a rewrite would show in recorded_at
    opened = SessionSnapshots(settings, clock=clock)
    yield opened
    opened.close()


def row(settings, session_id: str) -> tuple:
    with sqlite3.connect(settings.store.path) as conn:
        return conn.execute("SELECT * FROM persona_snapshots WHERE session_id = ?", (session_id,)).fetchone()


def test_first_write_wins(snapshots, persona):
    first = snapshots.snapshot("s1")
    assert (first.text, first.generation, first.sha256) == (V1, 1, digest(V1))
    write(persona, V2)
    assert snapshots.snapshot("s1") == first


def test_changed_file_and_one_compaction_moves_to_the_new_version(snapshots, persona, settings):
    snapshots.snapshot("s1")
    write(persona, V2)
    result = snapshots.refresh_at_compaction("s1")
    assert (result.changed, result.generation) == (True, 2)
    assert snapshots.snapshot("s1").text == V2
    assert row(settings, "s1")[3:6] == (V2, digest(V2), 2)


def test_unchanged_file_leaves_the_row_byte_identical(snapshots, settings):
    snapshots.snapshot("s1")
    before = row(settings, "s1")
    result = snapshots.refresh_at_compaction("s1")
    assert (result.changed, result.generation) == (False, 1)
    assert row(settings, "s1") == before  # timestamps included


def test_rest_of_prefix_is_invariant_across_a_refresh(snapshots, persona):
    prompt = "You are Hermes.\nTools: search, shell.\n" * 20
    before = snapshots.assemble(prompt, "s1")
    write(persona, V2)
    snapshots.refresh_at_compaction("s1")
    after = snapshots.assemble(prompt, "s1")
    assert before.startswith(prompt + HEADER) and after.startswith(prompt + HEADER)
    assert before[len(prompt + HEADER):] == V1 and after[len(prompt + HEADER):] == V2


def test_one_voice_per_generation(snapshots, persona):
    seen = {snapshots.snapshot("s1").text}
    for version in ("## a\n\n- one\n", "## a\n\n- two\n", V2):
        write(persona, version)
        seen.add(snapshots.snapshot("s1").text)
    assert seen == {V1}
    snapshots.refresh_at_compaction("s1")
    write(persona, V1)
    assert snapshots.snapshot("s1").text == V2


def test_sessions_are_isolated(snapshots, persona, settings):
    snapshots.snapshot("a")
    snapshots.snapshot("b")
    b_before = row(settings, "b")
    write(persona, V2)
    snapshots.refresh_at_compaction("a")
    assert row(settings, "b") == b_before
    assert snapshots.snapshot("b").text == V1 and snapshots.snapshot("a").text == V2


def test_the_snapshot_is_the_capped_text(settings, persona, tmp_path):
    write(persona, "".join(f"## s{i}\n\n- fact {i} with words\n\n" for i in range(300)))
    small = settings.model_copy(update={"cap": settings.cap.model_copy(update={"token_cap": 100})})
    snapshots = SessionSnapshots(small)
    text = snapshots.snapshot("s1").text
    assert text == PersonaInjector(small.model_copy(update={"injection": small.injection.model_copy(
        update={"mode": "live"})})).block()
    snapshots.close()


# -- error paths ---------------------------------------------------------------------


def test_a_missing_file_and_an_empty_store_pin_nothing(settings, tmp_path):
    snapshots = SessionSnapshots(settings)
    first = snapshots.snapshot("s1")
    assert (first.text, first.generation) == ("", 0)  # not recorded: the next request tries again
    assert row(settings, "s1") is None
    write(tmp_path / "persona.md", V1)
    assert (snapshots.snapshot("s1").text, snapshots.snapshot("s1").generation) == (V1, 1)
    snapshots.close()


def test_a_missing_file_is_rendered_before_the_first_snapshot_when_the_store_has_facts(settings, tmp_path):
    from pipeline import PersonaStore

    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
    with SessionSnapshots(settings) as snapshots:
        first = snapshots.snapshot("s1")
    assert first.generation == 1 and "- Answers tersely." in first.text
    assert (tmp_path / "persona.md").read_text() == first.text


def test_an_emptied_file_is_recorded_as_empty(settings, persona):
    write(persona, "")
    with SessionSnapshots(settings) as snapshots:
        assert (snapshots.snapshot("s1").text, snapshots.snapshot("s1").generation) == ("", 1)


def test_a_directory_at_compaction_keeps_the_old_snapshot_and_warns(snapshots, persona, settings, caplog):
    snapshots.snapshot("s1")
    before = row(settings, "s1")
    persona.unlink()
    persona.mkdir()
    with caplog.at_level(logging.WARNING):
        result = snapshots.refresh_at_compaction("s1")
    assert not result.changed and result.generation == 1 and "directory" in result.error
    assert row(settings, "s1") == before
    assert any("is a directory" in r.getMessage() for r in caplog.records)


def test_a_deleted_file_at_compaction_keeps_the_old_snapshot(snapshots, persona, settings):
    snapshots.snapshot("s1")
    persona.unlink()
    assert not snapshots.refresh_at_compaction("s1").changed
    assert snapshots.snapshot("s1").text == V1


def test_a_deliberately_emptied_file_empties_the_snapshot(snapshots, persona):
    snapshots.snapshot("s1")
    write(persona, "")
    result = snapshots.refresh_at_compaction("s1")
    assert result.changed and snapshots.snapshot("s1").text == ""


def test_a_failed_first_read_is_not_pinned(settings, tmp_path):
    (tmp_path / "persona.md").mkdir()
    snapshots = SessionSnapshots(settings)
    assert snapshots.snapshot("s1").generation == 0
    assert snapshots.get("s1") is None
    (tmp_path / "persona.md").rmdir()
    write(tmp_path / "persona.md", V1)
    assert snapshots.snapshot("s1").text == V1
    snapshots.close()


PERMISSION_SCRIPT = """
import json, sys
from pipeline import SessionSnapshots
from pipeline import load_settings
settings = load_settings(overrides={"store.path": sys.argv[1], "injection.file": sys.argv[2],
                                    "injection.enabled": True, "injection.mode": "session"})
print(json.dumps(SessionSnapshots(settings).refresh_at_compaction("s1").to_dict()))
"""


def test_permission_denied_at_compaction_keeps_the_old_snapshot(tmp_path, settings, persona):
    with SessionSnapshots(settings) as snapshots:
        snapshots.snapshot("s1")
    write(persona, V2)
    persona.chmod(0o000)  # the child may use the database, but not read the new persona
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "PYTHONPATH": str(REPO)}
    done = subprocess.run([*obeying_file_modes(), sys.executable, "-c", PERMISSION_SCRIPT, str(settings.store.path),
                           str(persona)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["changed"], result["generation"]) == (False, 1), done.stderr
    assert "permission denied" in result["error"]
    assert "is not readable (permission denied)" in done.stderr
    assert SessionSnapshots(settings).snapshot("s1").text == V1


# -- concurrency ------------------------------------------------------------------------

REFRESH_SCRIPT = """
import json, sys, time
from pathlib import Path
from pipeline import SessionSnapshots
from pipeline import load_settings
settings = load_settings(overrides={"store.path": sys.argv[1], "injection.file": sys.argv[2],
                                    "injection.enabled": True, "injection.mode": "session"})
go = Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
print(json.dumps(SessionSnapshots(settings).refresh_at_compaction("s1").to_dict()))
"""


@pytest.mark.slow
def test_two_processes_refreshing_at_once_leave_one_consistent_row(snapshots, persona, settings, tmp_path):
    snapshots.snapshot("s1")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "PYTHONPATH": str(REPO)}
    for round_number, version in enumerate([V2, V1, "## x\n\n- third\n"], start=2):
        write(persona, version)
        go = tmp_path / f"go-{round_number}"
        procs = [subprocess.Popen([sys.executable, "-c", REFRESH_SCRIPT, str(settings.store.path), str(persona),
                                   str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(2)]
        go.touch()
        results = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
        assert sorted(r["changed"] for r in results) == [False, True]
        assert {r["generation"] for r in results} == {round_number}
        with sqlite3.connect(settings.store.path) as conn:
            rows = conn.execute("SELECT text, sha256, generation FROM persona_snapshots").fetchall()
        assert rows == [(version, digest(version), round_number)]


# -- the injector, the mixin and the CLI in session mode ------------------------------


def test_injector_in_session_mode_keeps_its_voice_until_compaction(settings, persona):
    injector = PersonaInjector(settings, session_id="s1")
    assert injector.inject("S") == "S" + HEADER + V1
    write(persona, V2)
    assert injector.inject("S") == "S" + HEADER + V1
    assert injector.refresh_at_compaction().changed
    assert injector.inject("S") == "S" + HEADER + V2
    injector.close()


def test_injector_session_switch_inherits_the_parent(settings, persona):
    injector = PersonaInjector(settings, session_id="parent")
    injector.block()
    write(persona, V2)
    injector.switch_session("child", parent_session_id="parent")
    assert injector.block() == V1  # the continuing session keeps its voice
    injector.switch_session("fresh")
    assert injector.block() == V2  # a genuinely new session records the file as it is now
    injector.close()


def test_session_mode_disabled_touches_nothing(settings, persona, tmp_path):
    disabled = settings.model_copy(update={"injection": settings.injection.model_copy(update={"enabled": False})})
    assert PersonaInjector(disabled, session_id="s1").block() == ""
    assert not (tmp_path / "m.db").exists()


def test_session_mode_with_a_broken_database_degrades(tmp_path, persona, caplog):
    (tmp_path / "bad.db").write_bytes(b"not sqlite" * 200)
    broken = load_settings(overrides={"store.path": str(tmp_path / "bad.db"), "injection.file": str(persona),
                                      "injection.enabled": True, "injection.mode": "session"})
    with caplog.at_level(logging.WARNING):
        assert PersonaInjector(broken, session_id="s1").inject("S") == "S" + HEADER + V1  # the file, unpinned
    assert any("not a SQLite database" in r.getMessage() for r in caplog.records)


def test_a_write_locked_database_never_stalls_the_session_prompt(tmp_path):
    persona = write(tmp_path / "persona.md", "## a\n\n- b\n")
    settings = local_settings(tmp_path, {"injection.file": str(persona),
                                        "injection.enabled": True, "injection.mode": "session"})
    PersonaStore.from_settings(settings).open()
    with closing(sqlite3.connect(tmp_path / "m.db", isolation_level=None)) as locker:
        locker.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        blocks = [PersonaInjector(settings, session_id=f"s{i}").block() for i in range(5)]
        elapsed = time.monotonic() - started
        locker.execute("ROLLBACK")
    assert blocks == ["## a\n\n- b\n"] * 5 and elapsed < 2  # 5 x 50 ms at most, not 5 x 5 s


class Agent(PersonaPromptMixin):
    def __init__(self, settings, session_id):
        self.persona_settings, self.persona_session_id = settings, session_id


def test_the_mixin_honours_session_mode(settings, persona):
    agent = Agent(settings, "s1")
    assert agent._with_persona_block("S") == "S" + HEADER + V1
    write(persona, V2)
    assert agent._persona_block() == V1
    assert agent._persona_refresh_at_compaction() is True
    assert agent._persona_block() == V2
    assert agent._persona_refresh_at_compaction() is False


def test_session_cli(tmp_path, persona):
    runner = CliRunner()
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={persona}"]
    shown = runner.invoke(app, [*base, "session", "show", "s1", "--json"])
    assert json.loads(shown.stdout)["generation"] == 1
    plain = runner.invoke(app, [*base, "session", "show", "s1"])
    assert plain.stdout == V1 and "generation 1" in plain.stderr
    assert runner.invoke(app, [*base, "session", "compact", "s1"]).stdout == "unchanged (generation 1)\n"
    write(persona, V2)
    assert runner.invoke(app, [*base, "session", "compact", "s1"]).stdout == "changed (generation 2)\n"
    listed = runner.invoke(app, [*base, "session", "list"]).stdout
    assert listed.splitlines()[1].split()[:2] == ["s1", "2"]
    assert runner.invoke(app, [*base, "session", "delete", "s1"]).stdout == "deleted session s1 (1 snapshot)\n"
    assert runner.invoke(app, [*base, "session", "list"]).stdout == "no session snapshots\n"


def test_the_old_session_forget_still_deletes_and_says_it_is_deprecated(tmp_path):
    """"forget" means only the privacy erasure now; the old command name works one more release."""
    runner = CliRunner()
    persona = write(tmp_path / "p.md", V1)
    base = ["--set", f"store.path={tmp_path / 'm.db'}", "--set", f"injection.file={persona}"]
    runner.invoke(app, [*base, "session", "show", "s1"])
    old = runner.invoke(app, [*base, "session", "forget", "s1"])
    assert old.exit_code == 0 and old.stdout == "deleted session s1 (1 snapshot)\n"
    assert "`persona session forget` is deprecated; call it `persona session delete`" in old.stderr
    assert runner.invoke(app, [*base, "session", "list"]).stdout == "no session snapshots\n"
    assert "forget" not in runner.invoke(app, ["session", "--help"]).stdout


def test_session_mode_warm_block_makes_no_syscall(settings, persona, monkeypatch):
    import builtins

    injector = PersonaInjector(settings, session_id="s1")
    first = injector.block()
    calls = []
    monkeypatch.setattr(os, "stat", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(builtins, "open", lambda *a, **k: calls.append(a))
    assert [injector.block() for _ in range(100)] == [first] * 100
    assert calls == []
    injector.close()


FIRST_TURN = """
import json, sys
from pipeline import SessionSnapshots
from pipeline import load_settings
settings = load_settings(overrides={"store.path": sys.argv[1], "injection.file": sys.argv[2],
                                    "injection.enabled": True, "injection.mode": "session"})
snapshots = SessionSnapshots(settings)
print(json.dumps(snapshots.snapshot("first").text))
print("toktok" in sys.modules)
"""


def test_a_sessions_first_snapshot_of_a_rendered_file_needs_no_tokenizer(tmp_path):
    # The host's first turn: the render recorded the file's exact count, so the tokenizer
    # (most of a second to load) stays unloaded, and the snapshot is what counting gives.
    db, persona = tmp_path / "m.db", tmp_path / "persona.md"
    settings = load_settings(overrides={"store.path": str(db), "injection.file": str(persona),
                                        "injection.enabled": True, "injection.mode": "session"})
    with PersonaStore.from_settings(settings) as store:  # the host's own settings: nothing is due at its start
        for i in range(30):
            store.add(f"Keeps replies short, rule {i}", topic=f"topic {i % 4}")
        run_pipeline(settings, store=store)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", FIRST_TURN, str(db), str(persona)], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    text, loaded = done.stdout.splitlines()
    assert loaded == "False"
    assert json.loads(text) == PersonaInjector(settings).block() != ""


def test_session_cli_takes_the_profile(tmp_path):
    runner = CliRunner()
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / 'persona-{profile}.md'}"]
    for user in ("alice", "bob"):
        assert runner.invoke(app, [*base, "add", f"{user}'s rule.", "--topic", "t", "--profile", user]).exit_code == 0
    shown = runner.invoke(app, [*base, "session", "show", "chat-1", "--profile", "bob"])
    assert shown.exit_code == 0 and "bob's rule." in shown.stdout and "alice" not in shown.stdout
    assert runner.invoke(app, [*base, "session", "list", "-p", "bob"]).stdout.splitlines()[1].startswith("chat-1")
    assert runner.invoke(app, [*base, "session", "list", "-p", "alice"]).stdout == "no session snapshots\n"
    deleted = runner.invoke(app, [*base, "session", "delete", "chat-1", "--profile", "bob"])
    assert deleted.stdout == "deleted session chat-1 (1 snapshot)\n"
