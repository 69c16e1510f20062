"""Triggers, tick and watch: each condition fires and does not fire, from database state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, evaluate, load_settings, tick
from pipeline.cli import app
from pipeline.schedule.tick import Regenerator
from pipeline.schedule.triggers import daily_slot

from ..conftest import REPO, local_settings, write


@pytest.fixture
def settings(tmp_path, database):
    """Every trigger on both backends."""
    return local_settings(tmp_path, {"triggers.interval": 5}, database=database, persona="persona.md")


def fired(settings, store, **kwargs) -> dict[str, bool]:
    return {t.name: t.fired for t in evaluate(settings, store, **kwargs)}


def settle(settings, store) -> None:
    """A first render, so that every trigger has a reference point."""
    tick(settings, store=store, force=True)
    assert not any(fired(settings, store).values())


def test_explicit_fires_only_with_force(settings, store):
    settle(settings, store)
    assert fired(settings, store, force=True)["explicit"]
    assert not fired(settings, store)["explicit"]


def test_cold_start_fires_when_the_file_is_missing(settings, store, tmp_path):
    assert fired(settings, store)["cold_start"]
    settle(settings, store)
    assert not fired(settings, store)["cold_start"]
    (tmp_path / "persona.md").unlink()
    assert fired(settings, store)["cold_start"]


def test_recovery_fires_for_an_emptied_or_unreadable_file(settings, store, tmp_path):
    store.add("x", topic="t")
    settle(settings, store)
    write(tmp_path / "persona.md", "")
    states = {t.name: t for t in evaluate(settings, store)}
    assert states["recovery"].fired and "is empty but its last render was not" in states["recovery"].reason
    tick(settings, store=store)
    (tmp_path / "persona.md").unlink()
    (tmp_path / "persona.md").mkdir()
    assert fired(settings, store)["recovery"]


def test_an_empty_file_for_an_empty_store_is_not_a_recovery(settings, store):
    settle(settings, store)  # renders the empty persona: an empty file, rightly
    assert not fired(settings, store)["recovery"]


def test_interval_fires_on_an_empty_persona_table_and_stops_after_a_render(settings, store, database):
    settle(settings, store)
    for i in range(4):
        database.add_memory(f"m{i}", "note")
    assert not fired(settings, store)["interval"]
    database.add_memory("m4", "note")
    assert fired(settings, store)["interval"]  # the existing tier never fired with no persona rows
    result = tick(settings, store=store)
    assert result.rendered and "interval" in result.reason
    assert not fired(settings, store)["interval"]  # ... and kept firing after a render


def test_daily_sync_fires_once_per_day_at_or_after_the_hour(settings, store, clock):
    clock.now = datetime(2026, 5, 10, 2, 0, tzinfo=UTC)
    settle(settings, store)
    clock.now = datetime(2026, 5, 10, 2, 59, tzinfo=UTC)
    assert not fired(settings, store)["daily_sync"]
    clock.now = datetime(2026, 5, 10, 3, 0, tzinfo=UTC)
    assert fired(settings, store)["daily_sync"]
    tick(settings, store=store)
    clock.now = datetime(2026, 5, 10, 3, 30, tzinfo=UTC)
    assert not fired(settings, store)["daily_sync"]  # not for the whole hour
    clock.now = datetime(2026, 5, 10, 23, 0, tzinfo=UTC)
    assert not fired(settings, store)["daily_sync"]


def test_daily_sync_catches_up_a_missed_hour(settings, store, clock):
    clock.now = datetime(2026, 5, 10, 2, 0, tzinfo=UTC)
    settle(settings, store)
    clock.now = datetime(2026, 5, 11, 1, 0, tzinfo=UTC)  # nothing ran at 03:00 on the 10th
    assert fired(settings, store)["daily_sync"]
    clock.now = datetime(2026, 5, 12, 9, 0, tzinfo=UTC)
    tick(settings, store=store)
    assert not fired(settings, store)["daily_sync"]


@pytest.mark.parametrize("hour", [-1, 24, 99])
def test_daily_sync_hour_outside_0_23_disables_it(tmp_path, hour, clock):
    settings = local_settings(tmp_path, {"triggers.daily_sync_hour": hour})
    with PersonaStore.from_settings(settings, clock=clock) as store:
        state = {t.name: t for t in evaluate(settings, store)}["daily_sync"]
    assert not state.enabled and not state.fired and "outside 0-23" in state.reason


def test_daily_slot():
    assert daily_slot(datetime(2026, 1, 2, 5, tzinfo=UTC), 3) == datetime(2026, 1, 2, 3, tzinfo=UTC)
    assert daily_slot(datetime(2026, 1, 2, 1, tzinfo=UTC), 3) == datetime(2026, 1, 1, 3, tzinfo=UTC)


@pytest.mark.parametrize("change", ["add", "reinforce", "demote", "promote", "import"])
def test_store_changed_fires_after_each_kind_of_change(settings, store, tmp_path, change, database):
    fact = store.add("x", topic="t").fact
    database.add_memory("m1", "promotable")
    settle(settings, store)
    if change == "add":
        store.add("y", topic="t")
    elif change == "reinforce":
        store.reinforce(fact.id)
    elif change == "demote":
        store.demote(fact.id)
    elif change == "promote":
        store.promote("m1")
    else:
        from pipeline import import_facts

        import_facts(store, write(tmp_path / "f.yaml", "- {topic: t, content: z}\n"))
    assert fired(settings, store)["store_changed"]


def test_config_changed_fires_for_settings_and_template_changes(settings, store, tmp_path):
    settle(settings, store)
    assert fired(settings.model_copy(update={"cap": settings.cap.model_copy(update={"token_cap": 99})}),
                 store)["config_changed"]
    mine = tmp_path / "templates"
    write(mine / "persona.md.j2", "{% for s in persona.sections %}{{ s.topic }}\n{% endfor %}")
    custom = settings.model_copy(update={"render": settings.render.model_copy(update={"template_dirs": [mine]})})
    tick(custom, store=store, force=True)
    assert not fired(custom, store)["config_changed"]
    write(mine / "persona.md.j2", "{% for s in persona.sections %}* {{ s.topic }}\n{% endfor %}")
    assert fired(custom, store)["config_changed"]


def test_each_trigger_can_be_switched_off(tmp_path, clock):
    names = ["explicit", "cold_start", "recovery", "on_interval", "daily_sync", "store_changed", "config_changed"]
    settings = local_settings(tmp_path, {"injection.file": str(tmp_path / "p.md"),
                                        **{f"triggers.{name}": False for name in names}})
    with PersonaStore.from_settings(settings, clock=clock) as store:
        store.add("x", topic="t")
        states = evaluate(settings, store, force=True)
        assert not any(s.fired for s in states) and not any(s.enabled for s in states)
        assert not tick(settings, store=store, force=True).rendered


# -- tick ---------------------------------------------------------------------------


def test_tick_is_idempotent(settings, store, database):
    store.add("x", topic="t")
    first = tick(settings, store=store)
    assert first.rendered and "cold_start" in first.reason
    second = tick(settings, store=store)
    assert not second.rendered and second.reason == "no trigger fired"
    assert database.execute("SELECT COUNT(*) FROM persona_runs") == [(1,)]


def test_the_run_log_keeps_each_profiles_newest_runs_only(tmp_path, database, clock):
    settings = load_settings(overrides={**database.settings(), "store.keep_runs": 3,
                                        "injection.file": str(tmp_path / "persona-{profile}.md")})
    stores = {name: PersonaStore.from_settings(settings, profile=name, clock=clock) for name in ("alice", "bob")}
    stores["bob"].add("bob's rule", topic="t")
    tick(settings, store=stores["bob"])
    stores["alice"].add("alice's rule", topic="t")
    for _ in range(6):
        tick(settings, store=stores["alice"], force=True)
    runs = database.execute("SELECT session_id, id FROM persona_runs ORDER BY id")
    assert [name for name, _ in runs] == ["bob", "alice", "alice", "alice"]  # bob's one run is not alice's to prune
    assert [run_id for _, run_id in runs[1:]] == [5, 6, 7]  # alice's three newest of six
    assert not tick(settings, store=stores["alice"]).rendered  # the triggers read the newest: nothing to do
    for store in stores.values():
        store.close()


def test_tick_records_the_reason(settings, store, database):
    store.add("x", topic="t")
    tick(settings, store=store)
    reason = database.execute("SELECT reason FROM persona_runs")[0][0]
    assert reason.startswith("cold_start: no persona file at ")


def test_regenerator_counts_in_memory_then_asks_the_database(settings, clock, database):
    regenerator = Regenerator(settings, clock=clock)
    with PersonaStore.from_settings(settings, clock=clock) as store:
        store.add("x", topic="t")
        tick(settings, store=store)
    for i in range(4):
        database.add_memory(f"m{i}", "note")
        assert regenerator.notify_memory_written() is None
    database.add_memory("m4", "note")
    result = regenerator.notify_memory_written()
    assert result is not None and result.rendered and "interval" in result.reason
    assert not regenerator.maybe_regenerate().rendered


TICK_SCRIPT = """
import json, sys, time
from pathlib import Path
from pipeline import load_settings
from pipeline import PersonaStore
from pipeline import tick
settings = load_settings(overrides={"store.url": sys.argv[1], "injection.file": sys.argv[2]})
go = Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
with PersonaStore.from_settings(settings) as store:
    print(json.dumps(tick(settings, store=store).rendered))
