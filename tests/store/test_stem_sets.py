"""PostgreSQL's compact stem index (issue 52, point 4): one row per (topic, fact) instead of one per stem, and the
same candidates as SQLite's rows, so the same proposals and the same closest facts; a database of the per-stem
table migrates to it, every profile indexed again from its facts' text at its next check."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pipeline.store.erasure import forget_fact
from pipeline.store.postgres import schema
from pipeline.store.postgres.pools import close_pool
from pipeline.store.stem_tables import merges_and_stems, stem_sets

from ..support.databases import Db, open_database

# One topic past every bound of the check: more than PER_STEM (24) facts share "plant" and "window", more than
# RECENT (12) come after the fact a change names, and a slot (where the user lives) brings it without a word.
WRITES = [("home", "Lives in Lisbon."), ("home", "Keeps the plant by the window watered."),
          *(("home", f"Keeps plant number {n} by the window.") for n in range(30)),
          ("home", "Relocated to Porto in the spring."), ("home", "Moved the plant number 7 to the kitchen window."),
          ("tools", "Edits code in Sublime Text."), ("tools", "Uses zsh as the shell."),
          *(("tools", f"Keeps note number {n} in a text file.") for n in range(14)),
          ("tools", "Switched the shell over to fish."), ("tools", "I've been on Helix for a month now."),
          ("Tools", "Prefers editing Markdown in Sublime Text with a dark theme.")]


@contextmanager
def _opened(kind: str, tmp_path: Path) -> Iterator[Db]:
    yield from open_database(kind, tmp_path)


def _seen(store, topic: str, content: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A write's proposals (kind, old text) and its closest facts' texts: what a writer is shown."""
    written = store.add(content, topic=topic)
    return ([(proposal.kind, proposal.old.content) for proposal in written.proposals],
            [fact.content for fact in written.related])


def test_postgresql_proposes_and_relates_as_sqlite_does_past_every_bound(tmp_path):
    with ExitStack() as stack:
        lite, server = (stack.enter_context(_opened(kind, tmp_path)) for kind in ("sqlite", "postgresql"))
        seen = {}
        for name, db in (("sqlite", lite), ("postgresql", server)):
            mine, other = db.store(profile="alice"), db.store(profile="bob")
            with mine, other:
                other.add("Lives in Lisbon.", topic="home")
                seen[name] = [_seen(mine, topic, content) for topic, content in WRITES]
                assert other.add("Moved to Porto last month.", topic="home").proposals[0].old.session_id == "bob"
        assert seen["postgresql"] == seen["sqlite"]
        assert ("update", "Lives in Lisbon.") in seen["sqlite"][32][0]  # the bounds were reached, not avoided


def test_postgresql_keeps_one_row_per_topic_and_fact_and_a_forgotten_facts_row_goes(pg):
    mine, other = pg.store(profile="alice"), pg.store(profile="bob")
    with mine, other:
        ids = [mine.add(content, topic=topic).fact.id for topic, content in WRITES[:20]]
        other.add("Lives in Lisbon.", topic="home")
        counted = pg.execute("SELECT profile, count(*), count(DISTINCT persona_id) FROM persona_stem_sets "
                             "GROUP BY profile ORDER BY profile")
        assert counted == [("alice", 20, 20), ("bob", 1, 1)]
        forget_fact(mine, ids[0])
        assert pg.execute("SELECT count(*) FROM persona_stem_sets WHERE persona_id = ?", (ids[0],)) == [(0,)]
        assert pg.execute("SELECT count(*) FROM persona_stem_sets WHERE profile = 'bob'") == [(1,)]


def test_a_database_of_the_per_stem_table_migrates_and_indexes_each_profile_again_at_its_next_check(pg):
    with pg.store(profile="alice") as mine, pg.store(profile="bob") as other:
        old = mine.add("Lives in Lisbon.", topic="home").fact
        other.add("Lives in Berlin.", topic="home")
    pg.execute("DROP TABLE persona_stem_sets")
    pg.execute("DROP TABLE persona_stemmed")
    for statement in merges_and_stems("BIGINT")[1:]:  # the tables as the release before made them, filled
        pg.execute(statement)
    pg.execute("INSERT INTO persona_stems VALUES ('alice', 'ab12', ?)", (old.id,))
    pg.execute("INSERT INTO persona_stemmed VALUES ('alice', ?)", (old.id,))
    before = next(number for number, made in enumerate(schema.MIGRATIONS) if made == stem_sets())
    pg.execute("UPDATE persona_schema SET version = ?", (before,))  # the migrations from the compact index's on
    close_pool(str(pg.target))  # a new process: this one checked the schema when it opened its pool
    with pg.store(profile="alice") as mine, pg.store(profile="bob") as other:
        [proposal] = mine.add("Moved to Porto last spring.", topic="home").proposals
        assert proposal.old.id == old.id
        assert other.add("Moved to Munich.", topic="home").proposals[0].old.content == "Lives in Berlin."
    assert pg.execute("SELECT to_regclass('persona_stems') IS NULL") == [(True,)]
    assert pg.execute("SELECT profile, count(*) FROM persona_stem_sets GROUP BY profile ORDER BY profile") == [
        ("alice", 2), ("bob", 2)]
