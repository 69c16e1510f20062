"""Issue 38 point 2: the same fact in other case, spacing, Unicode form or final punctuation is "already there",
never added twice, through every way in; and a database keyed before normal forms keeps working (the re-key)."""

from __future__ import annotations

import json
import unicodedata

import pytest
from typer.testing import CliRunner

from pipeline import load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call
from pipeline.store.fact_row import legacy_content_key
from pipeline.text import normal_form

from ..conftest import write

runner = CliRunner()
CAFE = "Orders at Café Zürich – always the window seat."
# The same fact as a user may type or paste it again.
VARIANTS = [
    "orders at café zürich – always the window seat",  # case, no full stop
    "Orders  at Café\u200b Zürich – always the window seat!",  # spacing, a zero-width space, other final mark
    unicodedata.normalize("NFD", CAFE),  # what a macOS paste gives
    CAFE.replace("–", "\u2011"),  # another dash
    "Ｏrders at Café Zürich – always the window seat.",  # a full-width letter
]


def cli(database, tmp_path, *args: str, stdin: str | None = None):
    pairs = [f"{key}={value}" for key, value in {**database.settings(),
                                                  "injection.file": str(tmp_path / "p.md")}.items()]
    return runner.invoke(app, [*(part for pair in pairs for part in ("--set", pair)), *args], input=stdin)


def contents(store) -> list[str]:
    return [fact.content for fact in store.list()]


def test_the_normal_form_folds_what_a_paste_changes_and_nothing_else():
    assert {normal_form(text) for text in [CAFE, *VARIANTS]} == {"orders at café zürich - always the window seat"}
    assert normal_form("Bank PIN is ８６４２\u2011Zebra.") == normal_form("bank pin is 8642-zebra")
    assert normal_form("Uses uv, not pip") != normal_form("Uses pip, not uv")
    assert normal_form("Uses C++") == "uses c++"  # only final marks go: a "+" is the fact's own


@pytest.mark.parametrize("variant", VARIANTS)
def test_add_keeps_one_row_for_a_variant_of_a_fact_in_either_topic_spelling(store, variant):
    first = store.add(CAFE, topic="Food")
    again = store.add(variant, topic="food")
    assert (again.created, again.fact.id, contents(store)) == (False, first.fact.id, [CAFE])


def test_the_same_text_in_another_scope_is_another_fact_and_under_another_topic_already_there(store):
    first = store.add(CAFE, topic="food").fact
    assert store.add(VARIANTS[0], topic="food", scope="project:acme").created
    again = store.add(VARIANTS[0], topic="travel")  # issue 50: one fact, whatever topic it is filed under
    assert (again.created, again.fact.id) == (False, first.id)


def test_a_demoted_fact_stays_demoted_in_any_spelling(store):
    demoted = store.add(CAFE, topic="food").fact
    store.demote(demoted.id)
    with pytest.raises(Exception, match="demoted"):
        store.add(VARIANTS[1], topic="FOOD")


def test_a_promoted_memory_that_states_an_added_fact_is_that_fact(database):
    with database.store() as store:
        added = store.add(CAFE, topic="general")
        database.add_memory("m1", VARIANTS[2])
        promoted = store.promote("m1")
        assert (promoted.created, promoted.fact.id, contents(store)) == (False, added.fact.id, [CAFE])


def test_a_replace_may_respell_its_own_fact(store):
    old = store.add("uses uv", topic="tools").fact
    done = store.replace(old.id, "Uses uv.")
    assert contents(store) == ["Uses uv."] and [link.id for link in store.history(done.new.id)] == [old.id,
                                                                                                    done.new.id]


def test_the_cli_the_tools_and_an_import_find_the_fact_already_there(database, tmp_path):
    assert cli(database, tmp_path, "add", CAFE, "--topic", "Food").exit_code == 0
    again = json.loads(cli(database, tmp_path, "add", VARIANTS[0], "--topic", "food", "--json").stdout)
    assert again["created"] is False
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p.md")})
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    assert call(tools, "persona_add", {"content": VARIANTS[1], "topic": "FOOD"})["created"] is False
    facts = write(tmp_path / "facts.yaml", f"facts:\n  - topic: food\n    content: \"{VARIANTS[3]}\"\n")
    done = cli(database, tmp_path, "import", str(facts))
    assert done.exit_code == 0 and "0 added" in done.stdout, done.output
    pasted = cli(database, tmp_path, "import", "--from", "lines", "-", stdin=VARIANTS[4] + "\n")
    assert pasted.exit_code == 0 and "0 added" in pasted.stdout, pasted.output
    with database.store() as store:
        assert contents(store) == [CAFE]


def test_a_database_keyed_before_normal_forms_is_re_keyed_by_its_migration(database):
    """Rows, tombstones and superseded rows whose key is the old key of their exact text get the normal form's
    key; a key that is not its text's (another tool's, a memory id) stays as it was."""
    from pipeline.store.postgres import schema as postgres
    from pipeline.store.sqlite import schema as sqlite

    with database.store() as store:
        kept = store.add(CAFE, topic="Food").fact
        demoted = store.add("Has a dog named Pixel.", topic="Pets").fact
        store.demote(demoted.id)
        old = store.add("Uses npm.", topic="Tools").fact
        store.replace(old.id, "Uses pnpm.")
    for table, text, topic in (("memoria_persona", CAFE, "Food"), ("persona_superseded", "Uses npm.", "Tools"),
                               ("memoria_preferences", "Has a dog named Pixel.", "Pets")):
        column = "preference" if table == "memoria_preferences" else "content"
        database.execute(f"UPDATE {table} SET source_memory_id = ? WHERE {column} LIKE ?",
                         (legacy_content_key(topic, text), f"%{text}"))
    database.execute("UPDATE memoria_persona SET source_memory_id = 'import:chosen-by-hand' WHERE content = ?",
                     ("Uses pnpm.",))
    schema = postgres if database.is_postgres else sqlite
    database.rewind_to(schema.REKEYED_AT - 1)
    if database.is_postgres:  # a new process: this one checked the schema when it opened its pool
        from pipeline.store.postgres.pools import close_pool

        close_pool(str(database.target))
    with database.store() as store:
        assert store.add(VARIANTS[0], topic="food").fact.id == kept.id
        with pytest.raises(Exception, match="demoted"):
            store.add("has a dog named pixel", topic="pets")
    assert database.execute("SELECT source_memory_id FROM memoria_persona WHERE content = ?", ("Uses pnpm.",)) == [
        ("import:chosen-by-hand",)]
    assert database.execute("SELECT version FROM persona_schema") == [(schema.SCHEMA_VERSION,)]


def test_persona_edit_typing_a_fact_again_adds_no_second_one(database, tmp_path):
    import shlex
    import sys

    with database.store(writer="cli") as store:
        store.add(CAFE, topic="food")
    script = write(tmp_path / "editor.py", "import sys\nwith open(sys.argv[1], 'a', encoding='utf-8') as out:\n"
                   f"    out.write('- topic: Food\\n  content: {VARIANTS[0]}\\n')\n")
    done = runner.invoke(app, ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p.md'}", "edit"],
                         env={"VISUAL": None, "EDITOR": shlex.join([sys.executable, str(script)])})
    assert done.exit_code == 0, done.output
    with database.store() as store:
        assert contents(store) == [CAFE]
