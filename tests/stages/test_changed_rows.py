"""After a change, a kept store's render reads again only the facts our triggers recorded as changed since its
rows were read (#40), and gives the bytes of a render from scratch; where that record cannot be trusted (another
connection's database, a fact that landed between ids, a record someone removed, more changes than a read
costs) it reads every row. SQLite only: a server reads its rows at every render. Two profiles in one database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager

from pipeline import PersonaStore, run_pipeline
from pipeline.cli import app
from pipeline.store.sqlite import schema
from pipeline.store.sqlite.triggers import FIRST_TRIGGERS, NAMES

from ..conftest import digest, runner
from .test_kept_rows import PROFILES, settings_for, warm_and_from_scratch
from .test_render_cost import seed

FULL_READ = "+p.session_id"  # what only the read of every row of the profile says
CHANGES_READ = "FROM persona_changes"


@contextmanager
def stores(tmp_path) -> Iterator[tuple[dict[str, str], dict[str, PersonaStore]]]:
    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md")}
    opened = {profile: PersonaStore.from_settings(settings_for(base, profile)) for profile in PROFILES}
    try:
        for profile, store in opened.items():
            seed(store, profile)
            run_pipeline(settings_for(base, profile), store=store, dry_run=True)
        yield base, opened
    finally:
        for store in opened.values():
            store.close()


def another_tool(tmp_path, *statements: str) -> None:
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
        for statement in statements:
            conn.execute(statement)


def render_traced(store: PersonaStore, settings) -> tuple[str, list[str]]:
    """The kept store's render, with every statement it ran on its connection."""
    seen: list[str] = []
    with store.read() as conn:
        conn.set_trace_callback(seen.append)
        try:
            text = run_pipeline(settings, store=store, dry_run=True)[0].text
        finally:
            conn.set_trace_callback(None)
    return text, seen


def reads(statements: list[str]) -> tuple[bool, bool]:
    """(every row read, the changes read)"""
    return any(FULL_READ in s for s in statements), any(CHANGES_READ in s for s in statements)


def test_an_edit_is_read_alone_and_the_render_is_the_one_from_scratch(tmp_path):
    with stores(tmp_path) as (base, opened):
        another_tool(tmp_path, "UPDATE memoria_persona SET content = 'alice rule 1: now terse' "
                               "WHERE content LIKE 'alice rule 1:%'",
                     "DELETE FROM memoria_persona WHERE content LIKE 'alice rule 2:%'",
                     "INSERT INTO memoria_persona (session_id, tier, topic, content, confidence) "
                     "VALUES ('alice', 'permanent', 'new', 'alice wrote this elsewhere', 0.9)")
        for profile, store in opened.items():
            text, statements = render_traced(store, settings_for(base, profile))
            if profile == "alice":
                assert reads(statements) == (False, True)
                assert "now terse" in text and "alice rule 2:" not in text and "wrote this elsewhere" in text
            else:  # bob's counter did not move: his rows are kept as they were, nothing read
                assert reads(statements) == (False, False) and "alice" not in text
            warm, scratch = warm_and_from_scratch(store, settings_for(base, profile))
            assert warm == scratch == text


def test_a_fact_moved_to_the_other_profile_leaves_one_and_reaches_the_other(tmp_path):
    with stores(tmp_path) as (base, opened):
        another_tool(tmp_path, "UPDATE memoria_persona SET session_id = 'bob' WHERE content LIKE 'alice rule 9:%'")
        for profile, store in opened.items():
            text, statements = render_traced(store, settings_for(base, profile))
            # alice loses it from her kept rows; it lands among bob's by id, so his are read whole
            assert reads(statements) == ((False, True) if profile == "alice" else (True, True)), profile
            assert ("alice rule 9:" in text) == (profile == "bob")
            assert text == warm_and_from_scratch(store, settings_for(base, profile))[1]


