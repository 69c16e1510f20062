"""Forgotten text in any dress is refused (issue 48 point 5), through every writer: `persona add`, an import,
`persona edit`, a replace, a promote, the agent tools, and another tool writing Mnemosyne's table (no render shows
it). Alice forgets; bob, who holds the same text, keeps it and may write it in any dress; two projects."""

from __future__ import annotations

import itertools
import json
import shlex
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pipeline import ForgottenError, PersonaStore, import_facts, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call_json
from pipeline.stages.runner import run_pipeline
from pipeline.store.erasure import forget_fact
from pipeline.store.forgotten import REFUSED

from ..conftest import write
from .test_fact_form import DRESSES, WORDS

runner = CliRunner()
SECRET = "Door code is 4721, then the hornbeam gate"
DRESSED = {
    "double quotes": f'"{SECRET}"', "curly quotes": f"\u201c{SECRET}\u201d", "underscores": f"_{SECRET}_",
    "bold": f"**{SECRET}**", "brackets": f"({SECRET})", "a bullet": f"- {SECRET}", "a numbered bullet": f"1. {SECRET}",
    "an emoji": f"\U0001f510 {SECRET}", "inner punctuation": "Door code is: 4721 \u2014 then the hornbeam gate!",
    "all at once": f"- **\u201c{SECRET.upper()}\u201d** \U0001f510",
}
# Each says something else: never refused.
OTHERS = ["Door code is 4722, then the hornbeam gate", "Door code was 4721, then the hornbeam gate",
          "Door code is 47.21, then the hornbeam gate", "Door code is 4721, then the oak gate"]


def persona(tmp_path: Path, *args: str):
    return runner.invoke(app, ["--db", str(tmp_path / "m.db"), "--set",
                               f"injection.file={tmp_path / 'persona-{profile}.md'}", *args])


@pytest.fixture
def projects(tmp_path: Path) -> tuple[Path, Path]:
    made = tmp_path / "alpha", tmp_path / "beta"
    for project in made:
        project.mkdir()
    return made


@pytest.fixture
def forgotten(tmp_path: Path, projects: tuple[Path, Path]) -> Path:
    """Alice and bob each hold the secret in project alpha; alice forgets hers with `persona forget`."""
    alpha, _ = projects
    for profile in ("alice", "bob"):
        added = persona(tmp_path, "add", SECRET, "--topic", "home", "--project", str(alpha), "-p", profile, "--json")
        assert added.exit_code == 0, added.output
    [fact] = PersonaStore(tmp_path / "m.db", profile="alice").list()
    assert persona(tmp_path, "forget", str(fact.id), "-p", "alice").exit_code == 0
    return tmp_path


@pytest.mark.parametrize("text", DRESSED.values(), ids=list(DRESSED))
def test_persona_add_refuses_a_forgotten_text_in_any_dress_in_any_project(forgotten, projects, text):
    for project in projects:
        refused = persona(forgotten, "add", "--topic", "other", "--project", str(project), "-p", "alice", "--", text)
        assert (refused.exit_code, refused.stderr) == (1, f"error: {REFUSED}\n")
    assert persona(forgotten, "add", "--topic", "other", "-p", "alice", "--", text).exit_code == 1  # and globally
    assert PersonaStore(forgotten / "m.db", profile="alice").list() == []
    assert persona(forgotten, "add", "--topic", "other", "--project", str(projects[1]), "-p", "bob", "--",
                   text).exit_code == 0  # bob forgot nothing
    assert {fact.content for fact in PersonaStore(forgotten / "m.db", profile="bob").list()} == {SECRET, text}


def test_a_text_that_says_something_else_is_not_refused(forgotten):
    for text in OTHERS:
        added = persona(forgotten, "add", text, "--topic", "home", "-p", "alice")
        assert added.exit_code == 0, added.output
    assert sorted(fact.content for fact in PersonaStore(forgotten / "m.db", profile="alice").list()) == sorted(OTHERS)


