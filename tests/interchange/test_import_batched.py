"""An import is one transaction, on PostgreSQL a pipelined one (issue 52, point 4): its writes are queued and sent
with the next statement whose result is read, so a write that fails may raise only a round trip later, or at the
COMMIT. Wherever it fails, and when the server ends the connection in the middle, every row stays as it was (the
other profile's too), nothing is half-imported, and the next import in the same process succeeds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import StoreError, StoreUnavailable, import_facts
from pipeline.store.erasure import forget_fact

from ..conftest import write
from ..support.databases import Db, open_database

COUNT = 120  # two chunks of new_rows.CHUNK (100)
TABLES = ("memoria_persona", "persona_births", "persona_origins", "persona_state", "persona_stemmed")


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[Db]:
    """A schema of its own on the real PostgreSQL server, for what only a server has."""
    yield from open_database("postgresql", tmp_path)


def _facts(who: str, count: int = COUNT) -> str:
    return "facts:\n" + "".join(f"  - {{topic: topic {n % 5}, content: 'Rule {n} of {who}: keep answers short'}}\n"
                                for n in range(count))


def _everything(database: Db) -> dict[str, list[tuple]]:
    index = "persona_stem_sets" if database.is_postgres else "persona_stems"
    return {table: database.rows(table) for table in (*TABLES, index)}


def _two_profiles(database: Db, tmp_path):
    """Alice with an earlier file imported, Bob with his: what a failed import must leave as it was."""
    alice, bob = database.store(profile="alice"), database.store(profile="bob")
    import_facts(bob, write(tmp_path / "bob.yaml", _facts("bob")))
    import_facts(alice, write(tmp_path / "earlier.yaml", _facts("alice, earlier", 10)))
    return alice, bob


def _fail_origins_of(database: Db, file: str) -> None:
    """Recording the origin of a fact from ``file`` fails: a queued write whose answer nobody reads."""
    if database.is_postgres:
        database.execute("CREATE FUNCTION fail_origin() RETURNS trigger AS $$ BEGIN IF NEW.origin LIKE "
                         f"'%{file}' THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
        database.execute("CREATE TRIGGER fail_origin BEFORE INSERT ON persona_origins FOR EACH ROW EXECUTE "
                         "FUNCTION fail_origin()")
    else:
        database.execute(f"CREATE TRIGGER fail_origin BEFORE INSERT ON persona_origins WHEN NEW.origin LIKE "
                         f"'%{file}' BEGIN SELECT RAISE(ABORT, 'injected'); END")


def test_a_failed_write_nobody_reads_leaves_every_row_as_it_was(database, tmp_path):
    alice, bob = _two_profiles(database, tmp_path)
    before = _everything(database)
    _fail_origins_of(database, "later.yaml")
    path = write(tmp_path / "later.yaml", _facts("alice"))
    with pytest.raises(StoreError, match="injected"):
        import_facts(alice, path)
    assert _everything(database) == before
    database.execute("DROP TRIGGER fail_origin" + (" ON persona_origins" if database.is_postgres else ""))
    report = import_facts(alice, path)  # the same process, its pooled connection given back clean
    assert len(report.added) == COUNT and len(alice.list()) == COUNT + 10 and len(bob.list()) == COUNT
    assert import_facts(alice, path).changed is False


def test_a_server_that_ends_the_connection_mid_import_leaves_every_row_as_it_was(pg, tmp_path):
    alice, bob = _two_profiles(pg, tmp_path)
    before = _everything(pg)
    # The server process ends itself while indexing the import's facts, after the facts went in, before the COMMIT.
    pg.execute("CREATE FUNCTION end_connection() RETURNS trigger AS $$ BEGIN IF NEW.profile = 'alice' THEN PERFORM "
               "pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
    pg.execute("CREATE TRIGGER end_connection BEFORE INSERT ON persona_stem_sets FOR EACH ROW EXECUTE FUNCTION "
               "end_connection()")
    path = write(tmp_path / "later.yaml", _facts("alice"))
    with pytest.raises(StoreUnavailable, match=r"lost the connection .* nothing was changed"):
        import_facts(alice, path)
    assert _everything(pg) == before
    pg.execute("DROP TRIGGER end_connection ON persona_stem_sets")
    assert len(import_facts(alice, path).added) == COUNT  # the pool lends a fresh connection
    assert len(alice.list()) == COUNT + 10 and len(bob.list()) == COUNT


def test_a_batched_import_checks_each_fact_as_before_for_one_profile_only(database, tmp_path):
    alice = database.store(profile="alice", supersede_detect="propose")
    bob = database.store(profile="bob", supersede_detect="propose")
    old = alice.add("Uses npm for JavaScript projects", topic="tools").fact
    there = alice.add("Answers tersely.", topic="style").fact
    gone = alice.add("Rule 7 of alice: keep answers short", topic="topic 2").fact
    forget_fact(alice, gone.id)
    bob_old = bob.add("Uses npm for JavaScript projects", topic="tools").fact
    path = write(tmp_path / "f.yaml", _facts("alice", 12) + "  - {topic: tools, content: Now uses pnpm for "
                 "JavaScript projects}\n  - {topic: style, content: Answers tersely.}\n")
    report = import_facts(alice, path)
    assert len(report.added) == 12 and report.unchanged == [there.id]  # 11 rules and pnpm; the style already there
    assert len(report.skipped_forgotten) == 1 and "Rule 7 of alice" not in str(report.to_dict())
    assert [(proposal.old.id, proposal.new.id) for proposal in report.proposals] == [(old.id, report.added[-1])]
    assert [fact.id for fact in bob.list()] == [bob_old.id] and bob.proposals() == []
