"""`persona review`: open proposals are accepted (a replace, with lineage and undo) or dismissed (remembered by their
texts, never proposed again); a proposal about a fact that left is no longer open; the CLI, the tool, status and
explain. Both backends; every test has a second profile whose proposals must never mix with the first's."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline import InputError, NotFoundError, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call

NPM, PNPM = "Uses npm for JavaScript projects", "Uses pnpm for JavaScript projects"


def contents(store) -> list[str]:
    return sorted(fact.content for fact in store.list())


def proposed(database):
    """Alice and Bob each hold npm, then write pnpm: one open proposal each."""
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    for store in (mine, other):
        store.add(NPM, topic="tools")
        store.add(PNPM, topic="tools")
    return mine, other


def cli(database, tmp_path, *args: str):
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    return CliRunner().invoke(app, [*base, *args])


def test_accept_replaces_with_lineage_and_undo_brings_the_old_fact_back_and_reopens_the_proposal(database):
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    done = mine.accept(proposal.id)
    assert contents(mine) == [PNPM] and mine.proposals() == []
    [first, second] = mine.history(done.new.id)
    assert (first.id, first.superseded_by, first.how) == (done.old.id, done.new.id, f"proposal #{proposal.id}")
    assert (second.id, second.current) == (done.new.id, True)
    undone = mine.undo_replace(done.new.id)
    assert undone.removed is None and undone.kept is not None and undone.kept.id == done.new.id
    assert contents(mine) == [NPM, PNPM]  # the newer fact was a fact of its own before: it stays
    assert [p.id for p in mine.proposals()] == [proposal.id]  # open again, to decide once more
    with pytest.raises(NotFoundError, match="no proposal"):
        other.accept(proposal.id)  # alice's proposal is not bob's to accept
    assert contents(other) == [NPM, PNPM] and len(other.proposals()) == 1


def test_a_dismissed_pair_is_never_proposed_again_even_when_both_facts_are_added_anew(database):
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    mine.dismiss(proposal.id)
    assert mine.proposals() == [] and contents(mine) == [NPM, PNPM]
    with pytest.raises(InputError, match="already dismissed"):
        mine.accept(proposal.id)
    for fact in mine.list():
        mine.demote(fact.id)
    mine.add(NPM, topic="tools", force=True)
    assert not mine.add(PNPM, topic="tools", force=True).proposals and mine.proposals() == []
    assert mine.add("Uses bun for JavaScript projects", topic="tools").proposals  # another pair still is
    assert len(other.proposals()) == 1  # bob never dismissed his


def test_a_promote_never_proposes_a_dismissed_pair_and_proposes_it_in_a_profile_that_never_dismissed(database):
    """A promote learns in its first read whether the profile ever dismissed a proposal, and reads the dismissals
    only then: alice's dismissal holds for a memory worded as her dismissed fact; bob, who dismissed nothing, is
    proposed the pair."""
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    mine.dismiss(proposal.id)
    for store in (mine, other):
        store.demote(next(fact.id for fact in store.list() if fact.content == PNPM))
        database.add_memory(f"m-{store.profile}", PNPM, session=store.profile, metadata='{"topic": "tools"}')
    promoted = {store.profile: store.promote(f"m-{store.profile}", force=True) for store in (mine, other)}
    assert promoted["alice"].created and not promoted["alice"].proposals and mine.proposals() == []
    assert [p.old.content for p in promoted["bob"].proposals] == [NPM] and len(other.proposals()) == 1


def test_a_dismissed_pair_leaves_its_place_among_a_writes_proposals_to_the_next_strongest(database):
    """A write reports its three strongest proposals; a pair the writer dismissed is not one of them, and the
    next one takes its place (bob, who dismissed nothing, gets the three strongest)."""
    tools = [f"Uses {tool} for JavaScript projects" for tool in ("yarn", "bun", "deno")]
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    mine.dismiss(proposal.id)
    for store in (mine, other):
        store.demote(next(fact.id for fact in store.list() if fact.content == PNPM))
        for content in tools:
            store.add(content, topic="tools")
    olds = {store.profile: {p.old.content for p in store.add(PNPM, topic="tools", force=True).proposals}
            for store in (mine, other)}
    assert olds == {"alice": set(tools), "bob": {NPM, *tools[:2]}}


def test_a_proposal_about_a_fact_that_left_is_no_longer_open(database):
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    mine.replace(proposal.old.id, PNPM)  # replaced by hand: the same effect as accepting
    assert mine.proposals() == []
    with pytest.raises(InputError, match="no longer open"):
        mine.dismiss(proposal.id)
    assert mine.undo_replace(proposal.new.id).kept is not None  # pnpm was a fact before the replace: it stays
    assert len(mine.proposals()) == 1
    mine.demote(proposal.new.id)
    assert mine.proposals() == [] and len(other.proposals()) == 1


def test_forget_removes_the_proposals_and_the_dismissals_of_a_fact(database, tmp_path):
    from pipeline.schedule.forget import forget

    mine, other = proposed(database)
    [proposal] = mine.proposals()
    mine.dismiss(proposal.id)
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p.md"),
                                        "store.profile": "alice"})
    forget(settings, mine, proposal.new.id)
    held = database.execute("SELECT COUNT(*) FROM persona_proposals WHERE session_id = 'alice'")
    assert held == [(0,)]  # neither the ids nor the keyed hashes of the forgotten text stay
    assert database.execute("SELECT COUNT(*) FROM persona_proposals WHERE session_id = 'bob'") == [(1,)]
    assert len(other.proposals()) == 1


def test_cli_review_lists_accepts_and_dismisses_per_profile(database, tmp_path):
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    listed = cli(database, tmp_path, "review", "-p", "alice")
    assert listed.exit_code == 0, listed.output
    assert f"#{proposal.old.id} {NPM}" in listed.output and f"#{proposal.new.id} {PNPM}" in listed.output
    as_json = json.loads(cli(database, tmp_path, "review", "list", "-p", "alice", "--json").output)
    assert [(p["id"], p["old"]["id"], p["new"]["content"]) for p in as_json] == [(proposal.id, proposal.old.id, PNPM)]
    accepted = cli(database, tmp_path, "review", "accept", str(proposal.id), "-p", "alice")
    assert accepted.exit_code == 0 and f"#{proposal.new.id} supersedes #{proposal.old.id}" in accepted.output
    assert "no open proposals" in cli(database, tmp_path, "review", "-p", "alice").output
    undone = cli(database, tmp_path, "undo-replace", str(proposal.new.id), "-p", "alice")
    assert undone.exit_code == 0 and f"#{proposal.new.id} stays" in undone.output
    dismissed = cli(database, tmp_path, "review", "dismiss", str(proposal.id), "-p", "alice", "--json")
    assert json.loads(dismissed.output)["id"] == proposal.id and contents(mine) == [NPM, PNPM]
    missing = cli(database, tmp_path, "review", "accept", "999999", "-p", "alice")
    assert missing.exit_code == 1 and "no proposal #999999 in profile 'alice'" in missing.output
    assert len(other.proposals()) == 1 and contents(other) == [NPM, PNPM]


def test_status_and_explain_show_the_open_proposals(database, tmp_path):
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    line = f"proposal {proposal.id}: #{proposal.new.id} {PNPM} may update #{proposal.old.id} {NPM}"
    assert line in cli(database, tmp_path, "status", "-p", "alice").output
    assert line in cli(database, tmp_path, "explain", "-p", "alice").output
    status = json.loads(cli(database, tmp_path, "status", "-p", "alice", "--json").output)
    assert [p["id"] for p in status["proposals"]] == [proposal.id]
    assert status["supersede_flags"] == [{"old": proposal.old.id, "new": proposal.new.id,
                                          "flagged_at": proposal.proposed_at}]  # the deprecated shape
    explained = json.loads(cli(database, tmp_path, "explain", "-p", "alice", "--json").output)
    assert explained[0]["proposals"][0]["old"]["content"] == NPM
    mine.dismiss(proposal.id)
    assert "proposal" not in cli(database, tmp_path, "status", "-p", "alice").output
    assert [p["id"] for p in json.loads(cli(database, tmp_path, "status", "-p", "bob", "--json").output)[
        "proposals"]] == [other.proposals()[0].id]


def test_the_review_tool_lists_accepts_and_dismisses(database, tmp_path):
    mine, other = proposed(database)
    [proposal] = mine.proposals()
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p.md")})
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    listed = call(tools, "persona_review", {"profile": "alice"})
    assert listed["count"] == 1 and listed["proposals"][0]["id"] == proposal.id
    with pytest.raises(InputError, match="take a proposal id"):
        call(tools, "persona_review", {"action": "accept", "profile": "alice"})
    with pytest.raises(InputError, match="action"):
        call(tools, "persona_review", {"action": "approve", "proposal": proposal.id, "profile": "alice"})
    accepted = call(tools, "persona_review", {"action": "accept", "proposal": proposal.id, "profile": "alice"})
    assert (accepted["superseded"], accepted["persona_id"]) == (proposal.old.id, proposal.new.id)
    assert accepted["takes_effect"] and contents(mine) == [PNPM]
    [bobs] = other.proposals()
    dismissed = call(tools, "persona_review", {"action": "dismiss", "proposal": bobs.id, "profile": "bob"})
    assert dismissed["dismissed"] is True and contents(other) == [NPM, PNPM] and other.proposals() == []
    assert "persona_review" in (tools["persona_add"].__doc__ or "")
    assert "dismiss" in (tools["persona_review"].__doc__ or "") and "Use " in (tools["persona_review"].__doc__ or "")


def test_open_flags_of_the_previous_schema_become_open_proposals(database):
    """The migration that brings proposals carries supersede.detect: flag's pairs over (both backends)."""
    from pipeline.store.postgres import schema as postgres
    from pipeline.store.sqlite import schema as sqlite

    mine, other = proposed(database)
    [proposal] = mine.proposals()
    migrations = (postgres if database.is_postgres else sqlite).MIGRATIONS
    version = next(index for index, group in enumerate(migrations) if "persona_proposals" in group[0])
    database.execute("DROP TABLE persona_proposals")
    for table in ("persona_stems", "persona_stemmed", "persona_stem_sets"):  # later migrations' (as they have it)
        database.execute(f"DROP TABLE IF EXISTS {table}")
    database.execute("CREATE TABLE persona_flags (session_id TEXT NOT NULL, old_id BIGINT NOT NULL, new_id BIGINT "
                     "NOT NULL, flagged_at TEXT NOT NULL, PRIMARY KEY (session_id, old_id, new_id))")
    database.execute("INSERT INTO persona_flags VALUES ('alice', ?, ?, '2026-11-30 10:00:00')",
                     (proposal.old.id, proposal.new.id))
    database.rewind_to(version)
    if database.is_postgres:  # a new process: this one checked the schema when it opened its pool
        from pipeline.store.postgres.pools import close_pool

        close_pool(str(database.target))
    [carried] = database.store(profile="alice").proposals()
    assert (carried.old.id, carried.new.id, carried.rule) == (proposal.old.id, proposal.new.id, "flag")
    assert other.proposals() == []  # the flags were alice's only


