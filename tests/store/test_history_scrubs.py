"""The journal of the hosts' histories' scrub (``persona_history_scrubs``), on both backends: written in the
erasure's own transaction (keyed hashes, never the text), per profile and place, gone once finished; and added by
its migration to a database of the schema before it."""

from __future__ import annotations

import pytest

from pipeline.errors import NotFoundError
from pipeline.schedule.history_journal import Recorder, pending, place
from pipeline.store.erasure import forget_fact
from pipeline.store.history_scrubs import finish_scrubs, pending_scrubs

SECRET = "Drinks Quetzal tea, never coffee"


def test_a_forget_journals_hashes_per_profile_and_place_and_finishing_drops_them(database) -> None:
    alice, bob = database.store(profile="alice"), database.store(profile="bob")
    fact = alice.add(SECRET, topic="drinks").fact.id
    bob.add("Bob plays the cello every evening", topic="music")
    text, _ = forget_fact(alice, fact, journal=Recorder(alice, keep=False))
    assert text == SECRET
    waiting = pending(alice)
    assert waiting and pending(bob) == [] and {item.place for item in waiting} == {place()}
    assert all(item.needle.normal is None and item.needle.tokens and item.needle.chars for item in waiting)
    rows = database.rows("persona_history_scrubs")
    assert rows and all("Quetzal" not in str(row) and "quetzal" not in str(row) for row in rows)
    assert pending_scrubs(alice, "another-machine:/home/x") == []
    finish_scrubs(alice, place(), [item.needle.digest for item in waiting])
    assert pending(alice) == []


def test_a_forget_that_fails_journals_nothing(database) -> None:
    alice = database.store(profile="alice")
    with pytest.raises(NotFoundError):
        forget_fact(alice, 999, journal=Recorder(alice, keep=False))
    assert pending(alice) == []


def test_the_migration_adds_the_journal_to_a_database_of_the_schema_before(database) -> None:
    from pipeline.store.history_scrubs import history_scrubs
    from pipeline.store.postgres import schema as postgres
    from pipeline.store.sqlite import schema as sqlite

    alice = database.store(profile="alice")
    alice.add(SECRET, topic="drinks")
    database.execute("DROP TABLE persona_history_scrubs")
    migrations = (postgres if database.is_postgres else sqlite).MIGRATIONS
    # The version before the journal's migration (later migrations, which create only what is missing, run again).
    database.execute("UPDATE persona_schema SET version = ?", (migrations.index(history_scrubs()),))
    if database.is_postgres:  # a new process: this one checked the schema when it opened its pool
        from pipeline.store.postgres.pools import close_pool

        close_pool(str(database.target))
    again = database.store(profile="alice")
    [fact] = again.list()
    forget_fact(again, fact.id, journal=Recorder(again, keep=False))
    assert pending(again)
