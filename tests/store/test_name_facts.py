"""A name is a name: a tool, a place or a food that spells it ("Name is Zed Quinn", "Goes by Vim") makes it no fact
of that slot, so a fact about the editor never proposes to replace the user's name, in any language; a second
profile of the store sees none of it."""

from __future__ import annotations

import json

import pytest

from pipeline.cli import app

from ..conftest import runner

NAMES_AND_OTHERS = [
    ("Name is Zed Quinn.", "Main editor is Neovim."),
    ("My name is Helix Smith.", "Switched to VS Code."),
    ("Goes by Vim.", "Now uses Emacs instead of Vim."),
    ("Se llama Lucía Emacs y trabaja en Madrid.", "Usa Neovim como editor."),
    ("Je m'appelle Claire Fish.", "Mon shell est zsh maintenant."),
]


@pytest.mark.parametrize(("name", "other"), NAMES_AND_OTHERS)
def test_a_fact_about_a_tool_never_proposes_to_replace_a_name_that_spells_one(database, name, other):
    with database.store(profile="alice") as alice, database.store(profile="bob") as bob:
        named = alice.add(name, topic="about").fact
        bob.add(other, topic="about")
        written = alice.add(other, topic="about")
        assert [p for p in written.proposals if named.id in (p.old.id, p.new.id)] == []
        assert bob.add(name, topic="about").proposals == ()  # bob's editor is no name either


def test_an_imported_name_takes_the_identity_topic_and_a_new_name_still_changes_it(database, tmp_path):
    source = tmp_path / "facts.md"
    source.write_text("- Name is Zed Quinn.\n- Main editor is Neovim.\n", encoding="utf-8")
    done = runner.invoke(app, ["--db", str(database.target), "import", str(source), "--from", "lines", "--json",
                               "-p", "alice"])
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    topics = {entry["content"]: entry["topic"] for entry in answer["entries"]}
    assert topics["Name is Zed Quinn."] == "identity" and topics["Main editor is Neovim."] != "identity"
    assert answer["proposals"] == []
    with database.store(profile="alice") as alice:
        named = next(fact for fact in alice.list() if fact.content == "Name is Zed Quinn.")
        renamed = alice.add("Goes by Zee now, not Zed Quinn.", topic=named.topic)
        assert [(p.kind, p.old.id) for p in renamed.proposals] == [("update", named.id)]
