"""`persona edit` driven by scripted editors ($EDITOR is a small Python script): one that edits (saving in place, or
writing a new file and renaming it over), one that breaks the YAML then fixes it, one that saves nothing, and one
that races a real `persona add` process before it saves. Both backends; editing alice never touches bob."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app
from pipeline.cli.edit_cmds import editor_command

from ..conftest import cli, failed_cleanly, write
from ..support.databases import fail_inserts_of

runner = CliRunner()

# The editor: `python editor.py MODE STATE_DIR FILE`. Each run keeps what it was shown (STATE_DIR/shown-N.yaml), what
# it saved (saved-N.yaml), and the file's path and modes (where), for the test to read.
EDITOR = r'''
import os, pathlib, re, subprocess, sys

mode, state, path = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
run = len(list(state.glob("shown-*.yaml")))
text = path.read_text(encoding="utf-8")
(state / f"shown-{run}.yaml").write_text(text, encoding="utf-8")
(state / "where").write_text(f"{path}\n{path.stat().st_mode & 0o777:o}\n{path.parent.stat().st_mode & 0o777:o}\n")


def save(new, how="in place"):
    (state / f"saved-{run}.yaml").write_text(new, encoding="utf-8")
    if how == "rename":  # as vim's backupcopy=no, or an IDE: a new file renamed over the old one
        temp = path.with_name(path.name + ".new")
        temp.write_text(new, encoding="utf-8")
        os.replace(temp, path)
    else:
        with open(path, "w", encoding="utf-8") as out:
            out.write(new)


def corrected(text):
    """Correct one text, move one fact to another tier, delete one entry, add one."""
    text = text.replace("content: Uses npm for JavaScript projects", "content: Uses pnpm for JavaScript projects")
    text = text.replace("content: Lives in Berlin\n  tier: long_term", "content: Lives in Berlin\n  tier: permanent")
    text = re.sub(r"# #\d+: [^\n]*\n- id: \d+\n  topic: style\n  content: Answers tersely\.\n(  [^\n]*\n)*", "", text)
    return text + "- topic: drinks\n  content: Prefers tea\n"


if mode in ("edits", "edits-by-rename"):
    save(corrected(text), "rename" if mode == "edits-by-rename" else "in place")
elif mode in ("breaks-then-fixes", "breaks-then-quits"):
    if run == 0:
        save(corrected(text) + "- topic: [broken\n")
    elif mode == "breaks-then-fixes":
        save(text.replace("- topic: [broken\n", ""), "rename")
elif mode == "races":  # another writer, a real process, while the file is open
    subprocess.run([sys.executable, "-m", "pipeline", *os.environ["RACE"].split("\x1f")], check=True,
                   capture_output=True)
    save(corrected(text))
elif mode == "fails":
    save(corrected(text))
    sys.exit(3)
'''


@pytest.fixture
def editor(tmp_path: Path):
    """The command line of the scripted editor in a mode (its path has a space: the command is split as a shell
    would), and the directory where it keeps what it saw."""
    script = write(tmp_path / "my editors" / "editor.py", EDITOR)
    state = tmp_path / "editor state"
    state.mkdir()

    def command(mode: str) -> str:
        return shlex.join([sys.executable, str(script), mode, str(state)])

    command.state = state  # type: ignore[attr-defined]
    return command


def seeded(database):
    with database.store(profile="alice", writer="cli") as alice:
        alice.add("Uses npm for JavaScript projects", topic="tools")
        alice.add("Lives in Berlin", topic="home")
        alice.add("Answers tersely.", topic="style")
    with database.store(profile="bob", writer="cli") as bob:
        bob.add("Answers tersely.", topic="style")


def facts(database, profile: str = "alice") -> dict[str, tuple[str, str | None]]:
    with PersonaStore(database.target, profile=profile) as store:
        return {fact.content: (fact.tier, fact.writer) for fact in store.list()}


def edit(database, tmp_path: Path, command: str, *args: str, race: list[str] | None = None):
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'persona-{profile}.md'}"]
    env = {"VISUAL": None, "EDITOR": command, "RACE": "\x1f".join([*base, *(race or [])])}
    return runner.invoke(app, [*base, "edit", "-p", "alice", *args], env=env)


EDITED = {"Uses pnpm for JavaScript projects": ("long_term", "edit"), "Lives in Berlin": ("permanent", "cli"),
          "Prefers tea": ("long_term", "edit")}


@pytest.mark.parametrize("mode", ["edits", "edits-by-rename"])
def test_an_editor_that_edits_gets_its_plan_applied_in_one_transaction(database, tmp_path, editor, mode):
    seeded(database)
    bob = facts(database, "bob")
    done = edit(database, tmp_path, editor(mode))

    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == "profile 'alice': 1 added, 2 changed, 1 removed"
    assert re.fullmatch(r"  demote   #3 \[style\] Answers tersely\.", lines[1])
    assert re.fullmatch(r"  replace  #1 \[tools\] Uses npm for JavaScript projects -> \[tools\] Uses pnpm for "
                        r"JavaScript projects", lines[2])
    assert lines[3] == "  update   #2 tier long_term -> permanent"
    assert re.fullmatch(r"  add      \[drinks\] Prefers tea \(line \d+\)", lines[4])
    assert lines[5] == ("applied in one transaction: added #6; #5 replaces #1 (`persona undo-replace 5` takes it "
                        "back); updated #2; demoted #3")
    assert facts(database) == EDITED and facts(database, "bob") == bob
    path, file_mode, directory_mode = (editor.state / "where").read_text().split()
    assert (file_mode, directory_mode) == ("600", "700") and not Path(path).parent.exists()  # private, then gone
    shown = (editor.state / "shown-0.yaml").read_text()
    assert "# #1: written by cli; created " in shown and "writer:" not in shown  # who wrote it: a comment

    undone = runner.invoke(app, ["--db", str(database.target), "undo-replace", "5", "-p", "alice"])
    assert undone.exit_code == 0 and "Uses npm for JavaScript projects" in facts(database)


def test_an_editor_that_breaks_the_yaml_then_fixes_it_sees_the_problem_on_top_and_loses_nothing(
        database, tmp_path, editor):
    seeded(database)
    done = edit(database, tmp_path, editor("breaks-then-fixes"))

    assert done.exit_code == 0, done.output
    assert done.stderr == "persona edit: 1 problem; reopening the file with them at the top\n"
    second = (editor.state / "shown-1.yaml").read_text().splitlines()
    assert second[0].startswith("# persona edit could not apply this file")
    error = re.fullmatch(r"# error: line (\d+): bad YAML: .*", second[1])
    assert error and second[int(error[1]) - 1] == "- topic: [broken"  # the line as the user sees it
    assert second[2:] == (editor.state / "saved-0.yaml").read_text().splitlines()  # every line it typed
    assert "  content: Uses pnpm for JavaScript projects" in second and "  content: Prefers tea" in second
    assert facts(database) == EDITED


def test_an_editor_that_saves_nothing_changes_nothing(database, tmp_path, editor):
    seeded(database)
    with PersonaStore(database.target, profile="alice") as store:
        generation, before = store.generation(), facts(database)
    done = edit(database, tmp_path, editor("nothing"))

    assert done.exit_code == 0 and done.stdout == ("no change: the editor closed with the file as it was; nothing "
                                                   "was applied\n")
    with PersonaStore(database.target, profile="alice") as store:
        assert store.generation() == generation and facts(database) == before
    assert not Path((editor.state / "where").read_text().split()[0]).exists()


def test_an_editor_that_leaves_the_problems_unfixed_applies_nothing_and_keeps_the_edit(database, tmp_path, editor):
    seeded(database)
    before = facts(database)
    done = edit(database, tmp_path, editor("breaks-then-quits"))

    assert done.exit_code == 1
    kept = re.fullmatch(r"error: nothing was applied: the editor closed with the problems unfixed; your edit is kept "
                        r"in (.+)\n", done.stderr.splitlines(keepends=True)[-1])
    assert kept and "Uses pnpm for JavaScript projects" in Path(kept[1]).read_text()
    assert Path(kept[1]).stat().st_mode & 0o777 == 0o600 and facts(database) == before


def test_a_persona_add_while_the_editor_is_open_applies_nothing_and_keeps_the_edit(database, tmp_path, editor):
    seeded(database)
    before = facts(database)
    done = edit(database, tmp_path, editor("races"), race=["add", "Prefers coffee", "--topic", "drinks", "-p",
                                                           "alice"])

    assert done.exit_code == 1
    kept = re.fullmatch(r"error: profile 'alice' changed while the editor was open \(#5 added\); nothing was "
                        r"applied; your edit is kept in (.+) \(run `persona edit` again and carry it across\)\n",
                        done.stderr)
    assert kept, done.stderr
    assert facts(database) == {**before, "Prefers coffee": ("long_term", "cli")}  # the other writer's, only
    assert "content: Uses pnpm for JavaScript projects" in Path(kept[1]).read_text()


def test_a_failing_editor_applies_nothing_and_keeps_what_it_saved(database, tmp_path, editor):
    seeded(database)
    before = facts(database)
    done = edit(database, tmp_path, editor("fails"))
    assert done.exit_code == 1
    assert re.fullmatch(r"error: the editor `.+` exited with status 3; nothing was applied; your edit is kept in "
                        r"\S+persona-alice\.yaml\n", done.stderr)
    assert facts(database) == before


def test_a_failure_while_applying_changes_nothing_and_keeps_the_edit(database, tmp_path, editor):
    seeded(database)
    before = facts(database)
    fail_inserts_of(database, "Prefers tea", "disk on fire")  # the last step, after a demote and a replace
    done = edit(database, tmp_path, editor("edits"))

    assert done.exit_code == 1 and facts(database) == before
    kept = re.fullmatch(r"persona edit: nothing was applied; your edit is kept in (.+)\n", done.stderr.splitlines(
        keepends=True)[0])
    assert kept and "Prefers tea" in Path(kept[1]).read_text() and "disk on fire" in done.stderr


def test_forget_says_so_before_it_applies_and_erases_the_removed_fact_for_real(database, tmp_path, editor):
    seeded(database)
    done = edit(database, tmp_path, editor("edits"), "--forget")

    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[1] == "removed facts are FORGOTTEN FOR REAL: every copy of their text goes, and this cannot be undone"
    assert lines[2].startswith("  forget   #3 [style] Answers tersely.")
    assert "forgot #3 (current)" in lines[-2] and lines[-1].endswith("rendered again without the forgotten text: it "
                                                                     "leaves every session's persona at the next "
                                                                     "request")
    assert "FORGOTTEN FOR REAL" in (editor.state / "shown-0.yaml").read_text()  # the file said so too
    assert all("Answers tersely." not in str(row) for row in database.rows("memoria_persona")
               if row[1] == "alice")
    assert not database.execute("SELECT 1 FROM memoria_preferences WHERE session_id = 'alice'")
    assert "Answers tersely." not in (tmp_path / "persona-alice.md").read_text()
    assert facts(database, "bob") == {"Answers tersely.": ("long_term", "cli")}  # the same text, another profile


def test_an_edit_that_forgets_takes_the_text_out_of_the_hosts_histories_too(database, tmp_path, editor):
    seeded(database)
    transcript = write(Path.home() / ".claude" / "projects" / "-work-a" / "s.jsonl",
                       '{"message":{"content":"Answers tersely."}}\n{"message":{"content":"Lives in Berlin"}}\n')
    done = edit(database, tmp_path, editor("edits"), "--forget")
    assert done.exit_code == 0, done.output
    # the fact's normal form is matched (its final full stop is punctuation, and stays)
    assert transcript.read_text() == ('{"message":{"content":"[forgotten]."}}\n'
                                      '{"message":{"content":"Lives in Berlin"}}\n')
    assert done.stdout.splitlines()[-2:] == ["replaced the text with [forgotten] in 1 host history file:",
                                             f"  {transcript} (Claude Code, 1 time)"]


def test_dry_run_shows_the_plan_in_json_and_keeps_the_file(database, tmp_path, editor):
    seeded(database)
    before = facts(database)
    done = edit(database, tmp_path, editor("edits"), "--dry-run", "--json")

    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    assert answer["outcome"] == "dry run" and answer["applied"] is None
    assert {key: answer["plan"][key] for key in ("added", "changed", "removed")} == {"added": 1, "changed": 2,
                                                                                     "removed": 1}
    assert [step["kind"] for step in answer["plan"]["steps"]] == ["demote", "replace", "update", "add"]
    assert "Prefers tea" in Path(answer["kept"]).read_text() and facts(database) == before


@pytest.mark.slow
def test_persona_edit_as_a_real_process_visual_before_editor(tmp_path, editor):
    db = tmp_path / "m.db"
    for content, topic in (("Uses npm for JavaScript projects", "tools"), ("Lives in Berlin", "home"),
                           ("Answers tersely.", "style")):
        assert cli(tmp_path, "--db", str(db), "add", content, "--topic", topic, "-p", "alice").returncode == 0
    done = cli(tmp_path, "--db", str(db), "edit", "-p", "alice", "--json",
               env={"VISUAL": editor("edits-by-rename"), "EDITOR": "false", "TMPDIR": str(tmp_path / "tmp")})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["outcome"] == "applied" and answer["applied"]["added"] == [5]
    assert answer["applied"]["replaced"] == [{"old": 1, "new": 4}] and answer["applied"]["demoted"] == [3]
    with PersonaStore(db, profile="alice") as store:
        assert {fact.content: fact.writer for fact in store.list()}["Prefers tea"] == "edit"
    missing = cli(tmp_path, "--db", str(db), "edit", "-p", "alice",
                  env={"EDITOR": "no-such-editor --wait", "TMPDIR": str(tmp_path / "tmp")})
    assert failed_cleanly(missing) == ("error: cannot start the editor `no-such-editor --wait` ($VISUAL, $EDITOR): "
                                       "No such file or directory; nothing was applied")


def test_the_editor_is_visual_then_editor_then_vi_split_as_a_shell_would(monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    assert editor_command() == ["vi"]
    monkeypatch.setenv("EDITOR", "code --wait")
    assert editor_command() == ["code", "--wait"]
    monkeypatch.setenv("VISUAL", "'/opt/my editor/bin/ed' -n")
    assert editor_command() == ["/opt/my editor/bin/ed", "-n"]
