"""Every writer of a profile's facts is seen: another tool's insert, edit or delete of ``memoria_persona`` reaches the
next render-before-read, ``persona status`` and ``persona tick``, exactly as our own writes do.

Mnemosyne's own ``mnemosyne_persona_promote`` / ``_demote`` / ``_reinforce`` write the table directly, beside ours.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from types import SimpleNamespace

from typer.testing import CliRunner

from pipeline import PersonaInjector, PersonaStore, status_data, tick
from pipeline.cli import app
from pipeline.store.contract import TRIGGER_PREFIX

from ..conftest import local_settings
from ..support.databases import MNEMOSYNE_SCHEMA

runner = CliRunner()
TEA, COFFEE = "Prefers tea.", "Hates coffee."


def insert_as_another_tool(database, content: str, profile: str = "default", topic: str = "drinks") -> None:
    """What Mnemosyne's promote does: a row straight into memoria_persona, no word to persona-tier."""
    database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES (?, 'long_term', ?, ?)",
                     (profile, topic, content))


def store_changed(settings, database, profile: str = "default") -> dict:
    with PersonaStore(database.target, profile=profile, readonly=True) as store:
        return next(t for t in status_data(settings, store)["triggers"] if t["name"] == "store_changed")


def rendered(settings, database, profile: str = "default"):
    with PersonaStore(database.target, profile=profile) as store:
        return tick(settings, store=store)


def live_block(settings, profile: str = "default") -> str:
    injector = PersonaInjector(settings, profile=profile)
    try:
        return injector.block()
    finally:
        injector.close()


def test_another_tools_insert_edit_and_delete_each_reach_the_next_prompt(database, tmp_path):
    settings = local_settings(tmp_path, {"injection.enabled": True}, database=database)
    with PersonaStore(database.target) as store:
        store.add(TEA, topic="drinks")
    assert rendered(settings, database).rendered
    assert not store_changed(settings, database)["fired"]

    insert_as_another_tool(database, COFFEE)
    state = store_changed(settings, database)
    assert state["fired"] and state["reason"] == "1 store change since the last render"
    assert COFFEE in live_block(settings)  # the render-before-read of a host's next prompt

    [(fact_id,)] = database.execute("SELECT id FROM memoria_persona WHERE content = ?", (COFFEE,))
    for change, seen in [("UPDATE memoria_persona SET content = 'Hates instant coffee.' WHERE id = ?",
                          "Hates instant coffee."),
                         ("UPDATE memoria_persona SET topic = 'beverages' WHERE id = ?", "## beverages"),
                         ("UPDATE memoria_persona SET tier = 'permanent' WHERE id = ?", "## beverages"),
                         ("UPDATE memoria_persona SET reinforcement_count = 3 WHERE id = ?", "## beverages")]:
        database.execute(change, (fact_id,))
        assert store_changed(settings, database)["fired"], change
        assert seen in live_block(settings), change
        assert not store_changed(settings, database)["fired"], change  # the prompt's render caught up

    database.execute("DELETE FROM memoria_persona WHERE id = ?", (fact_id,))
    assert store_changed(settings, database)["fired"]
    block = live_block(settings)
    assert TEA in block and "coffee" not in block


def test_a_statement_that_changes_nothing_is_not_a_change(database, tmp_path):
    settings = local_settings(tmp_path, database=database)
    with PersonaStore(database.target) as store:
        store.add(TEA, topic="drinks")
    rendered(settings, database)
    database.execute("UPDATE memoria_persona SET content = content, promotion_reason = 'noted'")
    assert not store_changed(settings, database)["fired"]
    assert rendered(settings, database).reason == "no trigger fired"


def test_another_profiles_rows_never_move_this_profiles_counter(database, tmp_path):
    alice = local_settings(tmp_path, {"store.profile": "alice"}, database=database, persona="alice.md")
    bob = local_settings(tmp_path, {"store.profile": "bob"}, database=database, persona="bob.md")
    for who, settings in (("alice", alice), ("bob", bob)):
        with PersonaStore(database.target, profile=who) as store:
            store.add(f"{who} answers tersely.", topic="style")
        rendered(settings, database, who)
    insert_as_another_tool(database, COFFEE, profile="alice")
    database.execute("UPDATE memoria_persona SET session_id = 'alice' WHERE content = 'bob answers tersely.'")
    assert store_changed(alice, database, "alice")["fired"]
    assert store_changed(bob, database, "bob")["fired"]  # a fact moved away from bob changes bob's persona too
    rendered(bob, database, "bob")
    insert_as_another_tool(database, "Drinks water.", profile="alice")
    assert not store_changed(bob, database, "bob")["fired"]


