"""Scopes in facts files: `scope:` is read (global, {project: PATH-or-URL}, {host: NAME}), written by export and
`persona edit`, and kept by import, edit and replace. Export, import and edit round-trip every scope; the same text
in two scopes is two facts; a key is a slot of one scope. Both backends; bob is never touched."""

from __future__ import annotations

import subprocess

import pytest
from ruamel.yaml import YAML

from pipeline import import_facts
from pipeline.errors import FactsFileError
from pipeline.interchange.edit import apply_edit, plan_edit
from pipeline.interchange.edit_file import edit_text, parse_edit, read_base
from pipeline.interchange.export import export_facts

from ..conftest import write

REPO = "github.com/acme/shop"


def scoped(database):
    alice = database.store(profile="alice", writer="cli")
    bob = database.store(profile="bob", writer="cli")
    alice.add("Answers tersely.", topic="style")
    alice.add("Uses pnpm, never npm", topic="tools", scope=f"project:{REPO}")
    alice.add("Never runs the terminal without asking", topic="safety", scope="host:cursor")
    bob.add("Bob's own fact", topic="style")
    return alice, bob


def facts(store) -> list[tuple]:
    return sorted((f.topic, f.content, f.scope, f.tier, f.confidence, f.reinforcement_count) for f in store.list())


def test_export_writes_each_scope_and_import_into_another_profile_keeps_it(database, tmp_path):
    alice, bob = scoped(database)
    text = export_facts(alice)
    document = YAML(typ="safe").load(text)
    assert {entry["content"]: entry.get("scope") for entry in document["facts"]} == {
        "Answers tersely.": None, "Uses pnpm, never npm": {"project": REPO},
        "Never runs the terminal without asking": {"host": "cursor"}}
    carol = database.store(profile="carol")
    report = import_facts(carol, write(tmp_path / "export.yaml", text))
    assert len(report.added) == 3
    assert [(topic, content, scope) for topic, content, scope, *_ in facts(carol)] == \
        [(topic, content, scope) for topic, content, scope, *_ in facts(alice)]
    again = import_facts(carol, tmp_path / "export.yaml")
    assert again.added == [] and again.updated == []  # ids of another profile: matched by text and scope
    assert [f.content for f in bob.list()] == ["Bob's own fact"]


def test_the_same_text_in_two_scopes_is_two_facts_and_a_second_import_adds_nothing(database, tmp_path):
    alice, _ = scoped(database)
    path = write(tmp_path / "facts.yaml", """
facts:
  - topic: tools
    content: Uses pnpm, never npm
  - topic: tools
    content: Uses pnpm, never npm
    scope: {project: https://GitHub.com/acme/shop.git}
  - topic: tools
    content: Uses pnpm, never npm
    scope: {project: git@github.com:acme/other.git}
  - topic: safety
    content: Never runs the terminal without asking
    scope: host:cursor
""")
    report = import_facts(alice, path)
    assert len(report.added) == 2 and len(report.unchanged) == 2  # the project's URL is its normalised identity
    assert sorted(f.scope or "" for f in alice.list() if f.content == "Uses pnpm, never npm") == \
        ["", "project:github.com/acme/other", f"project:{REPO}"]
    assert import_facts(alice, path).added == []


def test_a_project_given_as_a_directory_is_that_checkouts_repository(database, tmp_path):
    alice, _ = scoped(database)
    clone = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "remote", "add", "origin", f"git@{REPO.replace('/', ':', 1)}.git"],
                   check=True)
    (clone / "src").mkdir()
    path = write(tmp_path / "facts.yaml", f"- topic: tools\n  content: Runs tests with vitest\n"
                                          f"  scope: {{project: {clone / 'src'}}}\n")
    import_facts(alice, path)
    assert next(f.scope for f in alice.list() if f.content == "Runs tests with vitest") == f"project:{REPO}"


@pytest.mark.parametrize(("scope", "problem"), [
    ("{planet: mars}", "expected global, {project: PATH-or-URL} or {host: NAME}"),
    ("{host: vim}", "unknown host 'vim'"),
    ("{project: ''}", "the project of the scope is empty"),
    ("somewhere", "invalid scope 'somewhere'"),
    ("\"project:github.com/acme/shop\\u200b\"", "holds an invisible or control character \\(U\\+200B\\)"),
    ("\"project:github.com/\\u202eacme/shop\"", "holds an invisible or control character"),
])
def test_a_bad_scope_is_named_with_its_entry_and_line_and_nothing_is_written(database, tmp_path, scope, problem):
    alice, _ = scoped(database)
    before = facts(alice)
    path = write(tmp_path / "bad.yaml", f"- topic: style\n  content: Fine\n- topic: tools\n  content: X\n"
                                        f"  scope: {scope}\n")
    escaped = problem if "\\(" in problem else problem.replace("{", r"\{").replace("}", r"\}").replace(
        "(", r"\(").replace(")", r"\)")
    with pytest.raises(FactsFileError, match=r"fact #2 \(line 3\): scope: .*" + escaped):
        import_facts(alice, path)
    assert facts(alice) == before