"""


@pytest.mark.slow
def test_concurrent_ticks_in_real_processes_render_once(settings, store, tmp_path, database):
    store.add("x", topic="t")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "PYTHONPATH": str(REPO)}
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", TICK_SCRIPT, str(database.target), str(tmp_path / "persona.md"),
                               str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    go.touch()
    outcomes = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert sorted(outcomes) == [False, False, True]
    assert database.execute("SELECT COUNT(*) FROM persona_runs") == [(1,)]


# -- CLI --------------------------------------------------------------------------------


def cli(tmp_path, *args):
    return CliRunner().invoke(app, ["--db", str(tmp_path / "m.db"), "--set",
                                    f"injection.file={tmp_path / 'persona.md'}", *args])


def seed(tmp_path, content: str, *, tier: str = "long_term", profile: str | None = None) -> None:
    """A fact written through the store's API, which renders nothing (`persona add` renders at once)."""
    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db")})
    with PersonaStore.from_settings(settings, profile=profile) as store:
        store.add(content, topic="t", tier=tier)


def test_status_command(tmp_path):
    seed(tmp_path, "x", tier="permanent")
    text = cli(tmp_path, "status").stdout
    assert "cold_start      on       FIRES  no persona file at" in text
    assert "last run: never" in text and "facts: permanent 1, long_term 0, working 0" in text
    cli(tmp_path, "tick")
    data = json.loads(cli(tmp_path, "status", "--json").stdout)
    assert data["last_run"]["generation"] == 1 and not any(t["fired"] for t in data["triggers"])