def test_the_force_takes_back_the_dress_it_was_given(forgotten):
    assert persona(forgotten, "add", DRESSED["bold"], "--topic", "home", "-p", "alice", "--force").exit_code == 0
    assert DRESSED["bold"] in (forgotten / "persona-alice.md").read_text()
    assert persona(forgotten, "add", "--topic", "home", "-p", "alice", "--", DRESSED["a bullet"]).exit_code == 0
    again = persona(forgotten, "add", SECRET + ".", "--topic", "home", "-p", "alice")  # the forgotten spelling
    assert (again.exit_code, again.stderr) == (1, f"error: {REFUSED}\n")


def test_a_forget_takes_every_dress_of_the_fact_the_profile_holds(tmp_path, projects):
    """The dressed copy would be hidden from every render, a forgotten text come back: it goes with the rest."""
    for profile in ("alice", "bob"):
        for text, project in ((SECRET, projects[0]), (DRESSED["bold"], projects[1])):
            assert persona(tmp_path, "add", "--topic", "home", "--project", str(project), "-p", profile, "--",
                           text).exit_code == 0
    first = PersonaStore(tmp_path / "m.db", profile="alice").list()[0].id
    forgot = persona(tmp_path, "forget", str(first), "-p", "alice", "--json")
    assert forgot.exit_code == 0, forgot.output
    assert len(json.loads(forgot.stdout)["facts"]) == 2
    assert PersonaStore(tmp_path / "m.db", profile="alice").list() == []
    assert len(PersonaStore(tmp_path / "m.db", profile="bob").list()) == 2


# -- the property: any words, in any dress, forgotten, are refused; other words are not --------------------------

EXAMPLES = itertools.count()


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS, dress=st.sampled_from(list(DRESSES.values())), changed=st.integers(min_value=0),
       other=st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8))
def test_a_forgotten_text_in_any_dress_is_refused_and_other_words_are_not(tmp_path, words, dress, changed, other):
    text = " ".join(words)
    at = changed % len(words)
    different = " ".join([*words[:at], words[at] + other, *words[at + 1:]])  # one word is another word
    db = tmp_path / f"{next(EXAMPLES)}.db"  # a store of its own for each example
    with PersonaStore(db, profile="alice") as alice, PersonaStore(db, profile="bob") as bob:
        fact = alice.add(text, topic="t").fact
        bob.add(text, topic="t")
        forget_fact(alice, fact.id)
        with pytest.raises(ForgottenError, match="that fact was forgotten"):
            alice.add(dress.format(text), topic="other", scope="project:/work/beta")
        assert alice.add(different, topic="other").created
        bob.add(dress.format(text), topic="other")  # bob forgot nothing
        assert text in [fact.content for fact in bob.list()]


# -- every other writer, on both backends ------------------------------------------------------------------------

def settings_of(database, tmp_path: Path):
    return load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "persona-{profile}.md")})


@pytest.fixture
def forgot(database, tmp_path):
    """Both profiles hold the secret and another fact; alice forgets the secret."""
    from pipeline.schedule.forget import forget

    settings = settings_of(database, tmp_path)
    ids = {}
    for profile in ("alice", "bob"):
        with PersonaStore.from_settings(settings, profile=profile) as store:
            ids[profile] = store.add(SECRET, topic="home").fact.id
            store.add("Answers tersely.", topic="style")
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        forget(settings, alice, ids["alice"])
    return settings