def test_status_and_tick_name_the_change_another_tool_made(tmp_path):
    db = tmp_path / "mnemosyne.db"
    base = ["--db", str(db), "--set", f"injection.file={tmp_path / 'persona.md'}"]
    assert runner.invoke(app, [*base, "add", TEA, "--topic", "drinks"]).exit_code == 0
    assert runner.invoke(app, [*base, "render"]).exit_code == 0
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) "
                     "VALUES ('default', 'long_term', 'drinks', ?)", (COFFEE,))
    status = json.loads(runner.invoke(app, [*base, "status", "--json"]).stdout)
    assert next(t for t in status["triggers"] if t["name"] == "store_changed")["fired"]
    ticked = runner.invoke(app, [*base, "tick"])
    assert ticked.exit_code == 0 and "store_changed" in ticked.stdout
    assert COFFEE in (tmp_path / "persona.md").read_text()
    shown = runner.invoke(app, [*base, "--set", "injection.enabled=true", "inject"])
    assert COFFEE in shown.stdout


def test_mnemosyne_own_persona_tools_reach_the_prompt(tmp_path):
    """Mnemosyne's PersonaAdapter (its mnemosyne_persona_* tools) writing the same database, through its own code."""
    from hermes_memory_provider.persona_adapter import PersonaAdapter

    db = tmp_path / "mnemosyne.db"
    settings = local_settings(tmp_path, {"injection.enabled": True}, db="mnemosyne.db")
    with PersonaStore(db) as store:
        store.add(TEA, topic="drinks")
    rendered(settings, SimpleNamespace(target=db))
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("INSERT INTO working_memory (id, content, session_id) VALUES ('wm-1', ?, 'default')", (COFFEE,))
        mnemosyne = PersonaAdapter(beam_instance=SimpleNamespace(conn=conn))
        promoted = json.loads(mnemosyne.handle_tool_call("mnemosyne_persona_promote", {"memory_id": "wm-1"}))
        assert promoted["status"] == "ok"
        assert COFFEE in live_block(settings)
        reinforced = mnemosyne.handle_tool_call("mnemosyne_persona_reinforce", {"persona_id": promoted["persona_id"]})
        assert json.loads(reinforced)["status"] == "ok"
        assert store_changed(settings, SimpleNamespace(target=db))["fired"]
        live_block(settings)
        demoted = mnemosyne.handle_tool_call("mnemosyne_persona_demote", {"persona_id": promoted["persona_id"]})
        assert json.loads(demoted)["status"] == "ok"
    block = live_block(settings)
    assert TEA in block and COFFEE not in block


def test_a_table_rebuilt_without_our_triggers_gets_them_back_at_the_next_open(tmp_path):
    db = tmp_path / "mnemosyne.db"
    settings = local_settings(tmp_path, db="mnemosyne.db")
    with PersonaStore(db) as store:
        store.add(TEA, topic="drinks")
    with closing(sqlite3.connect(db)) as conn, conn:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE ?",
                                    (TRIGGER_PREFIX + "%",)).fetchall():
            conn.execute(f"DROP TRIGGER {name}")
    rendered(settings, SimpleNamespace(target=db))  # a write-mode open restores them
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) "
                     "VALUES ('default', 'long_term', 'drinks', ?)", (COFFEE,))
    assert store_changed(settings, SimpleNamespace(target=db))["fired"]


def test_what_we_add_to_mnemosynes_table_is_triggers_only(tmp_path):
    """Mnemosyne's columns, indexes and rows stay as Mnemosyne made them: its own reads see nothing new."""
    db = tmp_path / "mnemosyne.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.executescript(MNEMOSYNE_SCHEMA.read_text())
        before = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'memoria_persona' "
                              "ORDER BY name").fetchall()
    with PersonaStore(db) as store:
        store.add(TEA, topic="drinks")
    with closing(sqlite3.connect(db)) as conn:
        after = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'memoria_persona' "
                             "ORDER BY name").fetchall()
    added = sorted(set(after) - set(before))
    assert {kind for kind, _, _ in added} <= {"trigger", "index"}
    assert [name for kind, name, _ in added if kind == "trigger"] == [
        f"{TRIGGER_PREFIX}delete", f"{TRIGGER_PREFIX}insert", f"{TRIGGER_PREFIX}update", f"{TRIGGER_PREFIX}vanish"]
    assert all(sql_of in {sql for _, _, sql in after} for _, _, sql_of in before)  # nothing of Mnemosyne's changed