def test_tick_command(tmp_path):
    seed(tmp_path, "x")
    assert cli(tmp_path, "tick").stdout.startswith("rendered (cold_start: no persona file at")
    assert cli(tmp_path, "tick").stdout == "nothing to do: no trigger fired\n"
    data = json.loads(cli(tmp_path, "tick", "--force", "--json").stdout)
    assert data["rendered"] and data["reason"] == "explicit: --force was given"


def test_tick_all_profiles_on_one_sqlite_host(tmp_path):
    def tick_all(*args):
        return CliRunner().invoke(app, ["--db", str(tmp_path / "m.db"), "--set",
                                        f"injection.file={tmp_path / 'persona-{profile}.md'}", *args])

    for user in ("alice", "bob"):
        seed(tmp_path, f"{user}'s rule", profile=user)
    first = tick_all("tick", "--all-profiles")
    assert first.exit_code == 0, first.output
    assert "alice: rendered" in first.stdout and "bob: rendered" in first.stdout
    assert "bob's rule" in (tmp_path / "persona-bob.md").read_text()
    assert "alice" not in (tmp_path / "persona-bob.md").read_text()
    assert "2 profiles: 0 rendered, 2 nothing to do" in tick_all("tick", "--all-profiles").stdout
    refused = tick_all("tick", "--all-profiles", "--profile", "bob")
    assert refused.exit_code == 1 and "leave out --profile" in refused.stderr


