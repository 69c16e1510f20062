"""Every write renders, the same way (issue 38, 7): the CLI's writers, the tools and the page leave every target
current when they return, with one render for the whole write, and say so in one line; a target that cannot be
rendered is a warning, never a lost write and never a failed command."""

from __future__ import annotations

import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

from typer.testing import CliRunner

from pipeline import PersonaStore, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools

from ..conftest import add_memory, write

runner = CliRunner()
NPM, PNPM = "Uses npm for JavaScript projects", "Uses pnpm for JavaScript projects"
REPLACER = """import sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
open(path, "w", encoding="utf-8").write(text.replace("Answers tersely.", "Answers in one line."))
"""


def configured(tmp_path: Path, **targets: dict[str, str]) -> Path:
    """A config with two file targets (markdown and plain text) in ``tmp_path``, and ``targets`` beside them."""
    config = {"store": {"path": str(tmp_path / "m.db")}, "injection": {"file": str(tmp_path / "persona.md")},
              "targets": {"plain": {"template": "persona.txt.j2", "path": str(tmp_path / "persona.txt")},
                          **targets}}
    return write(tmp_path / "persona.yaml", json.dumps(config))


def persona(config: Path, *args: str):
    return runner.invoke(app, ["-c", str(config), *args])


def files(tmp_path: Path) -> tuple[str, str]:
    return (tmp_path / "persona.md").read_text(), (tmp_path / "persona.txt").read_text()


def runs(tmp_path: Path) -> dict[str, int]:
    """How many renders each target has had."""
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn:
        return dict(conn.execute("SELECT target, COUNT(*) FROM persona_runs GROUP BY target").fetchall())


def holds(tmp_path: Path, text: str) -> bool:
    return all(text in shown for shown in files(tmp_path))


def test_add_promote_replace_and_undo_leave_both_files_current_and_say_so(tmp_path):
    config = configured(tmp_path)
    added = persona(config, "add", "Answers tersely.", "--topic", "style")
    assert added.exit_code == 0 and added.stdout.splitlines()[-1] == "rendered 2 targets"
    assert holds(tmp_path, "Answers tersely.")
    PersonaStore(tmp_path / "m.db").open()
    add_memory(tmp_path / "m.db", "m1", "Never force-push.", metadata='{"topic": "git"}')
    promoted = persona(config, "promote", "m1")
    assert promoted.exit_code == 0 and "rendered 2 targets" in promoted.stdout and holds(tmp_path, "Never force-push.")
    replaced = persona(config, "replace", "1", "Answers in one line.")
    assert replaced.exit_code == 0 and "rendered 2 targets" in replaced.stdout
    assert holds(tmp_path, "Answers in one line.") and not any("tersely" in shown for shown in files(tmp_path))
    undone = persona(config, "undo-replace", "3")
    assert undone.exit_code == 0 and "rendered 2 targets" in undone.stdout and holds(tmp_path, "Answers tersely.")
    assert runs(tmp_path) == {"markdown": 4, "plain": 4}, "one render of each target per write"


def test_a_write_that_changes_nothing_renders_nothing_and_says_the_targets_are_current(tmp_path):
    config = configured(tmp_path)
    persona(config, "add", "Answers tersely.", "--topic", "style")
    again = persona(config, "add", "Answers tersely.", "--topic", "style")
    assert "already in the persona" in again.stdout and again.stdout.splitlines()[-1] == \
        "every target was already current"
    assert runs(tmp_path) == {"markdown": 1, "plain": 1}


def test_an_import_renders_once_for_the_whole_file_and_json_names_the_targets(tmp_path):
    config = configured(tmp_path)
    facts = write(tmp_path / "facts.yaml", "facts:\n" + "".join(
        f"  - topic: t\n    content: Fact number {n}.\n" for n in range(5)))
    done = persona(config, "import", str(facts), "--json")
    answer = json.loads(done.stdout)
    assert done.exit_code == 0 and len(answer["added"]) == 5
    assert sorted(answer["rendered"]) == ["markdown", "plain"] and answer["render_warnings"] == []
    assert holds(tmp_path, "Fact number 4.") and runs(tmp_path) == {"markdown": 1, "plain": 1}
    assert persona(config, "import", str(facts), "--dry-run").exit_code == 0
    assert runs(tmp_path) == {"markdown": 1, "plain": 1}, "a dry run renders nothing"


