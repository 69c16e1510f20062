"""Session snapshots no session used within store.keep_snapshot_days are pruned at each tick; live ones never."""

from __future__ import annotations

from datetime import timedelta

from typer.testing import CliRunner

from pipeline import PersonaStore, SessionSnapshots, tick
from pipeline.cli import app

from ..conftest import local_settings, write

runner = CliRunner()
ALICE, BOB = "## style\n\n- Alice's rule.\n", "## style\n\n- Bob's rule.\n"


def settings_of(database, tmp_path, profile, **overrides):
    """Hand-written persona files (no trigger renders over them, so a tick here only prunes)."""
    write(tmp_path / "persona-alice.md", ALICE)
    write(tmp_path / "persona-bob.md", BOB)
    return local_settings(tmp_path, {"injection.mode": "session", "store.profile": profile,
                                     "triggers.cold_start": False, "triggers.daily_sync": False,
                                     "triggers.store_changed": False, **overrides},
                          database=database, persona="persona-{profile}.md")


def sessions(settings, clock) -> SessionSnapshots:
    return SessionSnapshots(settings, clock=clock)


def tick_profile(settings, clock):
    with PersonaStore.from_settings(settings, clock=clock) as store:
        return tick(settings, store=store)


def session_ids(snapshots: SessionSnapshots) -> list[str]:
    return [s.session_id for s in snapshots.list()]


def test_a_tick_prunes_idle_snapshots_and_keeps_live_ones(database, tmp_path, clock):
    alice, bob = settings_of(database, tmp_path, "alice"), settings_of(database, tmp_path, "bob")
    with sessions(alice, clock) as a, sessions(bob, clock) as b:
        for session in ("gone", "live", "parent"):
            a.snapshot(session)
        b.snapshot("gone")
        pinned = a.get("live")
        clock.now += timedelta(days=20)
        assert a.refresh_at_compaction("live").changed is False  # an unchanged compaction still uses the row
        a.inherit("child", "parent")  # compaction under a new id: the child is live, the parent not
        clock.now += timedelta(days=15)

        assert tick_profile(alice, clock).pruned_snapshots == 2
        assert session_ids(a) == ["child", "live"]
        assert a.get("live") == pinned  # the live session's pinned bytes, generation and recorded_at
        assert a.get("child").text == ALICE
        assert session_ids(b) == ["gone"]  # another profile's rows wait for its own tick

        assert tick_profile(bob, clock).pruned_snapshots == 1
        assert session_ids(b) == [] and session_ids(a) == ["child", "live"]
        assert all(BOB not in s.text for s in a.list())
        assert tick_profile(alice, clock).pruned_snapshots == 0


def test_a_session_back_after_the_window_records_the_persona_afresh(database, tmp_path, clock):
    alice = settings_of(database, tmp_path, "alice", **{"store.keep_snapshot_days": 7})
    with sessions(alice, clock) as a:
        a.snapshot("s1")
        clock.now += timedelta(days=8)
        assert tick_profile(alice, clock).pruned_snapshots == 1
        write(tmp_path / "persona-alice.md", "## style\n\n- Alice's new rule.\n")
        again = a.snapshot("s1")
        assert again.generation == 1 and "new rule" in again.text


def test_zero_keeps_every_snapshot(database, tmp_path, clock):
    alice = settings_of(database, tmp_path, "alice", **{"store.keep_snapshot_days": 0})
    with sessions(alice, clock) as a:
        a.snapshot("s1")
        clock.now += timedelta(days=1000)
        assert tick_profile(alice, clock).pruned_snapshots == 0
        assert session_ids(a) == ["s1"]


def test_persona_tick_says_how_many_it_pruned(database, tmp_path):
    alice = settings_of(database, tmp_path, "alice")
    with SessionSnapshots(alice) as a:
        a.snapshot("s1")
        a.snapshot("s2")
    with SessionSnapshots(settings_of(database, tmp_path, "bob")) as b:
        b.snapshot("s1")
    database.execute("UPDATE persona_snapshots SET used_at = '2020-01-01 00:00:00'")
    result = runner.invoke(app, ["--db", str(database.target), "--set",
                                 f"injection.file={tmp_path / 'persona-{profile}.md'}", "--set",
                                 "triggers.store_changed=false", "--set", "triggers.daily_sync=false",
                                 "tick", "--profile", "alice"])
    assert result.exit_code == 0, result.output
    assert "pruned 2 session snapshots unused for 30 days" in result.stdout
    rows = database.execute("SELECT profile, session_id FROM persona_snapshots")
    assert rows == [("bob", "s1")]
