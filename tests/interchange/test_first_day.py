"""A first day that ends clean (issue 50, points 3 to 5): safe topics, imports and stored facts that propose, and
imports that read like the user wrote them. Through the store's API, ``import_source`` and the CLI runner, on both
backends; a second profile sees none of the first's facts or proposals."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from pipeline import import_source
from pipeline.cli import app

from ..conftest import write

runner = CliRunner()
USER_MD = ("Name is Dana; pronouns she/her.\n§\nUses Neovim as the main editor.\n§\nLives in Lisbon.\n§\n"
           "Answers tersely, no recap.\n§\nNow uses Helix instead of Neovim.\n§\nEditor setup:\n- Helix with the "
           "default keymap\n- tmux\n§\nRun tests:\n```\nmake test\n```\n")


def persona(database, tmp_path, *args: str):
    pairs = [f"{key}={value}" for key, value in {**database.settings(),
                                                  "injection.file": str(tmp_path / "p.md")}.items()]
    return runner.invoke(app, [*(part for pair in pairs for part in ("--set", pair)), *args])


def by_content(store) -> dict[str, object]:
    return {fact.content: fact for fact in store.list()}


# -- point 3: safe topics --------------------------------------------------

def test_a_hermes_user_md_gets_topics_from_content_and_never_proposes_to_replace_the_name(database, tmp_path):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        report = import_source(mine, write(tmp_path / "USER.md", USER_MD), "hermes")
        facts = by_content(mine)
        assert facts["Name is Dana; pronouns she/her."].topic == "identity"
        assert facts["Uses Neovim as the main editor."].topic == "tools"
        assert facts["Lives in Lisbon."].topic == "location"
        assert facts["Answers tersely, no recap."].topic == "style"
        name = facts["Name is Dana; pronouns she/her."].id
        assert name not in {fact.id for proposal in report.proposals for fact in (proposal.old, proposal.new)}
        # the changes the file tells later (Helix) are proposed against the editor they leave behind, and only it
        updates = {(p.old.content, p.new.content) for p in report.proposals if p.kind == "update"}
        assert ("Uses Neovim as the main editor.", "Now uses Helix instead of Neovim.") in updates
        assert {old for old, _ in updates} == {"Uses Neovim as the main editor."}
        assert other.list() == [] and other.proposals() == []


def test_the_same_text_under_another_topic_is_already_there(store):
    first = store.add("Uses uv for Python packages.", topic="python")
    again = store.add("uses uv for python packages", topic="Tools")
    assert (again.created, again.fact.id) == (False, first.fact.id)
    assert len(store.list()) == 1


def test_moving_a_fact_to_another_topic_keeps_its_id_writer_and_history(store):
    fact = store.add("Uses uv for Python packages.", topic="general").fact
    moved = store.replace(fact.id, "Uses uv for Python packages.", topic="tools")
    assert (moved.new.id, moved.new.topic) == (fact.id, "tools")
    [stored] = store.list()
    assert (stored.id, stored.topic, stored.writer) == (fact.id, "tools", store.get(fact.id).writer)
    assert store.add("Uses uv for Python packages.", topic="tools").created is False  # found by its new key
    assert [link.id for link in store.history(fact.id)] == [fact.id]


# -- point 4: imports and stored facts propose ------------------------------

def test_a_mem0_import_proposes_by_the_memories_dates_not_their_order_in_the_file(database, tmp_path):
    memories = {"results": [
        {"id": "m2", "memory": "Moved to Porto.", "created_at": "2026-05-01T10:00:00Z"},
        {"id": "m1", "memory": "Lives in Lisbon.", "created_at": "2025-01-01T10:00:00Z"},
    ]}
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        report = import_source(mine, write(tmp_path / "mem0.json", json.dumps(memories)), "mem0", topic="home")
        assert [(p.kind, p.old.content, p.new.content) for p in report.proposals] == [
            ("update", "Lives in Lisbon.", "Moved to Porto.")]
        assert other.proposals() == []


def test_review_scan_proposes_what_no_single_write_saw(database, tmp_path):
    facts = write(tmp_path / "facts.yaml", "facts:\n  - {topic: tools, content: Uses Neovim.}\n"
                  "  - {topic: tools, content: Main editor is Neovim.}\n  - {topic: home, content: Lives in Lisbon.}\n"
                  "  - {topic: home, content: Relocated to Porto in the spring.}\n")
    assert persona(database, tmp_path, "import", str(facts)).exit_code == 0  # a facts file proposes nothing
    assert json.loads(persona(database, tmp_path, "review", "--json").stdout) == []
    scanned = persona(database, tmp_path, "review", "--scan", "--json")
    assert scanned.exit_code == 0, scanned.output
    found = sorted((p["kind"], p["old"]["content"], p["new"]["content"]) for p in json.loads(scanned.stdout))
    assert found == [("merge", "Uses Neovim.", "Main editor is Neovim."),
                     ("update", "Lives in Lisbon.", "Relocated to Porto in the spring.")]
    assert json.loads(persona(database, tmp_path, "review", "--json", "--profile", "bob").stdout) == []


# -- point 5: imports that read like the user wrote them ---------------------

def test_a_hermes_label_list_reads_as_one_fact_and_a_fenced_command_is_kept(store, tmp_path):
    import_source(store, write(tmp_path / "USER.md", USER_MD), "hermes")
    facts = by_content(store)
    assert "Editor setup: Helix with the default keymap; tmux" in facts
    assert "Run tests: `make test`" in facts


def test_a_markdown_label_labels_its_list_and_an_items_fenced_command_is_kept(store, tmp_path):
    text = ("Editor setup:\n\n- Neovim with LazyVim\n- tmux\n\n## Testing\n\n- Run tests:\n\n  ```\n  make test\n"
            "  ```\n- Use pytest\n")
    import_source(store, write(tmp_path / "CLAUDE.md", text), "instructions")
    assert set(by_content(store)) == {"Editor setup: Neovim with LazyVim", "Editor setup: tmux",
                                      "Run tests: `make test`", "Use pytest"}


def test_an_old_mem0_export_imported_after_a_newer_fact_never_inverts_the_change(database, tmp_path):
    """A memory created before the stored fact was born is the older of the two: the stored fact may update it,
    never the reverse; a memory created after the stored fact may update it as usual. Bob's profile sees none."""
    memories = {"results": [
        {"id": "m1", "memory": "Lives in Lisbon.", "created_at": "2025-01-01T10:00:00+01:00"},
        {"id": "m2", "memory": "Switched to Zed for editing.", "created_at": "2099-01-01T10:00:00Z"},
    ]}
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        porto = mine.add("Moved to Porto last month.", topic="home").fact
        vim = mine.add("Uses Vim as the main editor.", topic="home").fact
        other.add("Moved to Porto last month.", topic="home")
        report = import_source(mine, write(tmp_path / "mem0.json", json.dumps(memories)), "mem0", topic="home")
        found = sorted((p.kind, p.old.content, p.new.content) for p in report.proposals)
        assert found == [("update", "Lives in Lisbon.", porto.content),
                         ("update", vim.content, "Switched to Zed for editing.")]
        assert other.proposals() == []


def test_a_file_older_than_a_stored_fact_is_dated_by_its_modification_time(database, tmp_path):
    """A list written long ago, imported after a newer fact was stored, updates nothing of it: the stored fact may
    update the file's; a file written since may update a stored fact as usual. Bob's profile sees none."""
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        porto = mine.add("Moved to Porto last month.", topic="home").fact
        other.add("Moved to Porto last month.", topic="home")
        old = write(tmp_path / "old.txt", "- Lives in Lisbon.\n")
        os.utime(old, (1_600_000_000, 1_600_000_000))  # September 2020
        report = import_source(mine, old, "lines", topic="home")
        assert [(p.kind, p.old.content, p.new.content) for p in report.proposals] == [
            ("update", "Lives in Lisbon.", porto.content)]
        vim = mine.add("Uses Vim as the main editor.", topic="home").fact
        os.utime(new := write(tmp_path / "new.txt", "- Switched to Zed for editing.\n"), (4_000_000_000,) * 2)
        report = import_source(mine, new, "lines", topic="home")
        assert [(p.kind, p.old.content) for p in report.proposals] == [("update", vim.content)]
        assert other.proposals() == []
