"""Forget for real: `persona forget`, the persona_forget tool and `persona profile erase`, on both backends.

After a forget the fact's text is in none of the database's raw bytes (file and -wal), no rendered file,
no snapshot row and no stored block; the other profile keeps everything; the same memory is never taken
in again unless the user forces it.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pipeline import PersonaStore, load_settings
from pipeline.cli import app
from pipeline.inject.sessions import SessionSnapshots
from pipeline.integrations.tools import PersonaTools, call

SECRET = "Alice lives at 12 Rue Secrete"
KEPT = "Alice answers tersely."
BOB = "Bob plays the cello."
runner = CliRunner()


def settings_of(database, tmp_path: Path):
    return load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "persona-{profile}.md"),
                                    "targets.block.output": "store", "injection.enabled": True,
                                    "injection.mode": "session"})


def seed(settings) -> int:
    """Both profiles with facts, rendered, each with a session snapshot; the secret demoted once and re-added."""
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        first = alice.add(SECRET, topic="home").fact.id
        alice.demote(first)  # its tombstone holds the text too
        secret = alice.add(SECRET, topic="home", force=True).fact.id
        alice.add(KEPT, topic="style")
    with PersonaStore.from_settings(settings, profile="bob") as bob:
        bob.add(BOB, topic="music")
    for profile in ("alice", "bob"):
        with SessionSnapshots(settings, store=PersonaStore.from_settings(settings, profile=profile)) as snapshots:
            snapshots.snapshot("s1")
    return secret


def rows_text(database) -> str:
    tables = ["memoria_persona", "memoria_preferences", "persona_snapshots", "persona_blocks", "persona_runs"]
    return json.dumps([database.rows(table) for table in tables], default=str)


def files_text(tmp_path: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(tmp_path.rglob("*")) if path.is_file())


def test_after_forget_the_text_is_in_no_row_block_snapshot_or_rendered_file(database, tmp_path):
    settings = settings_of(database, tmp_path)
    secret = seed(settings)
    assert SECRET in rows_text(database) and SECRET.encode() in (tmp_path / "persona-alice.md").read_bytes()
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        answer = call(PersonaTools(lambda: settings).catalog(legacy=False), "persona_forget",
                      {"persona_id": secret}, {"profile": "alice", "session": None})
        assert answer["status"] == "ok" and answer["forgotten"] is True
        assert answer["tombstones"] == 1 and answer["snapshots"] == 1 and answer["blocks"] == 1
        assert "next request" in answer["takes_effect"]
        assert [fact.content for fact in alice.list()] == [KEPT]
    stored = rows_text(database)
    assert SECRET not in stored and KEPT in stored and BOB in stored  # bob's rows are untouched
    rendered = (tmp_path / "persona-alice.md").read_text()
    assert SECRET not in rendered and KEPT in rendered
    assert BOB in (tmp_path / "persona-bob.md").read_text() and BOB not in rendered
    if not database.is_postgres:  # every byte of the directory: the database, its -wal, every file
        assert SECRET.encode() not in files_text(tmp_path)
        assert BOB.encode() in files_text(tmp_path)


def test_the_sqlite_file_and_wal_hold_no_copy_while_a_host_keeps_its_connection_open(tmp_path):
    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db"), "targets.block.output": "store",
                                        "injection.file": str(tmp_path / "persona-{profile}.md")})
    secret = seed(settings)
    host = SessionSnapshots(settings, store=PersonaStore.from_settings(settings, profile="alice"))
    assert SECRET in host.snapshot("s2").text  # a host that stays open keeps the -wal in place
    PersonaTools(lambda: settings).catalog(legacy=False)["persona_forget"](persona_id=secret, profile="alice")
    assert (tmp_path / "m.db-wal").exists()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p.name.startswith("m.db"))
    assert SECRET.encode() not in raw and BOB.encode() in raw
    assert host.get("s2") is None  # the snapshot that held it is gone; the next request records a new one
    assert SECRET not in host.snapshot("s2").text and KEPT in host.snapshot("s2").text
    host.close()


def test_a_forgotten_memory_is_never_proposed_or_promoted_again_but_only_in_its_profile(database, tmp_path):
    settings = settings_of(database, tmp_path)
    database.store().open()
    database.add_memory("m1", SECRET, source="preference", importance=0.9, session="alice")
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        fact = alice.promote("m1").fact
        from pipeline.schedule.forget import forget

        forget(settings, alice, fact.id)
        refused = runner.invoke(app, [*overrides(database, tmp_path), "promote", "m1", "-p", "alice"])
        assert refused.exit_code == 1 and "forgotten" in refused.stderr
        again = runner.invoke(app, [*overrides(database, tmp_path), "add", SECRET.upper(), "--topic", "x",
                                    "-p", "alice"])
        assert again.exit_code == 1 and "forgotten" in again.stderr  # case and spacing do not make it new
    with PersonaStore.from_settings(settings, profile="bob") as bob:
        assert bob.add(SECRET, topic="home").created  # bob never forgot it
    forced = runner.invoke(app, [*overrides(database, tmp_path), "promote", "m1", "--force", "-p", "alice"])
    assert forced.exit_code == 0, forced.stderr


def overrides(database, tmp_path: Path) -> list[str]:
    found = [f"{key}={value}" for key, value in database.settings().items()]
    found += [f"injection.file={tmp_path / 'persona-{profile}.md'}", "targets.block.output=store"]
    return [part for pair in found for part in ("--set", pair)]


def test_cli_forget_and_profile_erase_leave_the_other_profile_whole(database, tmp_path):
    settings = settings_of(database, tmp_path)
    secret = seed(settings)
    forgot = runner.invoke(app, [*overrides(database, tmp_path), "forget", str(secret), "-p", "alice", "--json"])
    assert forgot.exit_code == 0, forgot.stderr
    assert json.loads(forgot.stdout)["facts"] == [secret]
    missing = runner.invoke(app, [*overrides(database, tmp_path), "forget", str(secret), "-p", "alice"])
    assert missing.exit_code == 1 and "no persona fact" in missing.stderr
    erased = runner.invoke(app, [*overrides(database, tmp_path), "profile", "erase", "alice", "--yes", "--json"])
    assert erased.exit_code == 0, erased.stderr
    stored = rows_text(database)
    assert KEPT not in stored and SECRET not in stored and BOB in stored
    assert KEPT not in (tmp_path / "persona-alice.md").read_text()
    assert BOB in (tmp_path / "persona-bob.md").read_text()
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        assert alice.list() == []
        assert "forgotten" in runner.invoke(app, [*overrides(database, tmp_path), "add", KEPT, "--topic", "s",
                                                  "-p", "alice"]).stderr


def test_a_forgotten_memory_is_not_proposed_as_a_candidate_in_its_profile_only(database, tmp_path):
    settings = settings_of(database, tmp_path)
    settings = settings.model_copy(update={"pipeline": [{"extract": {"candidates": True}}, "rank", "render", "cap",
                                                        "write"]})
    database.store().open()
    for profile in ("alice", "bob"):
        database.add_memory(f"m-{profile}", SECRET, source="preference", importance=0.9, session=profile)
    from pipeline.schedule.forget import forget
    from pipeline.stages.runner import run_pipeline

    with PersonaStore.from_settings(settings, profile="alice") as alice:
        forget(settings, alice, alice.promote("m-alice").fact.id)
        run_pipeline(settings, store=alice)
    with PersonaStore.from_settings(settings, profile="bob") as bob:
        run_pipeline(settings, store=bob)
    assert SECRET not in (tmp_path / "persona-alice.md").read_text()
    assert SECRET in (tmp_path / "persona-bob.md").read_text()  # bob's own memory is still proposed to bob
