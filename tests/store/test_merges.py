"""Near-duplicates proposed as merges (issue 38): a write whose fact says what another of its topic says, one with
more, proposes to keep the fuller one; accepting supersedes the shorter by the fuller, with lineage and undo; the
CLI, the tools and the page show the kind. Writes answer with their related facts. Both backends; every test has
a second profile that must see none of the first's."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline import load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools

# (shorter, fuller) in the six languages; the issue's own examples first.
NEAR_DUPLICATES = [
    ("en", "Is a vegetarian.", "Is a vegetarian and allergic to nuts"),
    ("en", "Answers tersely.", "Answers tersely; no summary of what was just said."),
    ("en", "Reviews are async; prefers written design docs.",
     "Reviews are async; prefers written design docs that state the trade-offs up front."),
    ("de", "Schreibt Commit-Nachrichten auf Englisch.", "Schreibt Commit-Nachrichten auf Englisch, im Imperativ."),
    ("fr", "Préfère les réponses courtes.", "Préfère les réponses courtes et directes."),
    ("es", "Prefiere respuestas breves.", "Prefiere respuestas breves, sin introducciones."),
    ("it", "Usa pytest per i test.", "Usa pytest per i test, con pytest-xdist."),
    ("pt", "Prefere respostas curtas.", "Prefere respostas curtas e em português."),
]


def contents(store) -> list[str]:
    return sorted(fact.content for fact in store.list())


@pytest.mark.parametrize("fuller_first", [False, True])
@pytest.mark.parametrize(("lang", "shorter", "fuller"), NEAR_DUPLICATES)
def test_a_near_duplicate_proposes_a_merge_that_keeps_the_fuller_with_lineage_and_undo(
        database, lang, shorter, fuller, fuller_first):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    first, second = (fuller, shorter) if fuller_first else (shorter, fuller)
    other.add(first, topic="topic")
    mine.add(first, topic="topic")
    [proposal] = mine.add(second, topic="topic").proposals
    assert (proposal.kind, proposal.old.content, proposal.new.content) == ("merge", shorter, fuller)
    assert [p.kind for p in mine.proposals()] == ["merge"] and other.proposals() == []
    done = mine.accept(proposal.id)
    assert contents(mine) == [fuller] and done.new.content == fuller
    [gone, kept] = sorted(mine.history(done.new.id), key=lambda link: link.current)
    assert (gone.content, gone.superseded_by, kept.content) == (shorter, done.new.id, fuller)
    mine.undo_replace(done.new.id)
    assert contents(mine) == sorted([shorter, fuller]) and contents(other) == [first]


def test_review_lists_merges_beside_updates_with_their_kind(database, tmp_path):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    mine.add("Uses npm for JavaScript projects", topic="tools")
    mine.add("Uses pnpm for JavaScript projects", topic="tools")
    mine.add("Is a vegetarian.", topic="food")
    added = mine.add("Is a vegetarian and allergic to nuts", topic="food")
    other.add("Is a vegetarian.", topic="food")
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    runner = CliRunner()
    listed = runner.invoke(app, [*base, "review", "-p", "alice"])
    assert listed.exit_code == 0, listed.output
    assert "KIND" in listed.output and " update " in listed.output and " merge " in listed.output
    as_json = json.loads(runner.invoke(app, [*base, "review", "-p", "alice", "--json"]).output)
    assert [proposal["kind"] for proposal in as_json] == ["update", "merge"]
    said = runner.invoke(app, [*base, "add", "Is a vegetarian", "--topic", "food", "-p", "bob"])
    assert said.exit_code == 0 and "may update" not in said.output  # the same fact: already there, or a merge
    [merge] = added.proposals
    status = runner.invoke(app, [*base, "status", "-p", "alice"])
    assert f"proposal {merge.id}: #{merge.new.id} Is a vegetarian and allergic to nuts may merge" in status.output


def test_the_tools_show_a_merge_with_its_kind_and_the_fuller_fact(database, tmp_path):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    old = mine.add("Answers tersely.", topic="style").fact
    other.add("Answers tersely.", topic="style")
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p.md")})
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    answer = tools["persona_add"](content="Answers tersely; no summary of what was just said.", topic="style",
                                  profile="alice")
    [said] = answer["may_update"]
    assert (said["kind"], said["persona_id"], said["fuller"]) == ("merge", old.id, answer["persona_id"])
    listed = tools["persona_review"](action="list", profile="alice")
    assert [proposal["kind"] for proposal in listed["proposals"]] == ["merge"]
    accepted = tools["persona_review"](action="accept", proposal=said["proposal"], profile="alice")
    assert (accepted["superseded"], accepted["persona_id"]) == (old.id, answer["persona_id"])
    assert contents(mine) == ["Answers tersely; no summary of what was just said."]
    assert contents(other) == ["Answers tersely."] and other.proposals() == []
    assert "merge" in (tools["persona_review"].__doc__ or "") + str(tools["persona_review"].__annotations__)


def test_add_json_and_the_tools_answer_with_the_related_facts_of_the_topic_and_scope(database, tmp_path):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    style = [mine.add(text, topic="style").fact for text in ("Answers tersely.", "Prefers code examples over prose.")]
    mine.add("Uses uv, never pip.", topic="tools")
    mine.add("Answers in German here.", topic="style", scope="host:hermes")  # another scope: not related
    other.add("Writes docs in British English.", topic="style")
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    said = json.loads(CliRunner().invoke(app, [*base, "add", "Writes docs in British English.", "--topic", "style",
                                               "-p", "alice", "--json"]).output)
    assert [fact["id"] for fact in said["related"]] == [style[1].id, style[0].id]  # the latest first
    assert said["related"][0] == {"id": style[1].id, "topic": "style", "content": "Prefers code examples over prose."}
    overrides = {**database.settings(), "injection.file": str(tmp_path / "p.md"), "supersede.related": "1"}
    tools = PersonaTools(lambda: load_settings(overrides=overrides)).catalog(legacy=False)
    answer = tools["persona_add"](content="Likes tables for comparisons.", topic="style", profile="alice")
    assert len(answer["related"]) == 1 and set(answer["related"][0]) == {"persona_id", "content"}
    database.add_memory("m1", "Keeps answers under ten lines.", metadata='{"topic": "style"}')
    promoted = tools["persona_promote"](memory_id="m1", profile="alice")
    assert promoted["related"] and all("content" in fact for fact in promoted["related"])
    for name in ("persona_add", "persona_promote"):
        assert "related" in (tools[name].__doc__ or "") and "merge" in (tools[name].__doc__ or "")
    bobs = tools["persona_add"](content="Answers tersely.", topic="style", profile="bob")["related"]
    assert [fact["content"] for fact in bobs] == ["Writes docs in British English."]  # only bob's own
    assert "related" not in tools["persona_add"](content="Never force-pushes.", topic="git", profile="bob")


def test_facts_another_tool_writes_are_candidates_and_a_forgotten_facts_stems_go_with_it(database, tmp_path):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    mine.add("Answers tersely.", topic="style")  # the index has read alice's facts so far
    database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES "
                     "('alice', 'long_term', 'home', 'Lives in Berlin.')")
    [proposal] = mine.add("Moved to Lisbon last spring.", topic="home").proposals
    assert (proposal.kind, proposal.old.content) == ("update", "Lives in Berlin.")
    other.add("Lives in Berlin.", topic="home")
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p-{profile}.md")})
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    tools["persona_forget"](persona_id=proposal.old.id, profile="alice")
    table = "persona_stem_sets" if database.is_postgres else "persona_stems"  # PostgreSQL's compact form
    stems = database.execute(f"SELECT persona_id FROM {table} WHERE profile = 'alice' AND persona_id = ?",
                             (proposal.old.id,))
    assert stems == [] and database.execute(f"SELECT count(*) FROM {table} WHERE profile = 'bob'")[0][0] > 0
