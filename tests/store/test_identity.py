"""The store's identity and each profile's stamp (issue 48): two histories of one store never share a state, and a
trigger put back after another tool rebuilt the table moves every profile's counter (both backends)."""

from __future__ import annotations

import shutil
import sqlite3

from pipeline import PersonaStore
from pipeline.store.erasure import forget_fact
from pipeline.store.identity import TRIGGER_COUNT, sqlite_state, subject
from pipeline.store.sqlite.triggers import NAMES, TRIGGERS


def state(database, profile):
    return database.execute("SELECT generation, stamp FROM persona_state WHERE session_id = ?", (profile,))[0]


def test_every_change_writes_a_new_stamp_beside_the_counter_whoever_writes(database):
    with database.store(profile="alice") as alice, database.store(profile="bob") as bob:
        alice.add("Answers tersely.", topic="style")
        bob.add("Uses uv.", topic="tools")
        first, theirs = state(database, "alice"), state(database, "bob")
        database.execute("UPDATE memoria_persona SET content = 'Answers briefly.' WHERE session_id = 'alice'")
        second = state(database, "alice")
    assert second[0] == first[0] + 1 and second[1] != first[1] and len(second[1]) == 16
    assert state(database, "bob") == theirs  # another profile's state stays as it was


def test_a_store_has_one_random_id_and_an_erasure_stamp_that_every_forget_renews(database):
    with database.store(profile="alice") as alice:
        fact = alice.add("Answers tersely.", topic="style").fact
        [(store_id, erased)] = database.execute("SELECT store_id, erased FROM persona_identity")
        forget_fact(alice, fact.id)
    [(same_id, renewed)] = database.execute("SELECT store_id, erased FROM persona_identity")
    assert same_id == store_id and len(store_id) == 32 and renewed != erased


def test_a_store_restored_from_a_backup_and_changed_again_has_another_state(tmp_path):
    db, backup = tmp_path / "m.db", tmp_path / "backup.db"
    with PersonaStore(db, profile="alice") as alice:
        alice.add("Answers tersely.", topic="style")
    shutil.copyfile(db, backup)  # closed: the file holds every commit
    with PersonaStore(db, profile="alice") as alice:
        alice.add("Uses uv.", topic="tools")
    newer = sqlite_state(subject(str(db), "alice"))
    shutil.copyfile(backup, db)
    with PersonaStore(db, profile="alice") as alice:
        alice.add("Deploys on Fridays.", topic="work")
    restored = sqlite_state(subject(str(db), "alice"))
    assert newer[1] == restored[1]  # the same counter, reached by another history...
    assert newer[2] != restored[2] and newer[0] == restored[0]  # ...with another stamp, in the same store


def test_triggers_put_back_after_another_tool_rebuilt_the_table_move_every_profiles_counter(database):
    with database.store(profile="alice") as alice, database.store(profile="bob") as bob:
        alice.add("Answers tersely.", topic="style")
        bob.add("Uses uv.", topic="tools")
    before = {profile: state(database, profile) for profile in ("alice", "bob")}
    rebuilt = "CREATE TABLE persona_copy AS SELECT * FROM memoria_persona"
    for statement in (rebuilt, "DROP TABLE memoria_persona", "ALTER TABLE persona_copy RENAME TO memoria_persona"):
        database.execute(statement)
    # Written while our triggers are missing: nothing counts it...
    database.execute("UPDATE memoria_persona SET content = 'Answers at length.' WHERE session_id = 'alice'")
    assert state(database, "alice") == before["alice"]
    if database.is_postgres:  # a new process checks the schema when it opens its pool
        from pipeline.store.postgres.pools import close_pool

        close_pool(str(database.target))
    with database.store(profile="alice") as alice:
        assert [fact.content for fact in alice.list()] == ["Answers at length."]
    # ...until the triggers are back: then every profile's counter and stamp move.
    for profile in ("alice", "bob"):
        generation, stamp = state(database, profile)
        assert generation == before[profile][0] + 1 and stamp != before[profile][1], profile


def test_the_state_cannot_be_told_while_a_trigger_is_missing(tmp_path):
    db = tmp_path / "m.db"
    with PersonaStore(db, profile="alice") as alice:
        alice.add("Answers tersely.", topic="style")
    assert len(TRIGGERS) == TRIGGER_COUNT
    assert isinstance(sqlite_state(subject(str(db), "alice")), list)

    with sqlite3.connect(db) as conn:
        conn.execute(f"DROP TRIGGER {NAMES[0]}")
    assert sqlite_state(subject(str(db), "alice")).startswith("!a trigger of ours is missing")
