"""What one profile's tick costs on the wire on a server, counted by a relay in front of the real one
(``benchmarks.pg_wire``): statements and round trips of a tick that renders, of one with nothing to do, and of
a sweep's visit to a changed profile. Two profiles, so a count never leans on a database holding only one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.pg_wire import Relay, Tally
from pipeline import PersonaStore, Settings, StoreError, get_counter, tick
from pipeline.schedule.tick import tick_all
from pipeline.store.blocks import read_block
from pipeline.store.postgres.pools import close_pool
from pipeline.store.postgres.schema import scoped_lock

from ..conftest import local_settings
from ..support.databases import Db, open_database

PROFILES = ("ana", "ben")


@pytest.fixture
def relayed(tmp_path: Path) -> Iterator[tuple[Db, str, Tally]]:
    """A schema of its own, and its URL through a counting relay."""
    for db in open_database("postgresql", tmp_path):
        relay = Relay("127.0.0.1", 5432)
        url = str(db.target).replace("127.0.0.1:5432", f"127.0.0.1:{relay.port}") + "&sslmode=disable"
        try:
            yield db, url, relay.tally
        finally:
            close_pool(url)
            relay.close()


def settings_for(tmp_path: Path, url: str, profile: str) -> Settings:
    return local_settings(tmp_path, {"store.url": url, "store.profile": profile, "targets.markdown.output": "store"})


def edit(tmp_path: Path, url: str, profile: str, text: str) -> None:
    with PersonaStore.from_settings(settings_for(tmp_path, url, profile)) as store:
        store.add(text, topic="style")


def rendered_both(tmp_path: Path, url: str) -> None:
    for profile in PROFILES:
        edit(tmp_path, url, profile, f"{profile} answers tersely.")
        settings = settings_for(tmp_path, url, profile)
        with PersonaStore.from_settings(settings) as store:
            assert tick(settings, store=store).rendered
            assert tick(settings, store=store).rendered is False  # each pooled connection carries its settings


def counted(tally: Tally) -> tuple[int, int]:
    return tally.statements, tally.round_trips


def test_a_changed_tick_and_one_with_nothing_to_do_on_the_wire(tmp_path, relayed):
    _, url, tally = relayed
    rendered_both(tmp_path, url)
    for profile in PROFILES:
        edit(tmp_path, url, profile, f"{profile} never force-pushes.")
        settings = settings_for(tmp_path, url, profile)
        with PersonaStore.from_settings(settings) as store:
            store.open()
            tally.reset()
            assert tick(settings, store=store).rendered
            changed = counted(tally)
            tally.reset()
            assert not tick(settings, store=store).rendered
            idle = counted(tally)
            block = read_block(store, "markdown")
        assert block is not None and f"{profile} never force-pushes." in block.text
        assert changed <= (8, 3), tally.sql  # lock and ask | render read | BEGIN, claim, write, COMMIT, release
        assert idle <= (3, 2), tally.sql  # lock and ask | release


def test_a_sweep_visits_a_changed_profile_in_few_round_trips(tmp_path, relayed):
    _, url, tally = relayed
    rendered_both(tmp_path, url)
    settings = settings_for(tmp_path, url, "ana")
    tick_all(settings)  # the survey's pooled connection carries its settings too
    for profile in PROFILES:
        edit(tmp_path, url, profile, f"{profile} never force-pushes.")
    tally.reset()
    ticks = tick_all(settings)
    survey = 2  # every profile with whether a trigger fires for it, those retention may act on
    assert sorted((t.profile, t.outcome) for t in ticks) == [(p, "rendered") for p in PROFILES]
    # lock, ask and render read | BEGIN, claim, the write (pipeline.store.block_write), COMMIT, release
    assert tally.round_trips - survey <= 2 * len(PROFILES), tally.sql
    assert tally.statements - survey <= 8 * len(PROFILES), tally.sql
    for profile in PROFILES:
        with PersonaStore.from_settings(settings_for(tmp_path, url, profile)) as store:
            block = read_block(store, "markdown")
        assert block is not None and f"{profile} never force-pushes." in block.text


def test_a_sweep_renders_what_retention_left_not_what_it_read_ahead(tmp_path, relayed):
    db, url, _ = relayed
    rendered_both(tmp_path, url)
    for profile in PROFILES:
        settings = settings_for(tmp_path, url, profile).model_copy(deep=True)
        with PersonaStore.from_settings(settings) as store:
            old = store.add(f"{profile}'s stale working note.", topic="notes", tier="working").fact.id
        db.execute("UPDATE memoria_persona SET created_at = '2020-01-01 00:00:00', last_reinforced_at = NULL "
                   "WHERE id = ?", (old,))
    settings = local_settings(tmp_path, {"store.url": url, "targets.markdown.output": "store",
                                         "retention.working_ttl_hours": 1})
    ticks = tick_all(settings)
    assert sorted((t.profile, t.outcome) for t in ticks) == [(p, "rendered") for p in PROFILES]
    for t in ticks:
        assert t.result is not None and len(t.result.retention) == 1
        with PersonaStore.from_settings(settings_for(tmp_path, url, t.profile)) as store:
            block = read_block(store, "markdown")
        assert block is not None and "stale working note" not in block.text
        assert f"{t.profile} answers tersely." in block.text


def test_a_failure_in_what_is_asked_with_the_lock_leaves_the_lock_free(tmp_path, relayed):
    db, url, _ = relayed
    with PersonaStore(url, profile="ana") as ana, PersonaStore(url, profile="ben") as ben:
        ana.open()
        with pytest.raises(StoreError, match="division by zero"), \
                ana.profile_lock_asking(0, lambda conn: conn.execute("SELECT 1 / 0")):
            pass
        with ben.profile_lock(0) as held:
            assert held
        # Another session takes it (the pooled connection would take its own lock again).
        assert db.execute(f"SELECT pg_try_advisory_lock({scoped_lock('?')})", ("persona-tick:ana",)) == [(True,)]


def test_a_tick_whose_write_fails_leaves_its_lock_free(tmp_path, relayed):
    db, url, _ = relayed
    rendered_both(tmp_path, url)
    db.fail_deletes_on("persona_runs", "the disk is full")  # the trim, in the write's statement
    for profile in PROFILES:
        edit(tmp_path, url, profile, f"{profile} never force-pushes.")
        settings = local_settings(tmp_path, {"store.url": url, "store.profile": profile, "store.keep_runs": 1,
                                             "targets.markdown.output": "store"})
        with PersonaStore.from_settings(settings) as store:
            with pytest.raises(StoreError, match="the disk is full"):
                tick(settings, store=store)
            assert "never force-pushes" not in read_block(store, "markdown").text
        assert db.execute(f"SELECT pg_try_advisory_lock({scoped_lock('?')})", (f"persona-tick:{profile}",)) == \
            [(True,)]


def test_a_sweep_renders_a_settings_change_of_an_unchanged_store(tmp_path, relayed):
    """The render read sent with the lock answers only a store that changed; a render for another trigger (here
    the settings') reads the facts itself."""
    _, url, _ = relayed
    rendered_both(tmp_path, url)
    settings = local_settings(tmp_path, {"store.url": url, "targets.markdown.output": "store",
                                         "cap.truncation_note": "(more in the store)", "cap.token_cap": 12})
    ticks = tick_all(settings)
    assert sorted((t.profile, t.outcome) for t in ticks) == [(p, "rendered") for p in PROFILES]
    for profile in PROFILES:
        with PersonaStore.from_settings(settings_for(tmp_path, url, profile)) as store:
            block = read_block(store, "markdown")
        # The block fits in exact tokens (its recorded count may be the bound an earlier, roomier render recorded:
        # a render of the same text leaves the row as it was).
        assert block is not None and get_counter("o200k_base").count(block.text) <= 12
