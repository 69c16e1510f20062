"""Retention: permanent never goes, long_term decays, working expires; evictions are sticky tombstones."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from pipeline import InputError, PersonaStore, apply_retention, load_settings, plan_retention, run_pipeline, tick
from pipeline.cli import app
from pipeline.clock import to_db
from pipeline.schedule.retention import effective_confidence

from ..conftest import REPO, local_settings


def make_settings(tmp_path, database=None, **retention):
    rules = {"half_life_days": 10, "evict_below": 0.25, "working_ttl_hours": 48, **retention}
    return local_settings(tmp_path, {f"retention.{k}": v for k, v in rules.items()}, database=database)


@pytest.fixture
def settings(tmp_path, database):
    """Each retention rule on both backends."""
    return make_settings(tmp_path, database)


def test_permanent_never_decays_or_goes(settings, store, clock):
    store.add("forever", topic="t", tier="permanent", confidence=0.01)
    clock.now += timedelta(days=10_000)
    assert plan_retention(store, settings.retention) == []
    assert effective_confidence(0.01, "permanent", 10_000, settings.retention) == 0.01


def test_long_term_decays_by_half_life():
    rules = load_settings(overrides={"retention.half_life_days": 10}).retention
    assert effective_confidence(0.8, "long_term", 10, rules) == pytest.approx(0.4)
    assert effective_confidence(0.8, "long_term", 20, rules) == pytest.approx(0.2)


def test_long_term_eviction_boundary(settings, store, clock):
    # 0.5 * 0.5 ** (days / 10) < 0.25 exactly when days > 10
    store.add("fading", topic="t", confidence=0.5)
    clock.now += timedelta(days=9, hours=23)
    assert plan_retention(store, settings.retention) == []
    clock.now += timedelta(hours=2)
    (action,) = plan_retention(store, settings.retention)
    assert action.action == "evict" and action.effective_confidence < 0.25
    assert "effective confidence 0.2" in action.why and "half-life 10 days" in action.why


def test_reinforcement_resets_the_clock_and_raises_confidence(settings, store, clock):
    fact = store.add("kept alive", topic="t", confidence=0.5).fact
    clock.now += timedelta(days=9)
    again = store.reinforce(fact.id)
    assert again.confidence == pytest.approx(0.55)
    clock.now += timedelta(days=9)
    assert plan_retention(store, settings.retention) == []


def test_confidence_step_is_capped_at_one(settings, store):
    fact = store.add("sure", topic="t", confidence=0.98).fact
    assert store.reinforce(fact.id).confidence == 1.0
    assert store.reinforce(fact.id).confidence == 1.0


def test_working_expiry_boundary(settings, store, clock):
    store.add("today only", topic="t", tier="working")
    clock.now += timedelta(hours=47, minutes=59)
    assert plan_retention(store, settings.retention) == []
    clock.now += timedelta(minutes=1)
    (action,) = plan_retention(store, settings.retention)
    assert action.action == "evict" and "working fact expired: 48.0 h" in action.why


def test_auto_promotion_boundary(tmp_path, clock, database):
    settings = make_settings(tmp_path, database, promote_after=3)
    with PersonaStore.from_settings(settings, clock=clock) as store:
        fact = store.add("habit", topic="t", tier="working").fact
        store.reinforce(fact.id)
        store.reinforce(fact.id)
        assert plan_retention(store, settings.retention) == []
        store.reinforce(fact.id)
        (action,) = apply_retention(store, settings.retention)
        assert action.action == "promote" and store.get(fact.id).tier == "long_term"


def test_a_tick_that_promotes_an_old_fact_also_judges_it_as_long_term(tmp_path, clock, database):
    # Reinforced often, but long ago: promoted out of working, then decayed away, in one tick.
    settings = make_settings(tmp_path, database, promote_after=3)
    with PersonaStore.from_settings(settings, clock=clock) as store:
        fact = store.add("old habit", topic="t", tier="working").fact
        for _ in range(3):
            store.reinforce(fact.id)
        clock.now += timedelta(days=100)  # effective confidence far below evict_below as long_term
        result = tick(settings, store=store)
        assert [action.action for action in result.retention] == ["promote", "evict"]
        assert store.list() == [] and plan_retention(store, settings.retention) == []


def test_eviction_leaves_a_sticky_tombstone(settings, store, clock, database):
    database.add_memory("m1", "Was true once.")
    store.promote("m1")
    clock.now += timedelta(days=100)
    apply_retention(store, settings.retention)
    assert store.list() == []
    preference, reason = database.execute("SELECT preference, context_snippet FROM memoria_preferences")[0]
    assert preference == "[demoted from long_term] Was true once."
    assert reason.startswith("evicted: effective confidence")
    with pytest.raises(InputError, match="memory m1 was demoted"):
        store.promote("m1")


def test_dry_run_changes_nothing(settings, store, clock):
    store.add("fading", topic="t", confidence=0.3)
    clock.now += timedelta(days=100)
    before = [f.to_dict() for f in store.list()]
    generation = store.generation()
    actions = apply_retention(store, settings.retention, dry_run=True)
    assert len(actions) == 1
    assert [f.to_dict() for f in store.list()] == before and store.generation() == generation


def test_retention_can_be_switched_off(tmp_path, clock, database):
    settings = make_settings(tmp_path, database, enabled=False)
    with PersonaStore.from_settings(settings, clock=clock) as store:
        fact = store.add("old", topic="t", tier="working", confidence=0.5).fact
        assert store.reinforce(fact.id).confidence == 0.5  # no confidence step either
        clock.now += timedelta(days=1000)
        assert apply_retention(store, settings.retention) == []
        assert len(store.list()) == 1


def test_decaying_facts_sink_before_they_vanish(settings, store, clock):
    old = store.add("old habit", topic="a", confidence=0.9).fact
    clock.now += timedelta(days=8)
    store.add("new habit", topic="b", confidence=0.6)
    text = run_pipeline(settings, store=store, dry_run=True)[0].text
    assert text.index("new habit") < text.index("old habit")
    assert plan_retention(store, settings.retention) == []  # still there, just lower
    assert store.get(old.id)


def test_tick_applies_retention_before_rendering(settings, store, clock):
    store.add("stays", topic="t", tier="permanent")
    store.add("goes", topic="t", tier="working")
    tick(settings, store=store)
    clock.now += timedelta(days=3)
    result = tick(settings, store=store)
    assert [a.action for a in result.retention] == ["evict"]
    assert result.rendered and "store_changed" in result.reason
    assert "goes" not in result.reports[0].text and "stays" in result.reports[0].text


def test_retention_command_dry_run_and_apply(tmp_path):
    runner = CliRunner()
    base = ["--db", str(tmp_path / "m.db")]
    runner.invoke(app, [*base, "add", "brief", "--topic", "t", "--tier", "working"])
    with sqlite3.connect(tmp_path / "m.db") as conn:  # the CLI runs on the real clock: age the row instead
        conn.execute("UPDATE memoria_persona SET last_reinforced_at = '2000-01-01 00:00:00'")
    dry = runner.invoke(app, [*base, "retention", "--dry-run"])
    assert dry.stdout.startswith("would evict #1 (working, topic t): working fact expired")
    data = json.loads(runner.invoke(app, [*base, "retention", "--dry-run", "--json"]).stdout)
    assert data["dry_run"] and data["actions"][0]["action"] == "evict"
    applied = runner.invoke(app, [*base, "retention"])
    assert applied.stdout.startswith("evicted #1")
    assert runner.invoke(app, [*base, "retention"]).stdout == "nothing to evict or promote\n"


# Host B: holds the profile's write lock, and inside it reinforces the fact host A is about to evict.
HOLD_AND_REINFORCE = """
import sys, time
from pathlib import Path
from pipeline import PersonaStore
target, fact_id, ready, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
with PersonaStore(target, profile="alice", busy_timeout_ms=30000) as store, store.transaction():
    ready.touch()
    while not go.exists():
        time.sleep(0.01)
    store.reinforce(fact_id)
