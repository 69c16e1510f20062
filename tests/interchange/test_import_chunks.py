"""An import writes its facts a chunk at a time (issue 52, point 4: a fleet's import on PostgreSQL paid three round
trips a fact): each fact as one insert after another would make it, in the source's order, with its writer, scope,
origin and slot; a forgotten entry in a later chunk skipped and named by place; a failure in the last chunk leaves
the store as it was. Both backends; a second profile is untouched."""

from __future__ import annotations

import pytest

from pipeline import StoreError, import_facts
from pipeline.store.erasure import forget_fact

from ..conftest import write
from ..support.databases import fail_inserts_of

COUNT = 250  # three chunks of new_rows.CHUNK (100)
SCOPES = ("", "    scope: host:cursor\n", "    scope: host:codex\n")
KEYED = (60, 180)  # slot_0, slot_1: each supersedes the fact an earlier file put in that slot
EARLIER = "facts:\n  - {topic: t, content: Old zero., key: slot_0}\n  - {topic: t, content: Old one., key: slot_1}\n"


def _facts(count: int = COUNT) -> str:
    return "facts:\n" + "".join(
        f"  - topic: topic {n % 7}\n    content: Rule number {n} of the house.\n    tier: "
        f"{('long_term', 'permanent')[n % 2]}\n    confidence: 0.{5 + n % 4}\n{SCOPES[n % 3]}"
        + (f"    key: slot_{n // 120}\n" if n in KEYED else "") for n in range(count))


def _rows(store) -> list[tuple]:
    return [(fact.content, fact.topic, fact.tier, fact.confidence, fact.writer, fact.scope)
            for fact in sorted(store.list(), key=lambda fact: fact.id)]


def test_an_import_of_three_chunks_makes_each_fact_as_one_insert_after_another_would(database, tmp_path):
    path = write(tmp_path / "facts.yaml", _facts())
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    other.add("Answers tersely.", topic="style")
    olds = import_facts(mine, write(tmp_path / "earlier.yaml", EARLIER)).added
    report = import_facts(mine, path)
    assert report.added == sorted(report.added) and len(report.added) == COUNT
    expected = [(f"Rule number {n} of the house.", f"topic {n % 7}", ("long_term", "permanent")[n % 2],
                 float(f"0.{5 + n % 4}"), f"import:facts:{path}", (None, "host:cursor", "host:codex")[n % 3])
                for n in range(COUNT)]
    assert _rows(mine) == expected  # every fact in the file's order, as written; the earlier file's two replaced
    assert [(entry["old"], entry["new"]) for entry in report.keyed] == [(olds[0], report.added[60]),
                                                                        (olds[1], report.added[180])]
    assert import_facts(mine, path).changed is False  # each fact's origin was recorded: the same file, unchanged
    assert [fact.content for fact in other.list()] == ["Answers tersely."]


def test_a_forgotten_entry_in_a_later_chunk_is_skipped_by_place_and_the_rest_imported(database, tmp_path):
    path = write(tmp_path / "facts.yaml", _facts())
    mine = database.store(profile="alice")
    first = import_facts(mine, path)
    forget_fact(mine, first.added[150])
    again = import_facts(database.store(profile="alice"), write(tmp_path / "again.yaml", _facts()))
    assert [where for where in again.skipped_forgotten] == [entry["where"] for entry in again.entries
                                                             if entry["outcome"] == "forgotten"]
    assert len(again.skipped_forgotten) == 1 and "Rule number 150 " not in str(again.to_dict())


def test_a_failure_in_the_last_chunk_leaves_the_store_as_it_was(database, tmp_path):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    other.add("Answers tersely.", topic="style")
    before = database.rows("memoria_persona")
    fail_inserts_of(database, "Rule number 240 of the house.", "injected")
    with pytest.raises(StoreError, match="injected"):
        import_facts(mine, write(tmp_path / "facts.yaml", _facts()))
    assert database.rows("memoria_persona") == before and mine.list() == []
    assert database.execute("SELECT count(*) FROM persona_origins") == [(0,)]
