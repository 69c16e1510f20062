"""`persona export` and `persona import`: a round trip by id that keeps reinforcement and confidence, and an edited
text under the same id updates that fact. Both backends; a second profile is never touched."""

from __future__ import annotations

import json

from ruamel.yaml import YAML
from typer.testing import CliRunner

from pipeline import import_facts
from pipeline.cli import app
from pipeline.interchange.export import export_facts

from ..conftest import write


def rows(store):
    return [(f.id, f.topic, f.content, f.tier, f.confidence, f.reinforcement_count) for f in store.list()]


def seeded(database):
    mine = database.store(profile="alice", reinforce_step=0.1)
    other = database.store(profile="bob")
    fact = mine.add("Answers tersely.", topic="style", confidence=0.6).fact
    mine.reinforce(fact.id)
    mine.reinforce(fact.id)
    mine.add("Uses uv for Python", topic="tools", tier="permanent")
    other.add("Bob's secret fact", topic="style")
    return mine, other


def test_export_then_import_round_trips_by_id_without_losing_reinforcement_or_confidence(database, tmp_path):
    mine, other = seeded(database)
    before = rows(mine)
    text = export_facts(mine)
    assert "Bob's secret fact" not in text
    path = write(tmp_path / "export.yaml", text)
    report = import_facts(mine, path)
    assert report.added == [] and report.updated == [] and sorted(report.unchanged) == sorted(r[0] for r in before)
    assert rows(mine) == before and before[1][5] == 2 and abs(before[1][4] - 0.8) < 1e-9
    assert [f.content for f in other.list()] == ["Bob's secret fact"]


def test_an_edited_text_under_the_same_id_updates_that_fact(database, tmp_path):
    mine, other = seeded(database)
    document = YAML(typ="safe").load(export_facts(mine))
    target = next(entry for entry in document["facts"] if entry["content"] == "Answers tersely.")
    target["content"] = "Answers in one short paragraph."
    path = tmp_path / "edited.yaml"
    with path.open("w", encoding="utf-8") as out:
        YAML(typ="safe").dump(document, out)
    report = import_facts(mine, path)
    assert report.updated == [target["id"]] and report.added == []
    edited = mine.get(target["id"])
    assert (edited.content, edited.reinforcement_count) == ("Answers in one short paragraph.", 2)
    assert "Answers tersely." not in [f.content for f in mine.list()]
    assert mine.add("Answers in one short paragraph.", topic="style").created is False  # its identity followed
    assert [f.content for f in other.list()] == ["Bob's secret fact"]


def test_another_profiles_ids_are_new_facts_there_and_never_touch_the_owner(database, tmp_path):
    mine, other = seeded(database)
    path = write(tmp_path / "export.yaml", export_facts(mine))
    report = import_facts(other, path)
    assert len(report.added) == 2 and report.updated == []
    assert sorted(f.reinforcement_count for f in other.list()) == [0, 0, 2]
    assert rows(mine) == rows(database.store(profile="alice"))


def test_the_cli_exports_a_private_file_with_keys_and_imports_it_back(database, tmp_path):
    mine, other = seeded(database)
    keyed = write(tmp_path / "keys.yaml", "facts:\n  - {topic: tools, key: package_manager, content: Uses pnpm}\n")
    import_facts(mine, keyed)
    runner = CliRunner()
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    out = tmp_path / "mine.yaml"
    exported = runner.invoke(app, [*base, "export", "-p", "alice", "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert out.stat().st_mode & 0o777 == 0o600 and "key: package_manager" in out.read_text()
    imported = runner.invoke(app, [*base, "import", str(out), "-p", "alice", "--json"])
    assert json.loads(imported.output)["added"] == [] and len(mine.list()) == 3
    onto_db = runner.invoke(app, [*base, "export", "-p", "alice", "-o", str(tmp_path / "p-alice.md")])
    assert onto_db.exit_code == 1 and "refusing to write an export" in onto_db.output
    assert [f.content for f in other.list()] == ["Bob's secret fact"]


def test_an_export_of_what_another_tool_wrote_imports_again_with_every_character(database, tmp_path):
    """A NULL confidence another tool left is not written as null (which import refuses), and a fact holding a
    Unicode line break (U+0085, U+2028) keeps it through export and import."""
    alice = database.store(profile="alice")
    odd = alice.add("Line one\x85line two\u2028three", topic="style").fact
    plain = alice.add("Answers tersely.", topic="style").fact
    database.execute("UPDATE memoria_persona SET confidence = NULL WHERE id = ?", (plain.id,))
    path = write(tmp_path / "export.yaml", export_facts(alice))
    assert "null" not in path.read_text()
    carol = database.store(profile="carol")
    report = import_facts(carol, path)
    assert len(report.added) == 2
    assert {f.content for f in carol.list()} == {odd.content, "Answers tersely."}
    again = import_facts(alice, path)  # into its own profile: the empty confidence takes the default every read uses
    assert again.updated == [plain.id] and alice.get(plain.id).confidence == 0.7 and again.added == []
    assert import_facts(alice, path).updated == []


def test_a_facts_file_past_the_import_bound_is_one_clear_error_from_python_too(database, tmp_path):
    from pipeline.errors import FactsFileError
    from pipeline.interchange.formats import MAX_IMPORT_BYTES

    alice = database.store(profile="alice")
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as out:
        out.truncate(MAX_IMPORT_BYTES + 1)  # sparse: no time or disk spent writing it
    try:
        import_facts(alice, huge)
    except FactsFileError as error:
        assert "larger than 32 MiB" in str(error) and str(huge) in str(error)
    else:
        raise AssertionError("a file past the bound was read")
    assert alice.list() == []