def test_tick_all_profiles_warns_once_about_profiles_with_no_file_in_a_shared_target(tmp_path):
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / 'persona.md'}"]
    for user in ("bob", "carol"):
        CliRunner().invoke(app, [*base, "add", f"{user} rule.", "--topic", "t", "--profile", user])
    result = CliRunner().invoke(app, [*base, "tick", "--all-profiles"])
    # One file for every profile would mix users: it is store.profile's alone; the others are told what to set.
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning:") == 1 and "2 profiles not rendered into every target" in result.stderr
    assert "put {profile} in injection.file" in result.stderr
    assert not (tmp_path / "persona.md").exists() or "rule" not in (tmp_path / "persona.md").read_text()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_watch_stops_cleanly_on_a_signal(tmp_path, sig):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    db, out = tmp_path / "m.db", tmp_path / "persona.md"
    with PersonaStore(db) as store:
        store.add("x", topic="t")
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "--db", str(db), "--set", f"injection.file={out}",
                             "watch", "--every", "0.1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + 60
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.exists(), "watch never rendered"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert "rendered (cold_start" in stdout and "watch stopped" in stderr and "Traceback" not in stderr


def test_clock_moves_are_respected_by_status(settings, store, clock):
    settle(settings, store)
    clock.now += timedelta(days=1)
    assert fired(settings, store)["daily_sync"]


def _wait_for(predicate, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_watch_survives_a_bad_config_and_picks_up_edits(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    db, out, config = tmp_path / "m.db", tmp_path / "persona.md", tmp_path / "persona.yaml"
    write(config, "cap:\n  token_cap: 1500\n")
    with PersonaStore(db) as store:
        store.add("x", topic="t")
    stdout, stderr = tmp_path / "watch.out", tmp_path / "watch.err"
    with stdout.open("w") as out_file, stderr.open("w") as err_file:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", "-c", str(config), "--db", str(db), "--set",
                                 f"injection.file={out}", "watch", "--every", "0.1"],
                                stdout=out_file, stderr=err_file, env=env)
        try:
            _wait_for(out.exists, "the first render")
            write(config, "cap:\n  token_cap: lots\n")
            _wait_for(lambda: "tick failed" in stderr.read_text(), "the bad config to be reported")
            write(config, "cap:\n  token_cap: 900\n")
            _wait_for(lambda: "config_changed" in stdout.read_text(), "the edit to be picked up")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    assert proc.returncode == 0
    assert "cap.token_cap" in stderr.read_text() and "Traceback" not in stderr.read_text()


def test_a_fifo_at_the_persona_path_is_a_recovery_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "persona.md")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pipeline", "--db", str(tmp_path / "m.db"), "--set",
                           f"injection.file={tmp_path / 'persona.md'}", "status", "--json"],
                          capture_output=True, text=True, env=env, timeout=60)
    recovery = {t["name"]: t for t in json.loads(done.stdout)["triggers"]}["recovery"]
    assert recovery["fired"] and "is not a regular file (a FIFO)" in recovery["reason"]