def test_a_scope_changed_under_an_id_moves_the_fact_and_its_key_slot(database, tmp_path):
    alice, _ = scoped(database)
    document = YAML(typ="safe").load(export_facts(alice))
    entry = next(e for e in document["facts"] if e["content"] == "Answers tersely.")
    entry["scope"] = {"project": REPO}
    entry["key"] = "verbosity"
    path = tmp_path / "moved.yaml"
    with path.open("w", encoding="utf-8") as out:
        YAML(typ="safe").dump(document, out)
    report = import_facts(alice, path)
    assert report.updated == [entry["id"]]
    assert alice.get(entry["id"]).scope == f"project:{REPO}"
    assert import_facts(alice, path).updated == []  # and it stays there: the export says so now
    entry["scope"] = "global"
    with path.open("w", encoding="utf-8") as out:
        YAML(typ="safe").dump(document, out)
    import_facts(alice, path)
    with alice.read() as conn:
        slots = conn.execute("SELECT scope, key, persona_id FROM persona_keys WHERE session_id = 'alice'").fetchall()
    assert [tuple(row) for row in slots] == [("", "verbosity", entry["id"])]  # the project's slot was emptied


def test_a_key_is_a_slot_of_one_scope_in_a_facts_file(database, tmp_path):
    alice, _ = scoped(database)
    first = import_facts(alice, write(tmp_path / "a.yaml", f"""
- {{topic: tools, content: Uses npm, key: package_manager}}
- {{topic: tools, content: Uses pnpm, key: package_manager, scope: {{project: {REPO}}}}}
"""))
    assert {f.content for f in alice.list()} >= {"Uses npm", "Uses pnpm"}  # neither superseded the other
    report = import_facts(alice, write(tmp_path / "b.yaml", f"""
- {{topic: tools, content: Uses bun, key: package_manager, scope: {{project: {REPO}}}}}
"""))
    pnpm = first.added[1]
    assert [(k["old"], k["key"]) for k in report.keyed] == [(pnpm, "package_manager")]
    contents = {f.content for f in alice.list()}
    assert "Uses bun" in contents and "Uses npm" in contents and "Uses pnpm" not in contents
    repeated = write(tmp_path / "c.yaml", f"""
- {{topic: tools, content: Uses yarn, key: package_manager}}
- {{topic: tools, content: Uses deno, key: package_manager, scope: {{project: {REPO}}}}}
- {{topic: tools, content: Uses bun again, key: package_manager, scope: {{project: {REPO}}}}}
""")
    with pytest.raises(FactsFileError, match=r"fact #3: repeats the key of fact #2"):
        import_facts(alice, repeated)


def test_persona_edit_shows_each_scope_and_moves_a_fact_with_lineage(database):
    alice, bob = scoped(database)
    bob_before = facts(bob)
    base = read_base(alice)
    text = edit_text(base, alice.label)
    assert f"scope:\n    project: {REPO}\n" in text and "scope:\n    host: cursor\n" in text
    unchanged = plan_edit(alice, base, parse_edit(text))
    assert unchanged.empty  # shown as stored, read back as stored

    moved = text.replace(f"project: {REPO}", "project: github.com/acme/admin")
    moved += "- topic: tools\n  content: Deploys with fly\n  scope: {host: codex}\n"
    plan = plan_edit(alice, base, parse_edit(moved))
    assert [(step.kind, step.changed) for step in plan.steps] == [("replace", ("scope",)), ("add", ())]
    done = apply_edit(alice, plan)
    (old, new), = done.replaced
    assert alice.get(new).scope == "project:github.com/acme/admin" and alice.get(new).content == \
        "Uses pnpm, never npm"
    assert next(f.scope for f in alice.list() if f.content == "Deploys with fly") == "host:codex"
    assert [link.how for link in alice.history(new)] == ["replaced", None]
    alice.undo_replace(new)
    assert alice.get(old).scope == f"project:{REPO}"  # undo brings the old scope back with the old fact
    assert facts(bob) == bob_before


def test_an_old_database_reads_every_fact_as_global_in_export(database, tmp_path):
    alice = database.store(profile="alice")
    fact = alice.add("Answers tersely.", topic="style").fact
    with alice.transaction() as conn:  # a fact from before births: another tool's, or an old database's
        conn.execute("DELETE FROM persona_births WHERE persona_id = ?", (fact.id,))
    entry, = YAML(typ="safe").load(export_facts(alice))["facts"]
    assert "scope" not in entry and alice.get(fact.id).scope is None


def test_a_write_proposes_updates_only_within_its_own_scope(database, tmp_path):
    alice = database.store(profile="alice", supersede_detect="propose")
    old = alice.add("Uses npm for JavaScript projects", topic="tools").fact
    here = alice.add("Now uses pnpm for JavaScript projects", topic="tools", scope=f"project:{REPO}")
    assert here.proposals == ()  # true in one project, beside the global fact: nothing to update
    imported = import_facts(alice, write(tmp_path / "f.yaml", "- topic: tools\n  content: Now uses yarn for "
                                         f"JavaScript projects\n  scope: {{project: {REPO}}}\n"))
    assert [proposal.old.id for proposal in imported.proposals] == [here.fact.id]  # its own project's, not npm
    everywhere = alice.add("Now uses bun for JavaScript projects", topic="tools")
    assert [proposal.old.id for proposal in everywhere.proposals] == [old.id]  # the same scope: proposed


def test_the_stored_spelling_of_a_project_scope_is_normalised_as_a_remote(database, tmp_path):
    alice, _ = scoped(database)
    report = import_facts(alice, write(tmp_path / "f.yaml", "- topic: tools\n  content: Uses pnpm, never npm\n"
                                       "  scope: project:GitHub.com/acme/shop.git\n"))
    assert report.added == [] and len(report.unchanged) == 1  # the fact scoped() added, not a look-alike