def test_review_accept_renders_the_accepted_fact(tmp_path):
    config = configured(tmp_path)
    persona(config, "add", NPM, "--topic", "tools")
    proposing = json.loads(persona(config, "add", PNPM, "--topic", "tools", "--json").stdout)
    [proposal] = proposing["proposals"]
    assert holds(tmp_path, NPM) and holds(tmp_path, PNPM), "both stay until the user decides"
    accepted = persona(config, "review", "accept", str(proposal["id"]))
    assert accepted.exit_code == 0 and "rendered 2 targets" in accepted.stdout
    assert holds(tmp_path, PNPM) and not any(NPM in shown for shown in files(tmp_path))


def test_an_edit_renders_once_after_its_one_transaction(tmp_path, monkeypatch):
    config = configured(tmp_path)
    persona(config, "add", "Answers tersely.", "--topic", "style")
    script = write(tmp_path / "editor.py", REPLACER)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)
    edited = persona(config, "edit")
    assert edited.exit_code == 0, edited.output
    assert edited.stdout.splitlines()[-1] == "rendered 2 targets"
    assert holds(tmp_path, "Answers in one line.") and runs(tmp_path) == {"markdown": 2, "plain": 2}


def test_a_target_that_cannot_be_rendered_is_a_warning_and_the_write_and_the_other_targets_stand(tmp_path):
    mine = write(tmp_path / "mine.md", "My own notes, not a render.\n")
    config = configured(tmp_path, mine={"template": "persona.md.j2", "path": str(mine)})
    added = persona(config, "add", "Answers tersely.", "--topic", "style")
    assert added.exit_code == 0
    assert added.stdout.splitlines()[-1] == "rendered 2 targets; 1 could not be (see the warning)"
    assert "warning: target 'mine'" in added.stderr and "persona adopt" in added.stderr
    assert "the change is saved" in added.stderr
    assert holds(tmp_path, "Answers tersely.") and mine.read_text() == "My own notes, not a render.\n"
    listed = json.loads(persona(config, "list", "--json").stdout)
    assert [fact["content"] for fact in listed] == ["Answers tersely."]
    as_json = json.loads(persona(config, "add", "Uses uv.", "--topic", "tools", "--json").stdout)
    assert sorted(as_json["rendered"]) == ["markdown", "plain"] and "'mine'" in as_json["render_warnings"][0]


def test_a_write_while_another_render_holds_the_lock_still_succeeds_and_says_why_nothing_was_rendered(tmp_path):
    config = configured(tmp_path)
    settings = load_settings(config_files=[config])
    with PersonaStore.from_settings(settings) as worker, worker.profile_lock(0) as held:
        assert held
        tools = PersonaTools(lambda: settings)
        answer = tools.catalog(legacy=False)["persona_add"](content="Answers tersely.", topic="style")
    assert answer["status"] == "ok" and answer["created"] is True and answer["rendered"] == []
    assert "held its lock" in answer["render_warnings"][0]
    assert not (tmp_path / "persona.md").exists()


def test_each_writing_tool_answers_with_the_targets_it_rendered(tmp_path):
    settings = load_settings(config_files=[configured(tmp_path)])
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    added = tools["persona_add"](content=NPM, topic="tools")
    assert sorted(added["rendered"]) == ["markdown", "plain"] and added["render_warnings"] == []
    assert holds(tmp_path, NPM)
    proposing = tools["persona_add"](content=PNPM, topic="tools")
    accepted = tools["persona_review"](action="accept", proposal=proposing["may_update"][0]["proposal"])
    assert sorted(accepted["rendered"]) == ["markdown", "plain"] and not any(NPM in s for s in files(tmp_path))
    replaced = tools["persona_replace"](persona_id=accepted["persona_id"], content="Uses bun for JavaScript")
    assert sorted(replaced["rendered"]) == ["markdown", "plain"] and holds(tmp_path, "Uses bun")
    add_memory(tmp_path / "m.db", "m1", "Never force-push.", metadata='{"topic": "git"}')
    promoted = tools["persona_promote"](memory_id="m1")
    assert sorted(promoted["rendered"]) == ["markdown", "plain"] and holds(tmp_path, "Never force-push.")
    assert runs(tmp_path) == {"markdown": 5, "plain": 5}, "one render per tool write"
