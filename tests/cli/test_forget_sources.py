"""`persona forget` says which file the fact was imported from still holds its text: persona-tier never edits a
source, so the user must, or the text stays on disk (a later import skips it). Both backends, two profiles."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline import PersonaStore
from pipeline.cli import app

from ..conftest import runner, write

TEA, CELLO = "Drinks green tea in the afternoon.", "Plays the cello on Sundays."


def facts_file(tmp_path: Path) -> Path:
    return write(tmp_path / "my facts.yaml", f"facts:\n  - topic: habits\n    content: {TEA}\n"
                                             f"  - topic: habits\n    content: {CELLO}\n")


def ids(database, profile: str) -> dict[str, int]:
    with PersonaStore(database.target, profile=profile) as store:
        return {fact.content: fact.id for fact in store.list()}


def persona(database, *args: str, stdin: str | None = None):
    return runner.invoke(app, ["--db", str(database.target), *args], input=stdin)


def test_forget_names_the_file_it_was_imported_from_while_that_file_holds_it(database, tmp_path):
    source = facts_file(tmp_path)
    for profile in ("alice", "bob"):
        assert persona(database, "import", str(source), "-p", profile).exit_code == 0
    done = persona(database, "forget", str(ids(database, "alice")[TEA]), "-p", "alice")
    assert done.exit_code == 0, done.output
    assert done.stderr.count(str(source)) == 1
    assert (f"warning: {source}, which the fact was imported from, still holds the text; persona-tier never edits "
            "a file you import from, so edit it out by hand") in done.stderr
    assert TEA in source.read_text() and TEA in ids(database, "bob")  # the user's file and bob's fact stay
    source.write_text(f"facts:\n  - topic: habits\n    content: {TEA}\n")  # the user took the other line out
    answer = json.loads(persona(database, "forget", "--json", str(ids(database, "alice")[CELLO]), "-p", "alice").stdout)
    assert answer["sources"] == [str(source)] and answer["in_sources"] == []


def test_a_fact_from_standard_input_or_typed_in_names_no_source(database, tmp_path):
    assert persona(database, "import", "-", stdin=facts_file(tmp_path).read_text()).exit_code == 0
    assert persona(database, "add", "Walks to work.", "--topic", "habits").exit_code == 0
    for content in (TEA, "Walks to work."):
        done = persona(database, "forget", "--json", str(ids(database, "default")[content]))
        answer = json.loads(done.stdout)
        assert answer["sources"] == [] and answer["in_sources"] == [] and "imported from" not in done.stderr