def test_where_the_record_cannot_be_trusted_every_row_is_read(tmp_path):
    with stores(tmp_path) as (base, opened):
        alice, settings = opened["alice"], settings_for(base, "alice")
        [(low,)] = sqlite3.connect(tmp_path / "m.db").execute(
            "SELECT MIN(id) FROM memoria_persona WHERE session_id = 'alice'").fetchall()
        cases = {  # what: (written before the render that keeps the rows, written after it)
            # a fact that lands between the rows' ids: a read gives it in id order
            "between": ((f"DELETE FROM memoria_persona WHERE id = {low}",),
                        (f"INSERT INTO memoria_persona (id, session_id, tier, topic, content) VALUES ({low}, "
                         "'alice', 'permanent', 'topic 0', 'alice wrote this at an old id')",)),
            # a change whose record another tool removed: the rows no longer add up to the profile's count
            "record removed": ((), ("DELETE FROM memoria_persona WHERE content LIKE 'alice rule 20:%'",
                                    "DELETE FROM persona_changes WHERE profile = 'alice'")),
            # more changes than reading every row costs
            "many": ((), ("UPDATE memoria_persona SET content = content || ' (again)' WHERE session_id = 'alice'",)),
        }
        for what, (before, after) in cases.items():
            another_tool(tmp_path, *before)
            run_pipeline(settings, store=alice, dry_run=True)
            another_tool(tmp_path, *after)
            text, traced = render_traced(alice, settings)
            assert reads(traced)[0], what
            assert text == warm_and_from_scratch(alice, settings)[1], what
        assert "old id" in text and "alice rule 20:" not in text and "(again)" in text


def made_before_the_record(tmp_path) -> None:
    """A database as schema 16 left it: the triggers of then, no persona_changes."""
    before = next(version for version, group in enumerate(schema.MIGRATIONS)
                  if any("persona_changes" in statement for statement in group))
    another_tool(tmp_path, "DROP TABLE persona_changes", *(f"DROP TRIGGER {name}" for name in NAMES),
                 *FIRST_TRIGGERS, "ALTER TABLE persona_state DROP COLUMN stamp", "DROP TABLE persona_identity",
                 "DROP TABLE persona_record_homes", f"UPDATE persona_schema SET version = {before}")


def test_read_only_commands_leave_a_database_made_before_the_record_as_it_was(tmp_path):
    with stores(tmp_path):
        pass
    made_before_the_record(tmp_path)
    before, said = digest(tmp_path / "m.db"), []
    for args in (["list"], ["status"], ["render", "--dry-run"]):
        done = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "--set", "store.profile=alice", "--set",
                                   f"injection.file={tmp_path / 'p.md'}", *args])
        assert done.exit_code == 0, (args, done.output)
        said.append(done.stdout)
    assert "alice rule 1:" in said[0] and "60 facts written" in said[2] and digest(tmp_path / "m.db") == before


def test_a_database_made_before_the_record_of_changes_gets_it_and_its_triggers(tmp_path):
    """A database of schema 16 (the triggers of then, no persona_changes) is migrated when opened for writing:
    the triggers are made again, so another tool's change is recorded and read alone by the next render."""
    with stores(tmp_path):
        pass
    made_before_the_record(tmp_path)
    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md")}
    with PersonaStore.from_settings(settings_for(base, "bob")) as store:
        run_pipeline(settings_for(base, "bob"), store=store, dry_run=True)
        another_tool(tmp_path, "UPDATE memoria_persona SET content = 'bob rule 3: shorter' "
                               "WHERE content LIKE 'bob rule 3:%'")
        text, statements = render_traced(store, settings_for(base, "bob"))
        assert reads(statements) == (False, True) and "bob rule 3: shorter" in text
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn:
        assert conn.execute("SELECT version FROM persona_schema").fetchall() == [(schema.SCHEMA_VERSION,)]
        recorded = conn.execute("SELECT DISTINCT profile FROM persona_changes").fetchall()
    assert recorded == [("bob",)]  # only the change made since: alice's rows were written before the record