"""


@pytest.mark.slow
def test_a_fact_reinforced_on_another_host_while_a_tick_plans_its_eviction_survives(tmp_path, database):
    """The window is held wide open: host A has read a plan that evicts the fact before host B's reinforce
    commits, and must not act on that stale plan."""
    settings = make_settings(tmp_path, database, enabled=True)
    with PersonaStore.from_settings(settings, profile="alice") as alice, \
            PersonaStore.from_settings(settings, profile="bob") as bob:
        kept = alice.add("Alice reviews every diff.", topic="work").fact
        doomed = bob.add("Bob's stale rule.", topic="work").fact
    long_ago = to_db(datetime.now(UTC) - timedelta(days=400))
    database.execute("UPDATE memoria_persona SET last_reinforced_at = ?, created_at = ?", (long_ago, long_ago))
    ready, go = tmp_path / "ready", tmp_path / "go"
    host_b = subprocess.Popen([sys.executable, "-c", HOLD_AND_REINFORCE, str(database.target), str(kept.id),
                               str(ready), str(go)], cwd=REPO, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    try:
        while not ready.exists():
            assert host_b.poll() is None, "host B died"
        done: dict[str, list] = {}
        with PersonaStore.from_settings(settings, profile="alice") as host_a:
            assert [a.action for a in plan_retention(host_a, settings.retention)] == ["evict"]  # stale soon
            tick_a = threading.Thread(target=lambda: done.setdefault("a", apply_retention(host_a, settings.retention)))
            tick_a.start()
            tick_a.join(1.0)  # A has planned and waits for B's lock
            go.touch()
            tick_a.join(60)
        assert host_b.wait(60) == 0
    finally:
        host_b.kill()
    assert done["a"] == []  # decided again under the lock: nothing to evict
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        survivor = alice.get(kept.id)
        assert survivor.reinforcement_count == 1 and not alice.is_tombstoned(kept.source_memory_id or "")
    with PersonaStore.from_settings(settings, profile="bob") as bob:  # bob's own decayed fact still goes
        assert [a.persona_id for a in apply_retention(bob, settings.retention)] == [doomed.id]
