"""Closeness in meaning (``supersede.embeddings``, the ``embed`` extra that `make install` installs): where the word
rules name several facts of a topic as changed by one write, only those closest in meaning are proposed; off, the
rules alone; its vectors leave with a forget."""

from __future__ import annotations

import pytest

from pipeline import PersonaStore, caches, load_settings
from pipeline.errors import ConfigError
from pipeline.schedule.forget import forget
from pipeline.store import meaning
from tests.integrations.text_traces import caches_holding

OLD = "Prefers answers as bullet points."
BESIDE = ("Meeting notes list action items as bullet points.", "Release notes use bullet points, one change per line.")
NEW = "Prefers replies as short prose paragraphs rather than bullet points."


def written(store: PersonaStore) -> list[str]:
    """The old facts the change's write proposes to update, in a topic that holds two more its words name."""
    for text in (OLD, *BESIDE):
        store.add(text, topic="style")
    return [proposal.old.content for proposal in store.add(NEW, topic="style").proposals if proposal.kind == "update"]


def test_the_extra_is_installed_where_the_suite_runs():
    assert meaning.installed()  # `make install` installs persona-tier[embed]: the path with it is tested for real


def test_a_change_is_proposed_against_the_fact_closest_in_meaning_and_off_against_every_fact_the_rules_name(database):
    alice = database.store(profile="alice")  # the default, auto
    bob = database.store(profile="bob", supersede_embeddings="off")
    assert (alice.supersede_embeddings, bob.supersede_embeddings) == ("auto", "off")
    assert written(alice) == [OLD]
    assert sorted(written(bob)) == sorted([OLD, *BESIDE])
    alice.close()
    bob.close()


def test_several_values_of_one_slot_stay_proposed_whatever_their_closeness(database):
    """One rule naming several facts (three package managers the new one replaces) leaves nothing to choose."""
    with database.store(profile="alice") as alice:
        for tool in ("npm", "yarn", "bun"):
            alice.add(f"Uses {tool} for JavaScript projects.", topic="tools")
        made = alice.add("Uses pnpm for JavaScript projects.", topic="tools").proposals
    assert len([proposal for proposal in made if proposal.kind == "update"]) == 3


def test_the_setting_defaults_to_auto_and_takes_only_auto_or_off(tmp_path):
    target = {"store.path": str(tmp_path / "m.db")}
    assert load_settings(overrides=target).supersede.embeddings == "auto"
    for mode in ("auto", "off"):
        settings = load_settings(overrides={**target, "supersede.embeddings": mode, "store.profile": "alice"})
        with PersonaStore.from_settings(settings) as store:
            assert store.supersede_embeddings == mode
    with pytest.raises(ConfigError):
        load_settings(overrides={**target, "supersede.embeddings": "always"})


def test_a_forget_drops_the_vectors_of_the_texts_it_erases(database, tmp_path):
    base = {**database.settings(), "injection.file": str(tmp_path / "{profile}.md")}
    settings = {profile: load_settings(overrides={**base, "store.profile": profile}) for profile in ("alice", "bob")}
    with PersonaStore.from_settings(settings["alice"]) as alice, PersonaStore.from_settings(settings["bob"]) as bob:
        written(alice)
        written(bob)
        assert "meaning.vectors" in caches_holding(NEW)
        kept = [entry for entry in caches.entries("meaning.vectors") if isinstance(entry, tuple)]
        assert {("alice", NEW), ("bob", NEW)} <= set(kept)  # each profile's own, as every cache is keyed
        victim = next(fact for fact in alice.list() if fact.content == NEW)
        forget(settings["alice"], alice, victim.id)
        assert caches_holding(NEW) == []
        assert NEW in {fact.content for fact in bob.list()} and NEW not in {fact.content for fact in alice.list()}


def test_the_scan_proposes_merges_across_topics_only_with_closeness_in_meaning(database):
    """Two sources file one fact under two topics: the scan finds it with the extra, never an update across."""
    alice = database.store(profile="alice")
    bob = database.store(profile="bob", supersede_embeddings="off")
    for store in (alice, bob):
        store.add("Uses pytest for tests.", topic="general")
        store.add("Tests use pytest", topic="tools")
        store.add("Main editor is Helix.", topic="general")
        store.add("Switched the editor to Zed.", topic="tools")
    found = {(p.kind, p.old.content, p.new.content) for p in alice.proposals(scan=True)}
    assert found == {("merge", "Tests use pytest", "Uses pytest for tests.")}
    assert bob.proposals(scan=True) == []
    alice.close()
    bob.close()
