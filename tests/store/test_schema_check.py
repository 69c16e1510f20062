"""A store opened on a database at this version, with its triggers, checks that in one statement; anything else
(no schema, a trigger gone) still takes the full path."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from pipeline import PersonaStore
from pipeline.store.sqlite.schema import ensure_schema


def statements(db) -> list[str]:
    seen: list[str] = []
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.set_trace_callback(seen.append)
        ensure_schema(conn)
    return seen


def test_a_settled_schema_is_checked_in_one_statement(tmp_path):
    db = tmp_path / "m.db"
    for profile in ("alice", "bob"):
        with PersonaStore(db, profile=profile) as store:
            store.add(f"{profile} answers tersely.", topic="style")
    assert len(statements(db)) == 1


def test_a_missing_trigger_is_put_back_and_a_new_database_migrated(tmp_path):
    db = tmp_path / "m.db"
    with PersonaStore(db, profile="alice") as store:
        store.add("Answers tersely.", topic="style")
    with closing(sqlite3.connect(db)) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
        conn.execute(f"DROP TRIGGER {names[0]}")
    assert len(statements(db)) > 1  # the full path: the trigger is put back
    with closing(sqlite3.connect(db)) as conn:
        assert names[0] in {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert len(statements(db)) == 1
    fresh = tmp_path / "fresh.db"
    assert len(statements(fresh)) > 1
    with closing(sqlite3.connect(fresh)) as conn:
        assert conn.execute("SELECT count(*) FROM persona_token_counts").fetchone() == (0,)
