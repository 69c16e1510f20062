"""Near-duplicates said in other words, and look-alikes a qualifier sets apart (issue 50, task 50 points A and B):
through the store's ``add`` (its proposals), on both backends, with a second profile that sees none of the first's;
and the development sets' figures held to the issue's goals."""

from __future__ import annotations

import pytest

from benchmarks.pairs import DATA, figures, load, score

# Two facts that say the same thing, in other words: negations said two ways ("dislikes" / "don't use"), synonyms
# ("responses" / "replies"), inflections, light and polite words ("please", "always", "every").
SAID_AGAIN = [
    ("en", "Dislikes emojis in responses.", "Don't use emoji in replies."),
    ("en", "Always run tests before committing.", "Run the test suite before every commit."),
    ("en", "Answers tersely.", "Keep answers terse, no recap."),
    ("de", "Mag keine Emojis in Antworten.", "Bitte keine Emojis in Antworten verwenden."),
    ("de", "Führt vor jedem Commit die Tests aus.", "Tests immer vor dem Commit laufen lassen."),
    ("fr", "N'aime pas les emojis dans les réponses.", "Pas d'emoji dans les réponses."),
    ("fr", "Utilise Neovim.", "Son éditeur principal est Neovim."),
    ("es", "No le gustan los emojis en las respuestas.", "Sin emojis en las respuestas."),
    ("it", "Non ama le emoji nelle risposte.", "Niente emoji nelle risposte."),
    ("pt", "Sempre roda os testes antes de commitar.", "Rodar os testes antes de cada commit."),
]


def proposals_of(store, old: str, new: str, topic: str = "style"):
    first = store.add(old, topic=topic).fact
    return first, store.add(new, topic=topic).proposals


@pytest.mark.parametrize(("lang", "old", "new"), SAID_AGAIN)
def test_a_fact_said_again_in_other_words_is_proposed_as_a_merge(database, lang, old, new):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        other.add(old, topic="style")
        first, made = proposals_of(mine, old, new)
        assert [(proposal.kind, first.id in (proposal.old.id, proposal.new.id)) for proposal in made] == \
            [("merge", True)]
        assert all(first.id not in (p.old.id, p.new.id) for p in other.add(new, topic="style").proposals)


@pytest.mark.parametrize(("old", "new"), [
    ("Uses emojis in answers.", "No emojis in answers anymore."),
    ("Uses Docker for deploys.", "Doesn't use Docker for deploys anymore."),
])
def test_a_negation_of_the_old_fact_is_a_change_not_a_merge(store, old, new):
    first, made = proposals_of(store, old, new)
    assert [(proposal.kind, proposal.old.id) for proposal in made] == [("update", first.id)]


@pytest.mark.parametrize(("old", "new"), [
    ("Dislikes emojis.", "Dislikes tabs."),
    ("No emojis in commit messages.", "No emojis in code comments."),
    ("Run tests before committing.", "Run the formatter before committing."),
    ("Uses Neovim for everything.", "Uses Neovim for Rust projects."),
])
def test_two_facts_alike_in_all_but_what_they_say_are_neither_merged_nor_changed(store, old, new):
    assert proposals_of(store, old, new)[1] == ()


@pytest.mark.parametrize(("old", "new"), [
    ("Work laptop runs Windows.", "Home laptop runs Linux."),
    ("Personal email is on Fastmail.", "Work email is on Gmail."),
    ("Der Arbeitslaptop läuft mit Windows.", "Der private Laptop läuft mit Linux."),
    ("Au travail, utilise Windows.", "À la maison, utilise Linux."),
    ("En el trabajo usa Windows.", "En casa usa Linux."),
    ("Al lavoro usa Slack.", "A casa usa Telegram."),
    ("No trabalho usa Windows.", "Em casa usa Linux."),
    ("Montags arbeitet im Büro.", "Freitags arbeitet von zu Hause."),
    ("Personal email is on Gmail.", "Work email is on Gmail."),
])
def test_a_qualifier_work_home_or_a_weekday_makes_two_slots_with_no_proposal(database, old, new):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        other.add(old, topic="tools")
        assert proposals_of(mine, old, new, topic="tools")[1] == ()


@pytest.mark.parametrize(("old", "new"), [
    ("Work laptop runs Windows.", "Work laptop runs Linux now."),
    ("Works from the office.", "Works from home now."),
    ("The standup is on Mondays at 9.", "The standup moved to Tuesdays at 10."),
])
def test_the_same_qualifier_or_a_slot_of_spheres_still_changes(store, old, new):
    first, made = proposals_of(store, old, new, topic="work")
    assert [(proposal.kind, proposal.old.id) for proposal in made] == [("update", first.id)]


def test_the_paraphrase_sets_meet_the_issues_goals():
    """The figures of tests/data/dev_paraphrase_pairs.yaml (tuned on) and dev_paraphrase_check.yaml (written after
    the rules, then its inflections added): a pin against regressions, not a measurement of generalisation."""
    for name in ("dev_paraphrase_pairs.yaml", "dev_paraphrase_check.yaml"):
        scores = score(load(DATA / name))
        assert scores.hits["merge"] >= 0.85 * scores.total["merge"], figures(scores)
        assert scores.total["lookalike"] - scores.hits["lookalike"] <= 0.10 * scores.total["lookalike"], \
            figures(scores)
        assert scores.total["keep"] - scores.hits["keep"] <= 0.10 * scores.total["keep"], figures(scores)
        assert scores.hits["change"] == scores.total["change"], figures(scores)


def test_items_under_one_label_never_propose_against_each_other_but_a_labelled_slot_does(database):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        for store in (mine, other):
            made = [store.add(item, topic="stack").proposals for item in ("Stack: Python", "Stack: Postgres",
                                                                           "Stack: Redis")]
            assert made == [(), (), ()]
        emacs = mine.add("Editor: Emacs.", topic="tools").fact
        assert [(p.kind, p.old.id) for p in mine.add("Editor: Helix.", topic="tools").proposals] == \
            [("update", emacs.id)]


def test_a_new_job_is_never_proposed_against_the_editor(store):
    store.add("Uses Neovim as the main editor.", topic="general")
    assert store.add("Started a new job at Initech.", topic="general").proposals == ()