def test_the_migration_to_merge_proposals_keeps_open_proposals_as_updates_and_mnemosynes_table(database):
    """A database of the schema before merges (both backends): its proposals stay open, of kind update; the
    stem index is new; memoria_persona keeps exactly its columns."""
    from pipeline.store.postgres import schema as postgres
    from pipeline.store.sqlite import schema as sqlite

    mine, _ = proposed(database)
    [proposal] = mine.proposals()
    before = database.rows("memoria_persona")
    database.execute("ALTER TABLE persona_proposals DROP COLUMN kind")
    for table in ("persona_stems", "persona_stemmed", "persona_stem_sets"):
        database.execute(f"DROP TABLE IF EXISTS {table}")
    migrations = (postgres if database.is_postgres else sqlite).MIGRATIONS
    merges = next(version for version, group in enumerate(migrations) if any("persona_stems" in s for s in group))
    database.rewind_to(merges)  # the version before merges
    if database.is_postgres:  # a new process: this one checked the schema when it opened its pool
        from pipeline.store.postgres.pools import close_pool

        close_pool(str(database.target))
    store = database.store(profile="alice")
    [carried] = store.proposals()
    assert (carried.id, carried.kind, carried.to_dict()["kind"]) == (proposal.id, "update", "update")
    assert store.add("Is a vegetarian and allergic to nuts", topic="food").created  # the new index works
    assert database.rows("memoria_persona")[:len(before)] == before  # the same rows, the same columns
