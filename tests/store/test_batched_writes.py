"""A stored block's write transaction, batched (psycopg's pipeline mode on a server), and a tick's questions of its
profile asked in one statement: the same answers and the same failures as one statement at a time, on both
backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import PersonaStore, StoreError, tick
from pipeline.schedule.triggers import ask
from pipeline.store.blocks import existing_blocks, read_block
from pipeline.store.memories import new_memories
from pipeline.store.runs import last_run

from ..conftest import local_settings
from ..support.databases import Db

PROFILES = ("ana", "ben")


def stored(tmp_path: Path, database: Db, profile: str, **overrides: object):
    """Two stored targets (two projects' worth of blocks), retention on, for ``profile``."""
    return local_settings(tmp_path, {"store.profile": profile, "targets.work.output": "store",
                                     "targets.markdown.output": "store", "triggers.interval": 3, **overrides},
                          database=database)


def test_a_tick_asks_in_one_statement_what_the_separate_reads_answer(tmp_path, database):
    for profile in PROFILES:
        settings = stored(tmp_path, database, profile)
        with PersonaStore.from_settings(settings) as store:
            store.add(f"{profile} answers tersely.", topic="style")
            if profile == "ana":
                tick(settings, store=store)  # ben is never rendered: no last run, no block
                store.add("Ana never force-pushes.", topic="git")
    for k in range(4):
        database.add_memory(f"m{k}", "note", session="ana")
    for profile in PROFILES:
        settings = stored(tmp_path, database, profile)
        with PersonaStore.from_settings(settings) as store:
            asked = ask(settings, store, retention=settings.retention)
            last = last_run(store)
            assert asked.last == last
            assert asked.generation == store.generation()
            assert asked.blocks == existing_blocks(store, ["markdown", "work"])
            assert asked.new_memories == new_memories(store, since=last.memory_watermark if last else 0, at_most=3)
            assert not asked.retention_due and not asked.idle_snapshots
    with PersonaStore.from_settings(stored(tmp_path, database, "ana")) as store:
        assert ask(stored(tmp_path, database, "ana"), store).blocks == {"markdown", "work"}
    with PersonaStore.from_settings(stored(tmp_path, database, "ben")) as store:
        assert ask(stored(tmp_path, database, "ben"), store).blocks == frozenset()


def test_a_fact_due_for_retention_is_seen_by_the_one_statement_and_acted_on(tmp_path, database):
    settings = stored(tmp_path, database, "ana", **{"retention.working_ttl_hours": 1})
    other = stored(tmp_path, database, "ben", **{"retention.working_ttl_hours": 1})
    with PersonaStore.from_settings(settings) as store, PersonaStore.from_settings(other) as theirs:
        kept = theirs.add("Ben's working note.", topic="notes", tier="working").fact.id
        old = store.add("A working note.", topic="notes", tier="working").fact.id
        database.execute("UPDATE memoria_persona SET created_at = '2020-01-01 00:00:00', last_reinforced_at = NULL "
                         "WHERE id = ?", (old,))
        assert ask(settings, store, retention=settings.retention).retention_due
        assert not ask(other, theirs, retention=other.retention).retention_due
        result = tick(settings, store=store)
        assert [action.persona_id for action in result.retention] == [old]
        assert [fact.id for fact in theirs.list()] == [kept]


def test_a_stored_block_whose_write_fails_at_the_commit_keeps_the_last_one_and_the_store_goes_on(tmp_path, database):
    settings = stored(tmp_path, database, "ana", **{"store.keep_runs": 1})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        tick(settings, store=store)
        first = read_block(store, "work")
        runs = database.rows("persona_runs")
        database.fail_deletes_on("persona_runs", "the disk is full")  # the old runs' trim, last before COMMIT
        store.add("Never force-pushes.", topic="git")
        with pytest.raises(StoreError, match="the disk is full"):
            tick(settings, store=store)
        assert read_block(store, "work") == first
        assert database.rows("persona_runs") == runs
        database.execute("DROP TRIGGER fail_delete ON persona_runs" if database.is_postgres
                         else "DROP TRIGGER fail_delete")
        assert tick(settings, store=store).rendered
        assert "Never force-pushes." in read_block(store, "work").text


def test_a_batched_transaction_reads_its_own_writes_and_rolls_back_on_an_error(tmp_path, database):
    with database.store(profile="ana") as store, database.store(profile="ben") as theirs:
        theirs.add("Ben's fact.", topic="style")
        with store.transaction(batched=True) as conn:
            conn.execute("INSERT INTO persona_state (session_id, generation) VALUES (?, ?)", ("ana-probe", 41))
            assert conn.execute("UPDATE persona_state SET generation = generation + 1 WHERE session_id = ?",
                                ("ana-probe",)).rowcount == 1
            assert conn.execute("SELECT generation FROM persona_state WHERE session_id = ?",
                                ("ana-probe",)).fetchone()[0] == 42
        with pytest.raises(ValueError, match="changed my mind"), store.transaction(batched=True) as conn:
            conn.execute("UPDATE persona_state SET generation = 7 WHERE session_id = ?", ("ana-probe",))
            raise ValueError("changed my mind")
        assert database.execute("SELECT generation FROM persona_state WHERE session_id = 'ana-probe'") == [(42,)]
        assert [fact.content for fact in theirs.list()] == ["Ben's fact."]


def test_a_render_reads_the_state_and_the_facts_as_the_two_separate_reads_answer(database):
    """On a server the state and the facts are one statement (a round trip less); a profile without facts and
    one with a project's facts (read again with their scopes) come back as from the two reads, on both backends."""
    now = "2026-01-01 00:00:00"
    with database.store(profile="ana") as ana, database.store(profile="ben") as ben, \
            database.store(profile="cy") as cy:
        ana.add("Answers tersely.", topic="style")
        ana.add("Never force-pushes.", topic="git", tier="working")
        ben.add("Uses pnpm here.", topic="tools", scope="project:acme")
        ben.add("Writes in English.", topic="style")
        for store in (ana, ben, cy):
            with store.read() as conn:
                state, rows = store.render_read(conn, now)
                one = (state, sorted(tuple(row) for row in rows))
                state = store.render_state(conn)
                two = (state, sorted(tuple(row) for row in store.render_rows(conn, now, scoped=state.scoped)))
            assert one == two
            assert len(one[1]) == {"ana": 2, "ben": 2, "cy": 0}[store.profile]
        assert two[0].scoped is False and one[0].generation == 0
    with database.store(profile="ben") as ben, ben.read() as conn:
        state, rows = ben.render_read(conn, now)
        assert state.scoped and sorted(row[8] or "" for row in rows) == ["", "project:acme"]
