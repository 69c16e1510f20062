"""Proposals that generalise (issue 50, point 1): a change is judged by the slot a fact fills and its value, not by
its wording. Through the store's ``add`` (its proposals), on both backends, with a second profile that sees none
of the first's; and the development sets' figures, as `make bench` prints them, held to the issue's goals."""

from __future__ import annotations

import pytest

from benchmarks.pairs import DATA, DEV, figures, load, score

# The issue's missed changes (the new fact as it quotes it; the old one as a user would have said it before).
MISSED = [
    ("en", "Is vegetarian.", "Started eating meat again."),
    ("de", "Trinkt jeden Morgen Kaffee.", "Trinkt keinen Kaffee mehr."),
    ("de", "Verwendet Eclipse.", "Verwendet inzwischen IntelliJ statt Eclipse."),
    ("fr", "Travaille chez Orange.", "A quitté Orange, travaille maintenant chez Capgemini."),
    ("es", "Trabaja en una agencia de publicidad.", "Dejó la agencia y ahora es freelance."),
    ("pt", "Organiza as tarefas no Trello.", "Trocou o Trello pelo Notion."),
    ("en", "The main repo is atlas-core.", "We renamed atlas-core to atlas-platform."),
    ("en", "Time zone is CET.", "I'm on Pacific time now since moving to Seattle."),
    ("it", "Beve caffè ogni mattina.", "Non beve più caffè."),
    ("fr", "Boit du thé.", "Ne boit plus de thé."),
]


def proposals_of(store, old: str, new: str, topic: str = "Tools"):
    first = store.add(old, topic=topic).fact
    return first, store.add(new, topic=topic).proposals


@pytest.mark.parametrize(("lang", "old", "new"), MISSED)
def test_the_issues_missed_changes_are_proposed_as_updates_of_the_old_fact(database, lang, old, new):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        other.add(old, topic="Tools")
        first, made = proposals_of(mine, old, new)
        assert [(proposal.kind, proposal.old.id) for proposal in made] == [("update", first.id)]
        assert other.add(new, topic="Tools").proposals[0].old.id != first.id  # bob's own fact, never alice's


@pytest.mark.parametrize(("old", "new"), [
    ("Name is Dana; pronouns she/her.", "Now uses Helix instead of Neovim."),
    ("Heißt Lena.", "Ist nach Berlin gezogen."),
    ("Pronouns: they/them.", "Moved to Lisbon last year."),
])
def test_a_fact_about_the_users_name_or_pronouns_is_never_proposed_for_replacement_by_another_slot(store, old, new):
    _, made = proposals_of(store, old, new, topic="general")
    assert made == ()


def test_another_name_does_replace_a_name(store):
    first, made = proposals_of(store, "Goes by Kate.", "Please call me Katherine from now on.", topic="identity")
    assert [(proposal.kind, proposal.old.id) for proposal in made] == [("update", first.id)]


@pytest.mark.parametrize(("old", "new"), [
    ("Doesn't eat meat.", "Eats meat again."),
    ("Doesn't drink coffee.", "Drinks coffee again."),
])
def test_a_negated_value_said_again_is_a_change(store, old, new):
    first, made = proposals_of(store, old, new, topic="food")
    assert [(proposal.kind, proposal.old.id) for proposal in made] == [("update", first.id)]


@pytest.mark.parametrize(("old", "new"), [
    ("Uses Windows.", "Uses Windows and Linux."),
    ("Usa macOS.", "Usa Linux em casa e macOS no trabalho."),
])
def test_one_value_more_of_a_slot_is_neither_a_change_nor_a_merge(store, old, new):
    assert proposals_of(store, old, new)[1] == ()


@pytest.mark.parametrize(("old", "new"), [
    ("Never force-push to main.", "Never push directly to main."),
    ("Prefers dark mode in the terminal.", "Prefers dark mode in the browser."),
    ("Never commit secrets to the repo.", "Never commit generated files to the repo."),
    ("Usa Windows en el portátil.", "Usa Linux en el servidor de casa."),
    ("The repo uses pre-commit hooks.", "The repo has CI on every push."),  # a project's facts, not its name
])
def test_look_alikes_are_not_proposed(store, old, new):
    assert proposals_of(store, old, new)[1] == ()


@pytest.mark.parametrize(("old", "new"), [
    ("Uses Neovim as the main editor.", "Switched to uv; doesn't use pip anymore."),
    ("Uses ruff for linting.", "Uses mypy for type checks."),
    ("Usa Git no trabalho.", "Usa Figma no trabalho."),
])
def test_facts_about_two_slots_are_never_one_change(store, old, new):
    assert proposals_of(store, old, new)[1] == ()


@pytest.mark.parametrize(("old", "new"), [
    ("Answers tersely.", "Keep answers terse, no recap."),
    ("Uses Neovim.", "Main editor is Neovim."),
    ("Nutzt uv.", "Paketmanager ist uv."),
])
def test_paraphrases_are_proposed_as_merges(store, old, new):
    made = proposals_of(store, old, new)[1]
    assert [proposal.kind for proposal in made] == ["merge"]


def test_the_development_sets_meet_the_issues_goals():
    """The figures `make bench` prints for tests/data/dev_pairs.yaml and dev_check_pairs.yaml (tuned on: a pin
    against regressions, not a measurement of generalisation; the blind set is that)."""
    for path in (DEV, DATA / "dev_check_pairs.yaml"):
        scores = score(load(path))
        assert scores.hits["change"] >= 0.85 * scores.total["change"], figures(scores)
        assert scores.total["keep"] - scores.hits["keep"] <= 0.10 * scores.total["keep"], figures(scores)
        assert scores.hits["merge"] >= 0.85 * scores.total["merge"], figures(scores)
        assert scores.total["lookalike"] - scores.hits["lookalike"] <= 0.10 * scores.total["lookalike"], \
            figures(scores)


def test_the_bench_reads_a_yaml_list_of_pairs_and_names_a_bad_one(tmp_path):
    good = tmp_path / "pairs.yaml"
    good.write_text("- {id: a1, lang: en, old: 'Lives in Oslo.', new: 'Moved to Bergen.', label: change}\n"
                    "- {id: a2, lang: en, old: 'Uses Vim.', new: 'Uses Vim.', label: keep}\n", "utf-8")
    scores = score(load(good))
    assert (scores.total["change"], scores.hits["change"], scores.total["keep"]) == (1, 1, 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {id: b7, lang: en, old: 'x', new: 'y', label: maybe}\n", "utf-8")
    with pytest.raises(ValueError, match="b7"):
        load(bad)


def test_a_package_manager_of_another_ecosystem_is_no_change(store):
    """Python's and JavaScript's package managers are two slots: npm for JavaScript never replaces uv for Python,
    and pnpm does replace npm."""
    store.add("Uses uv, never pip.", topic="tools")
    npm = store.add("Uses npm for JavaScript projects", topic="tools")
    assert npm.proposals == ()
    pnpm = store.add("Uses pnpm for JavaScript projects", topic="tools")
    assert [(proposal.kind, proposal.old.id) for proposal in pnpm.proposals] == [("update", npm.fact.id)]
