"""Correct and supersede: replace (by id or a unique piece of text), undo, history, keys, and explain, on both
backends. Every test has a second profile whose facts must stay untouched."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline import InputError, NotFoundError, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools

from ..conftest import write


def facts(store) -> list[str]:
    return [fact.content for fact in store.list()]


def two_profiles(database):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    mine.add("Uses npm for JavaScript packaging", topic="tools")
    other.add("Uses npm for JavaScript packaging", topic="tools")
    other.add("Lives in Hamburg", topic="home")
    return mine, other


def test_replace_supersedes_in_one_transaction_with_lineage_and_leaves_mnemosynes_table_current(database):
    mine, other = two_profiles(database)
    old = mine.list()[0]
    result = mine.replace(old.id, "Uses pnpm for JavaScript packaging")
    assert facts(mine) == ["Uses pnpm for JavaScript packaging"]
    assert (result.old.id, result.new.topic, result.new.tier) == (old.id, "tools", old.tier)
    # Mnemosyne's table holds only current facts; the old row (whole) is in ours, with its lineage.
    rows = database.execute("SELECT content FROM memoria_persona WHERE session_id = 'alice'")
    assert rows == [("Uses pnpm for JavaScript packaging",)]
    moved = database.execute("SELECT id, content, superseded_by, how FROM persona_superseded")
    assert moved == [(old.id, "Uses npm for JavaScript packaging", result.new.id, "replaced")]
    assert facts(other) == ["Uses npm for JavaScript packaging", "Lives in Hamburg"]  # bob's are untouched


def test_replace_by_a_unique_piece_of_text_and_an_ambiguous_or_absent_one_is_one_clear_error(database):
    mine, other = two_profiles(database)
    mine.add("Uses uv for Python packaging", topic="tools")
    with pytest.raises(InputError, match=r"2 persona facts contain that text \(#\d+, #\d+\)"):
        mine.replace("packaging", "Uses bun")
    with pytest.raises(NotFoundError, match="no persona fact in profile 'alice' contains that text"):
        mine.replace("Hamburg", "Lives in Berlin")  # bob's fact is not alice's to replace
    assert mine.replace("npm", "Uses pnpm for JavaScript packaging").old.content == "Uses npm for JavaScript packaging"
    assert "Lives in Hamburg" in facts(other)


def test_undo_restores_the_old_fact_under_its_id_and_removes_the_replacement(database):
    mine, other = two_profiles(database)
    old = mine.list()[0]
    mine.reinforce(old.id)
    new = mine.replace(old.id, "Uses pnpm for JavaScript packaging").new
    for undo_with in (new.id, old.id):  # by the replacement's id, or by the old fact's
        restored = mine.undo_replace(undo_with)
        assert restored.restored[0].id == old.id and restored.removed.id != old.id
        back = mine.get(old.id)
        assert (back.content, back.reinforcement_count) == (old.content, 1)
        assert facts(mine) == ["Uses npm for JavaScript packaging"]
        assert database.execute("SELECT COUNT(*) FROM persona_superseded") == [(0,)]
        new = mine.replace(old.id, "Uses pnpm for JavaScript packaging").new
    with pytest.raises(InputError, match="replaced no other fact"):
        other.undo_replace(other.list()[0].id)
    with pytest.raises(InputError, match=f"superseded by #{new.id}"):
        mine.replace(old.id, "anything")  # decided inside the write: the old fact is no longer current


def test_history_shows_the_chain_both_ways_and_undo_refuses_a_gone_replacement(database):
    mine, _ = two_profiles(database)
    first = mine.list()[0]
    second = mine.replace(first.id, "Uses pnpm for JavaScript packaging").new
    third = mine.replace(second.id, "Uses bun for JavaScript packaging").new
    for through in (first.id, second.id, third.id):
        chain = mine.history(through)
        assert [(link.id, link.current, link.superseded_by) for link in chain] == [
            (first.id, False, second.id), (second.id, False, third.id), (third.id, True, None)]
    mine.demote(third.id)
    with pytest.raises(InputError, match="no longer in the persona"):
        mine.undo_replace(second.id)
    with pytest.raises(NotFoundError):
        mine.history(10_000)


def test_cli_replace_history_undo_and_explain(database, tmp_path):
    mine, other = two_profiles(database)
    old = mine.list()[0]
    runner = CliRunner()
    base = ["--db", str(database.target)]
    settings = write(tmp_path / "p.yaml", f"injection:\n  file: {tmp_path / 'persona-{profile}.md'}\n")
    base += ["-c", str(settings)]
    replaced = runner.invoke(app, [*base, "replace", str(old.id), "Uses pnpm for JavaScript packaging", "-p", "alice",
                                   "--json"])
    assert replaced.exit_code == 0, replaced.output
    new_id = json.loads(replaced.output)["new"]["id"]
    history = runner.invoke(app, [*base, "history", str(old.id), "-p", "alice", "--json"])
    assert [link["id"] for link in json.loads(history.output)] == [old.id, new_id]
    explained = runner.invoke(app, [*base, "explain", "-p", "alice"])
    assert explained.exit_code == 0, explained.output
    assert f"superseded by #{new_id}" in explained.output and "Lives in Hamburg" not in explained.output
    assert runner.invoke(app, [*base, "undo-replace", str(new_id), "-p", "alice"]).exit_code == 0
    assert facts(mine) == ["Uses npm for JavaScript packaging"]
    missing = runner.invoke(app, [*base, "replace", "999999", "x", "-p", "alice"])
    assert missing.exit_code == 1 and "no persona fact with id 999999" in missing.output
    assert len(facts(other)) == 2


def test_only_current_facts_are_rendered(database, tmp_path):
    mine, other = two_profiles(database)
    mine.replace("npm", "Uses pnpm for JavaScript packaging")
    out = tmp_path / "persona.md"
    settings = load_settings(overrides={**database.settings(), "injection.file": str(out), "store.profile": "alice"})
    from pipeline import run_pipeline

    run_pipeline(settings, store=mine)
    text = out.read_text()
    assert "Uses pnpm" in text and "Uses npm" not in text and "Hamburg" not in text
    assert facts(other) == ["Uses npm for JavaScript packaging", "Lives in Hamburg"]


def test_a_key_in_a_facts_file_supersedes_the_older_fact_in_that_slot_per_profile(database, tmp_path):
    from pipeline import import_facts

    mine, other = database.store(profile="alice"), database.store(profile="bob")
    first = write(tmp_path / "a.yaml", "facts:\n  - {topic: tools, key: package_manager, content: Uses npm}\n")
    import_facts(mine, first)
    import_facts(other, first)
    second = write(tmp_path / "b.yaml", "facts:\n  - {topic: tools, key: package_manager, content: Uses pnpm}\n")
    report = import_facts(mine, second)
    assert facts(mine) == ["Uses pnpm"] and len(report.superseded) == 1
    assert facts(other) == ["Uses npm"]  # the key is alice's slot, not bob's
    assert mine.history(report.superseded[0])[0].how == "key package_manager"
    back = import_facts(mine, first)  # the slot's value changes back: a new fact, superseding pnpm
    assert facts(mine) == ["Uses npm"] and len(back.superseded) == 1 and facts(other) == ["Uses npm"]


def test_the_replace_tool_takes_an_id_or_a_unique_piece_of_text(database, tmp_path):
    mine, other = two_profiles(database)
    mine.add("Uses uv for Python packaging", topic="tools")
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p.md")})
    tools = {tool.__name__: tool for tool in PersonaTools(lambda: settings).all()}
    replace = tools["persona_replace"]
    answer = replace(content="Uses pnpm for JavaScript packaging", old_text="npm for", profile="alice")
    assert answer["status"] == "ok" and answer["old"]["content"] == "Uses npm for JavaScript packaging"
    with pytest.raises(InputError, match="contain that text"):
        replace(content="x", old_text="packaging", profile="alice")
    with pytest.raises(InputError, match="not both"):
        replace(content="x", persona_id=1, old_text="uv", profile="alice")
    for name in ("persona_add", "persona_replace", "persona_demote", "persona_reinforce"):
        assert "Use " in (tools[name].__doc__ or "")  # each says when a model should use it
    assert "persona_forget" in (tools["persona_replace"].__doc__ or "")
    assert "Uses npm for JavaScript packaging" in facts(other)
