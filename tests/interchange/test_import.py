"""Declarative facts files: idempotent, transactional, prunable, with clear errors."""

from __future__ import annotations

import pytest

from pipeline import FactsFileError, PersonaStore, StoreError, import_facts, load_settings
from pipeline.cli import app

from ..conftest import runner, write
from ..support.databases import fail_inserts_of

FACTS = """\
facts:
  - topic: style
    content: Answers tersely.
    tier: permanent
    confidence: 0.9
  - topic: tooling
    content: Uses uv, never pip.
"""


def snapshot(store: PersonaStore) -> list[dict]:
    return [f.to_dict() for f in store.list()]


def test_import_adds_facts(store, tmp_path):
    report = import_facts(store, write(tmp_path / "facts.yaml", FACTS))
    assert len(report.added) == 2
    facts = {f.content: f for f in store.list()}
    assert facts["Answers tersely."].tier == "permanent"
    assert facts["Answers tersely."].confidence == 0.9
    assert facts["Uses uv, never pip."].tier == "long_term"


def test_import_twice_changes_nothing(store, tmp_path):
    path = write(tmp_path / "facts.yaml", FACTS)
    import_facts(store, path)
    before = snapshot(store)
    report = import_facts(store, path)
    assert not report.changed and len(report.unchanged) == 2
    assert snapshot(store) == before


def test_a_bare_list_is_accepted(store, tmp_path):
    path = write(tmp_path / "facts.yaml", "- {topic: t, content: c}\n")
    assert len(import_facts(store, path).added) == 1


def test_changed_tier_updates_the_row(store, tmp_path):
    path = write(tmp_path / "facts.yaml", FACTS)
    import_facts(store, path)
    write(path, FACTS.replace("tier: permanent", "tier: working"))
    report = import_facts(store, path)
    assert len(report.updated) == 1
    assert {f.content: f.tier for f in store.list()}["Answers tersely."] == "working"


def test_prune_tombstones_facts_no_longer_in_the_file(store, tmp_path, database):
    path = write(tmp_path / "facts.yaml", FACTS)
    other = write(tmp_path / "other.yaml", "- {topic: misc, content: From another file.}\n")
    import_facts(store, path)
    import_facts(store, other)
    write(path, "facts:\n  - topic: style\n    content: Answers tersely.\n    tier: permanent\n    confidence: 0.9\n")
    report = import_facts(store, path, prune=True)
    assert len(report.pruned) == 1
    assert sorted(f.content for f in store.list()) == ["Answers tersely.", "From another file."]
    tomb = database.execute("SELECT preference, context_snippet FROM memoria_preferences")[0]
    assert tomb[0] == "[demoted from long_term] Uses uv, never pip."
    assert tomb[1].startswith("pruned: no longer in ")


def test_without_prune_removed_facts_stay(store, tmp_path):
    path = write(tmp_path / "facts.yaml", FACTS)
    import_facts(store, path)
    write(path, "facts: []\n")
    import_facts(store, path)
    assert len(store.list()) == 2


def test_a_demoted_fact_is_refused_and_nothing_imported_unless_skipped_or_forced(store, tmp_path):
    path = write(tmp_path / "facts.yaml", FACTS + "  - {topic: new, content: Added later.}\n")
    write(tmp_path / "first.yaml", FACTS)
    import_facts(store, tmp_path / "first.yaml")
    store.demote(store.list(topic="tooling")[0].id)
    before = snapshot(store)
    with pytest.raises(FactsFileError, match=r"facts\.yaml: fact #2: that fact was demoted; pass --force to take it "
                       r"in again; nothing was imported \(--skip-bad imports the rest\)"):
        import_facts(store, path)
    assert snapshot(store) == before
    report = import_facts(store, path, skip_bad=True)
    assert len(report.skipped_demoted) == 1 and len(report.added) == 1 and store.list(topic="tooling") == []
    assert [refusal.where for refusal in report.refused] == ["fact #2"]
    assert len(import_facts(store, path, force=True).added) == 1


def test_bad_entries_are_reported_by_index_and_line_and_nothing_changes(store, tmp_path):
    store.add("kept", topic="t")
    before = snapshot(store)
    path = write(
        tmp_path / "facts.yaml", FACTS + "  - topic: x\n    content: y\n    tier: forever\n  - content: no topic\n"
    )
    with pytest.raises(FactsFileError) as caught:
        import_facts(store, path)
    message = str(caught.value)
    assert "fact #3 (line 8): tier: input should be 'permanent', 'long_term' or 'working'" in message
    assert "fact #4 (line 11): topic: field required" in message
    assert snapshot(store) == before


def test_unknown_keys_in_an_entry_are_errors(store, tmp_path):
    path = write(tmp_path / "facts.yaml", "- {topic: t, content: c, tier: working, confidnce: 1}\n")
    with pytest.raises(FactsFileError, match=r"fact #1 \(line 1\): confidnce: extra inputs are not permitted"):
        import_facts(store, path)


def test_bad_yaml_in_a_facts_file_names_the_line(store, tmp_path):
    path = write(tmp_path / "facts.yaml", "facts:\n  - topic: [\n")
    with pytest.raises(FactsFileError, match=r"facts\.yaml:\d+:\d+: bad YAML"):
        import_facts(store, path)


def test_duplicate_entries_are_errors(store, tmp_path):
    path = write(tmp_path / "facts.yaml", "- {topic: t, content: c}\n- {topic: t, content: c}\n")
    with pytest.raises(FactsFileError, match="fact #2: repeats fact #1"):
        import_facts(store, path)


def test_a_failure_mid_import_rolls_everything_back(store, database, tmp_path):
    fail_inserts_of(database, "Uses uv, never pip.", "injected")
    with pytest.raises(StoreError, match="injected"):
        import_facts(store, write(tmp_path / "facts.yaml", FACTS))
    assert store.list() == []


# -- through the CLI -------------------------------------------------------------


def test_re_importing_keeps_confidence_earned_by_reinforce(tmp_path, seeded):
    facts = write(tmp_path / "f.yaml", "facts:\n  - {topic: git, content: Never force-push., confidence: 0.6}\n")
    settings = load_settings(overrides={"store.path": str(seeded), "retention.reinforce_step": 0.1})
    runner.invoke(app, ["--db", str(seeded), "import", str(facts)])
    with PersonaStore.from_settings(settings) as store:
        fact = store.list(topic="git")[0]
        store.reinforce(fact.id)
        store.reinforce(fact.id)
    runner.invoke(app, ["--db", str(seeded), "import", str(facts)])
    with PersonaStore(seeded) as store:
        assert store.list(topic="git")[0].confidence == pytest.approx(0.8)
    write(facts, "facts:\n  - {topic: git, content: Never force-push., confidence: 0.5}\n")  # the file changed
    runner.invoke(app, ["--db", str(seeded), "import", str(facts)])
    with PersonaStore(seeded) as store:
        assert store.list(topic="git")[0].confidence == pytest.approx(0.5)
