"""The store on a real SQLite file, including one shaped like a real Mnemosyne database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import InputError, NotFoundError, PersonaStore, StoreError
from pipeline.cli import app
from pipeline.store import TOMBSTONE_MARK

from ..conftest import Clock, add_memory, cli, digest, failed_cleanly, python, runner, schema_of, write
from ..support.databases import MNEMOSYNE_SCHEMA


@pytest.fixture
def mnemosyne_db(tmp_path: Path) -> Path:
    path = tmp_path / "real.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(MNEMOSYNE_SCHEMA.read_text())
    return path


def table_info(db: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: conn.execute(f"PRAGMA table_info({t})").fetchall() for t in tables}


def rows(db: Path, table: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


# -- schema ---------------------------------------------------------------------


def test_fresh_database_gets_mnemosyne_tables_and_indexes(db):
    with PersonaStore(db) as store:
        store.list()
    with sqlite3.connect(db) as conn:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name='memoria_persona'").fetchone()[0]
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "CHECK(tier IN ('permanent','long_term','working'))" in sql
    assert {"idx_persona_session_tier", "idx_persona_tier_topic"} <= indexes
    columns = [c[1] for c in table_info(db)["memoria_persona"]]
    assert columns == [
        "id",
        "session_id",
        "tier",
        "topic",
        "content",
        "confidence",
        "source_memory_id",
        "created_at",
        "last_reinforced_at",
        "reinforcement_count",
        "promotion_reason",
    ]
    assert {"memoria_preferences", "working_memory", "episodic_memory", "persona_origins"} <= set(table_info(db))


def test_existing_mnemosyne_tables_are_never_altered(mnemosyne_db):
    before = table_info(mnemosyne_db)
    with PersonaStore(mnemosyne_db) as store:
        store.add("Answers tersely.", topic="style")
    after = table_info(mnemosyne_db)
    assert {t: after[t] for t in before} == before
    added = set(after) - set(before)
    assert added and all(name.startswith("persona_") for name in added)


def test_invalid_tier_is_refused_by_the_database_check_too(store, database):
    with pytest.raises(Exception, match=r"(?i)check"):
        database.execute("INSERT INTO memoria_persona (tier, topic, content) VALUES ('forever', 't', 'c')")


# -- promote --------------------------------------------------------------------


def test_promote_reads_working_memory_and_takes_topic_from_metadata(store, database):
    database.add_memory("m1", "Uses uv, never pip.", metadata='{"topic": "tooling"}')
    result = store.promote("m1", reason="said twice")
    assert result.created
    assert (result.fact.topic, result.fact.tier, result.fact.content) == ("tooling", "long_term", "Uses uv, never pip.")
    assert result.fact.promotion_reason == "said twice"


def test_promote_falls_back_to_episodic_memory(store, database):
    database.add_memory("e1", "Prefers British spelling.", table="episodic_memory")
    assert store.promote("e1", tier="permanent").fact.tier == "permanent"


def test_topic_from_a_linked_preference(store, database):
    database.add_memory("m1", "Likes dark mode.")
    database.execute("INSERT INTO memoria_preferences (preference, topic, source_memory_id) "
                     "VALUES ('dark', 'ui', 'm1')")
    assert store.promote("m1").fact.topic == "ui"


def test_topic_from_a_linked_instruction(mnemosyne_db):
    add_memory(mnemosyne_db, "m1", "Never force-push.")
    with sqlite3.connect(mnemosyne_db) as conn:
        conn.execute(
            "INSERT INTO memoria_instructions (instruction, topic, source_memory_id) VALUES ('x', 'git', 'm1')"
        )
        conn.execute("INSERT INTO memoria_timelines (description, source_memory_id) VALUES ('x', 'm1')")
    with PersonaStore(mnemosyne_db) as store:
        assert store.promote("m1").fact.topic == "git"


def test_topic_defaults_to_general(store, database):
    database.add_memory("m1", "Works late.", metadata="not json")
    assert store.promote("m1").fact.topic == "general"


def test_promoting_twice_keeps_one_row(store, database):
    database.add_memory("m1", "Answers tersely.")
    first = store.promote("m1")
    second = store.promote("m1", tier="permanent")
    assert not second.created and second.fact == first.fact
    assert len(store.list()) == 1


@pytest.mark.parametrize("table", ["working_memory", "episodic_memory"])
def test_with_memory_scope_profile_a_profile_promotes_only_its_own_memories(store, database, table):
    database.add_memory("m-alice", "Alice wants bullet points.", table=table, session="alice")
    with database.store(profile="bob", memory_scope="profile") as bob:
        with pytest.raises(NotFoundError, match="no memory with id m-alice filed under profile 'bob'"):
            bob.promote("m-alice")
        assert bob.list() == []
    with database.store(profile="alice", memory_scope="profile") as alice:
        assert alice.promote("m-alice").created
    with database.store(profile="bob") as shared:  # the default: one user's database, every memory theirs
        assert shared.promote("m-alice").created


def test_a_nul_in_a_list_filter_is_one_clear_error_on_both_backends(store):
    store.add("Terse.", topic="style")
    with pytest.raises(InputError, match="topic contains a NUL byte"):
        store.list(topic="sty\x00le")
    assert [fact.content for fact in store.list(topic="style")] == ["Terse."]


def test_promote_unknown_id_is_an_error(store):
    with pytest.raises(NotFoundError, match="no memory with id nope in working_memory or episodic_memory"):
        store.promote("nope")


def test_promote_empty_content_is_an_error(store, database):
    database.add_memory("m1", "   ")
    with pytest.raises(InputError, match="memory m1 has empty content"):
        store.promote("m1")
    assert store.list() == []


def test_promote_invalid_tier_is_an_error_and_writes_nothing(store, database):
    database.add_memory("m1", "x")
    with pytest.raises(InputError, match="invalid tier 'forever': expected one of permanent, long_term, working"):
        store.promote("m1", tier="forever")
    assert store.list() == []


# -- demote ---------------------------------------------------------------------


def test_demote_leaves_a_tombstone_and_deletes_the_fact(store, database):
    database.add_memory("m1", "Answers tersely.")
    fact = store.promote("m1", tier="permanent").fact
    store.demote(fact.id, reason="changed their mind")
    assert store.list() == []
    tomb = database.rows("memoria_preferences")[-1]
    assert tomb[1:] == (
        "default",
        None,
        "[demoted from permanent] Answers tersely.",
        "general",
        TOMBSTONE_MARK,
        "changed their mind",
        "m1",
    )


def test_demote_is_sticky_unless_forced(store, database):
    database.add_memory("m1", "Answers tersely.")
    store.demote(store.promote("m1").fact.id)
    with pytest.raises(InputError, match="memory m1 was demoted; pass --force"):
        store.promote("m1")
    assert store.promote("m1", force=True).created


def test_demote_unknown_id_is_an_error(store):
    with pytest.raises(NotFoundError, match="no persona fact with id 42 in profile 'default'"):
        store.demote(42)


def test_tombstone_transaction_is_atomic(store, database):
    database.add_memory("m1", "Answers tersely.")
    fact = store.promote("m1").fact
    prefs_before, persona_before = database.rows("memoria_preferences"), database.rows("memoria_persona")
    database.fail_deletes_on("memoria_persona", "injected")  # a real failure, after the tombstone insert
    with pytest.raises(StoreError, match="injected"):
        store.demote(fact.id)
    assert database.rows("memoria_preferences") == prefs_before
    assert database.rows("memoria_persona") == persona_before


def test_add_keeps_a_demoted_fact_demoted_like_import_and_promote(tmp_path, seeded):
    fact = runner.invoke(app, ["--db", str(seeded), "add", "Uses tabs.", "--topic", "style", "--json"])
    persona_id = json.loads(fact.stdout)["fact"]["id"]
    assert runner.invoke(app, ["--db", str(seeded), "demote", str(persona_id)]).exit_code == 0
    again = runner.invoke(app, ["--db", str(seeded), "add", "Uses tabs.", "--topic", "style"])
    assert again.exit_code == 1 and "was demoted; pass --force" in again.stderr
    facts = write(tmp_path / "f.yaml", "facts:\n  - {topic: style, content: Uses tabs.}\n")
    refused = runner.invoke(app, ["--db", str(seeded), "import", str(facts)])
    assert refused.exit_code == 1 and "fact #1: that fact was demoted; pass --force" in refused.stderr
    skipped = runner.invoke(app, ["--db", str(seeded), "import", str(facts), "--skip-bad"])
    assert "1 skipped as demoted" in skipped.stdout
    assert runner.invoke(app, ["--db", str(seeded), "add", "Uses tabs.", "--topic", "style", "--force"]).exit_code == 0


# -- list, reinforce, add ----------------------------------------------------------


def test_list_orders_by_tier_then_reinforcement_then_id(store):
    w = store.add("w", topic="t", tier="working").fact
    l1 = store.add("l1", topic="t").fact
    l2 = store.add("l2", topic="t").fact
    p = store.add("p", topic="u", tier="permanent").fact
    store.reinforce(l2.id)
    assert [f.id for f in store.list()] == [p.id, l2.id, l1.id, w.id]
    assert [f.id for f in store.list(tier="long_term")] == [l2.id, l1.id]
    assert [f.id for f in store.list(topic="u")] == [p.id]


def test_sessions_are_isolated(database):
    with database.store(profile="work") as work, database.store(profile="home") as home:
        fact = work.add("Uses uv.", topic="tooling").fact
        assert home.list() == []
        with pytest.raises(NotFoundError):
            home.reinforce(fact.id)
        assert [f.content for f in work.list()] == ["Uses uv."]


def test_reinforce_counts_and_restarts_the_clock(database):
    clock = Clock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    with database.store(clock=clock) as store:
        fact = store.add("x", topic="t").fact
        clock.now += timedelta(days=3)
        again = store.reinforce(fact.id)
    assert again.reinforcement_count == 1
    assert again.last_reinforced_at == "2026-01-04 12:00:00"
    assert again.created_at == "2026-01-01 12:00:00"


def test_reinforce_unknown_id_is_an_error(store):
    with pytest.raises(NotFoundError, match="no persona fact with id 7"):
        store.reinforce(7)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": "  ", "topic": "t"}, "content is empty"),
        ({"content": "x", "topic": ""}, "topic is empty"),
        ({"content": "x", "topic": "t", "confidence": 1.5}, "invalid confidence 1.5"),
        ({"content": "x", "topic": "t", "tier": "eternal"}, "invalid tier 'eternal'"),
        ({"content": "a\x00b", "topic": "t"}, "content contains a NUL byte"),
    ],
)
def test_add_rejects_bad_input(store, kwargs, message):
    kwargs = dict(kwargs)  # the same dict serves both backends
    content = kwargs.pop("content")
    with pytest.raises(InputError, match=message):
        store.add(content, **kwargs)
    assert store.list() == []


def test_add_same_fact_twice_keeps_one_row(store):
    assert store.add("x", topic="t").created
    assert not store.add(" x ", topic="t").created
    assert len(store.list()) == 1


def test_add_finds_a_promoted_fact_with_the_same_text(store, database):
    database.add_memory("wm-1", "Uses uv, never pip", metadata='{"topic": "tools"}')
    promoted = store.promote("wm-1")
    again = store.add("Uses uv, never pip", topic="tools")
    assert not again.created and again.fact.id == promoted.fact.id


def test_finding_an_existing_fact_searches_indexes_not_the_table(store, database):
    # Add and import look a fact up once per fact; a full scan made a 10k import against a
    # 10k-fact store take 34 s. The plan must name an index for every read of the table.
    params = {"session": "s", "key": "k", "topic": "t", "content": "c", "scope": ""}
    if database.is_postgres:  # a tiny table is scanned whatever the indexes; forbid scans to see they serve
        plan = database.explain_without_scans(store.dialect.find_fact, params)
        steps = [step for step in plan if "memoria_persona" in step]
        assert len(steps) == 2 and all("Index" in step for step in steps), plan
        return
    with closing(sqlite3.connect(database.target)) as conn:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {store.dialect.find_fact}", params)]
    reads = [step for step in plan if "memoria_persona" in step]
    assert len(reads) == 2 and all("USING COVERING INDEX" in step for step in reads), plan


# -- bad databases ---------------------------------------------------------------


def test_missing_directory_is_a_clear_error(tmp_path):
    with (
        pytest.raises(StoreError, match=r"database directory .*nowhere does not exist"),
        PersonaStore(tmp_path / "nowhere" / "m.db") as store,
    ):
        store.list()


def test_unreadable_directory_is_a_clear_error(tmp_path):
    import os

    if os.geteuid() == 0:
        locked = tmp_path / "file-not-dir"
        locked.write_text("x")
        path = locked / "m.db"  # a file where the directory should be
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o000)
        path = locked / "m.db"
    with pytest.raises(StoreError, match=r"does not exist|cannot open database"), PersonaStore(path) as store:
        store.list()


def test_a_file_that_is_not_sqlite_is_a_clear_error_and_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"notes\.db is not a SQLite database"), PersonaStore(path) as store:
        store.list()
    assert path.read_bytes() == before


def test_locked_database_fails_after_the_busy_timeout_and_changes_nothing(db):
    with PersonaStore(db) as store:
        store.add("kept", topic="t")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with (
            pytest.raises(StoreError, match=r"is locked by another writer \(waited 50 ms\)"),
            PersonaStore(db, busy_timeout_ms=50) as store,
        ):
            store.add("lost?", topic="t")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with PersonaStore(db) as store:
        assert [f.content for f in store.list()] == ["kept"]


HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO memoria_persona (tier, topic, content) VALUES ('working', 't', 'uncommitted')")
print("holding", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_a_long_transaction_makes_another_command_fail_clearly_after_the_busy_timeout(db):
    with PersonaStore(db) as store:
        store.add("kept", topic="t")
    holder = python(HOLDER, str(db), stdin=subprocess.PIPE)
    assert holder.stdout.readline().strip() == "holding"
    try:
        started = time.monotonic()
        result = CliRunner().invoke(app, ["--db", str(db), "--set", "store.busy_timeout_ms=300",
                                          "add", "new", "--topic", "t"])
        waited = time.monotonic() - started
    finally:
        holder.communicate("\n", timeout=30)
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: database {db} is locked by another writer (waited 300 ms)"
    assert waited >= 0.3  # it did wait for the lock rather than fail at once
    with PersonaStore(db) as store:
        assert [f.content for f in store.list()] == ["kept"]


def test_a_truncated_sqlite_file_is_a_clear_error(tmp_path):
    db = tmp_path / "m.db"
    with PersonaStore(db) as store:
        for i in range(300):
            store.add(f"fact {i} " + "x" * 200, topic="t")
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    with pytest.raises(StoreError, match=r"m\.db"), PersonaStore(db) as store:
        store.list()


def test_the_old_keyword_session_names_the_profile_with_a_warning(db, caplog):
    with caplog.at_level("WARNING", logger="pipeline.store.database"), PersonaStore(db, session="alice") as alice:
        alice.add("Alice likes haiku.", topic="style")
        assert alice.profile == "alice" and alice.session == "alice"
    assert "pass profile=" in caplog.text
    with PersonaStore(db, profile="bob") as bob:
        assert bob.list() == []  # alice's fact stays hers


# -- the user's database is never changed by reading it; an incompatible one is refused ----


MNEMOSYNE_DDL = MNEMOSYNE_SCHEMA.read_text()


def rollback_journal_db(path: Path) -> Path:
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(MNEMOSYNE_DDL)
        conn.execute("INSERT INTO memoria_persona (tier, topic, content) VALUES ('permanent', 'style', 'Terse.')")
        conn.commit()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    return path


def test_read_only_commands_never_change_the_database(tmp_path):
    db = rollback_journal_db(tmp_path / "mnemo.db")
    before, schema = digest(db), schema_of(db)
    for args in (["list"], ["list", "--json"], ["status"], ["render", "--dry-run"], ["render", "--stdout"],
                 ["retention", "--dry-run"], ["session", "list"]):
        result = runner.invoke(app, ["--db", str(db), "--set", f"injection.file={tmp_path / 'p.md'}", *args])
        assert result.exit_code == 0, (args, result.stderr)
    assert "Terse." in runner.invoke(app, ["--db", str(db), "list"]).stdout
    assert digest(db) == before and schema_of(db) == schema
    assert not list(tmp_path.glob("mnemo.db-*"))
    assert not (tmp_path / "missing.db").exists() or True
    assert runner.invoke(app, ["--db", str(tmp_path / "missing.db"), "list"]).stdout == "no persona facts\n"
    assert not (tmp_path / "missing.db").exists()


def test_a_write_keeps_the_journal_mode_the_owner_chose(tmp_path):
    db = rollback_journal_db(tmp_path / "mnemo.db")
    assert runner.invoke(app, ["--db", str(db), "add", "New.", "--topic", "t"]).exit_code == 0
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


@pytest.mark.slow
@pytest.mark.parametrize("missing", ["topic", "content", "reinforcement_count", "session_id"])
def test_an_incompatible_table_is_refused_before_anything_changes(tmp_path, missing):
    db = tmp_path / "odd.db"
    columns = ["id INTEGER PRIMARY KEY", "session_id TEXT", "tier TEXT", "topic TEXT", "content TEXT",
               "confidence REAL", "source_memory_id TEXT", "created_at TEXT", "last_reinforced_at TEXT",
               "reinforcement_count INTEGER", "promotion_reason TEXT"]
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(f"CREATE TABLE memoria_persona ({', '.join(c for c in columns if not c.startswith(missing))})")
    before = schema_of(db)
    for args in (["add", "x", "--topic", "t"], ["list"], ["status"], ["render"]):
        line = failed_cleanly(cli(tmp_path, "--db", "odd.db", *args))
        assert f"has no column '{missing}'" in line
    assert schema_of(db) == before