def test_the_python_api_replace_promote_and_import_refuse_every_dress(forgot, database, tmp_path):
    database.add_memory("m-alice", DRESSED["bold"], source="preference", importance=0.9, session="alice")
    database.add_memory("m-bob", DRESSED["bold"], source="preference", importance=0.9, session="bob")
    facts_file = write(tmp_path / "facts.yaml", "facts:\n" + "".join(
        f"  - topic: other\n    content: {json.dumps(text, ensure_ascii=False)}\n" for text in DRESSED.values()))
    with PersonaStore.from_settings(forgot, profile="alice") as alice:
        [kept] = alice.list()
        for text in DRESSED.values():
            with pytest.raises(ForgottenError, match="forgotten"):
                alice.add(text, topic="other", scope="project:github.com/acme/beta")
            with pytest.raises(ForgottenError, match="forgotten"):
                alice.replace(kept.id, text)
        with pytest.raises(ForgottenError, match="forgotten"):
            alice.promote("m-alice")
        report = import_facts(alice, facts_file)
        assert (report.added, len(report.skipped_forgotten)) == ([], len(DRESSED))
        assert [fact.content for fact in alice.list()] == ["Answers tersely."]
    with PersonaStore.from_settings(forgot, profile="bob") as bob:
        assert bob.promote("m-bob").created
        report = import_facts(bob, facts_file)
        assert (len(report.added), report.skipped_forgotten) == (len(DRESSED), [])
        assert SECRET in [fact.content for fact in bob.list()]


def test_the_tools_refuse_every_dress_for_alice_only(forgot):
    tools = PersonaTools(lambda: forgot).catalog(legacy=False)
    for text in DRESSED.values():
        for profile, status in (("alice", "error"), ("bob", "ok")):
            answer = json.loads(call_json(tools, "persona_add", {"content": text, "topic": "other"},
                                          {"profile": profile, "session": None}))
            assert answer["status"] == status, (profile, text, answer)
        answer = json.loads(call_json(tools, "persona_replace", {"content": text, "old_text": "tersely"},
                                      {"profile": "alice", "session": None}))
        assert answer["status"] == "error" and "forgotten" in answer["error"]


def test_another_tools_write_of_a_dress_is_shown_in_no_render_of_alice_but_in_bobs(forgot, database, tmp_path):
    for profile in ("alice", "bob"):
        database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content, confidence) VALUES "
                         "(?, 'permanent', 'home', ?, 0.9)", (profile, DRESSED["all at once"]))
        with PersonaStore.from_settings(forgot, profile=profile) as store:
            run_pipeline(forgot, store=store)
    assert "4721" not in (tmp_path / "persona-alice.md").read_text().upper()
    assert "Answers tersely." in (tmp_path / "persona-alice.md").read_text()
    assert (tmp_path / "persona-bob.md").read_text().count("4721") == 1  # one of bob's two dresses: the dedupe


EDITOR = """import pathlib, sys
path, entry = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")
if entry not in path.read_text(encoding="utf-8"):  # reopened with the problems at the top: the user gives up
    path.write_text(path.read_text(encoding="utf-8") + entry, encoding="utf-8")
"""


def test_persona_edit_refuses_a_dress_the_file_brings_in(forgot, database, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where an edit file refused is kept
    entry = write(tmp_path / "entry.yaml", f"- topic: other\n  content: {json.dumps(DRESSED['brackets'])}\n")
    script = write(tmp_path / "editor.py", EDITOR)
    base = [*(part for key, value in database.settings().items() for part in ("--set", f"{key}={value}")),
            "--set", f"injection.file={tmp_path / 'persona-{profile}.md'}"]
    for profile, code in (("alice", 1), ("bob", 0)):
        done = runner.invoke(app, [*base, "edit", "-p", profile],
                             env={"VISUAL": None, "EDITOR": shlex.join([sys.executable, str(script), str(entry)])})
        assert done.exit_code == code, done.output
        if code:
            [kept] = tmp_path.glob("persona-edit-*/persona-alice.yaml")
            assert "that fact was forgotten" in kept.read_text(encoding="utf-8")
    with PersonaStore.from_settings(forgot, profile="bob") as bob:
        assert DRESSED["brackets"] in [fact.content for fact in bob.list()]
