"""`persona edit`'s guards: an emptied file is an abort (as git takes an empty commit message), an edit that removes
more than half the persona asks on a terminal and is refused without one, and a kept edit file never outlives a
`persona forget` of the text it holds. Driven by scripted editors ($EDITOR is a small Python script), through the
CLI and as real processes on a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

from ..conftest import REPO, write

runner = CliRunner()

# `python editor.py MODE FILE`: what the user's editor leaves in the file.
EDITOR = r'''
import re, sys

mode, path = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
entry = r"# #\d+: [^\n]*\n- id: \d+\n(  [^\n]*\n)*"
if mode == "empties":  # a crash, a full disk, `:w` of an unloaded buffer
    text = ""
elif mode == "blanks":
    text = "\n  \n"
elif mode == "comments only":  # everything but the comments deleted: no `facts:` any more
    text = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
elif mode == "renames facts":
    text = text.replace("facts:", "fact:")
elif mode == "removes all":
    text = re.sub(entry, "", text)
elif mode == "removes two":
    text = re.sub(entry, "", text, count=2)
elif mode == "removes one":
    text = re.sub(entry, "", text, count=1)
elif mode == "fails":  # an edit typed, then the editor dies
    open(path, "w", encoding="utf-8").write(text + "- topic: drinks\n  content: Prefers tea\n")
    sys.exit(3)
open(path, "w", encoding="utf-8").write(text)
'''
FACTS = ("Uses npm for JavaScript projects", "Lives in Berlin", "Answers tersely.")


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    db = tmp_path / "m.db"
    for profile in ("alice", "bob"):
        with PersonaStore(db, profile=profile, writer="cli") as store:
            for content in FACTS:
                store.add(content, topic="general")
    return {"db": db, "editor": write(tmp_path / "editor.py", EDITOR), "tmp": tmp_path / "tmp",
            "persona": tmp_path / "persona-{profile}.md"}


def editor(world: dict[str, Path], mode: str) -> str:
    return shlex.join([sys.executable, str(world["editor"]), mode])


def base(world: dict[str, Path]) -> list[str]:
    return ["--db", str(world["db"]), "--set", f"injection.file={world['persona']}"]


def edit(world: dict[str, Path], mode: str, *args: str, profile: str = "alice"):
    return runner.invoke(app, [*base(world), "edit", "-p", profile, *args], env={"VISUAL": None,
                                                                                 "EDITOR": editor(world, mode)})


def facts(world: dict[str, Path], profile: str = "alice") -> list[str]:
    with PersonaStore(world["db"], profile=profile) as store:
        return sorted(fact.content for fact in store.list())


def kept(world: dict[str, Path]) -> list[Path]:
    return sorted(world["tmp"].glob("persona-edit-*/*"))


@pytest.mark.parametrize("mode", ["empties", "blanks", "comments only", "renames facts"])
@pytest.mark.parametrize("forget", [False, True])
def test_an_emptied_edit_file_is_an_abort_and_changes_nothing(world, mode, forget):
    with PersonaStore(world["db"], profile="alice") as store:
        generation = store.generation()
    done = edit(world, mode, *(["--forget"] if forget else []))

    assert done.exit_code == 1, done.output
    said = re.fullmatch(r"error: aborted: the saved file (is empty|holds no `facts:`); nothing was applied(; your "
                        r"edit is kept in \S+)? \(as git takes an empty commit message\)\n", done.stderr)
    assert said, done.stderr
    assert facts(world) == sorted(FACTS)
    with PersonaStore(world["db"], profile="alice") as store:
        assert store.generation() == generation
    if mode == "renames facts":  # entries under another key: kept, so nothing typed is lost
        assert said[2] and [str(path) for path in kept(world)] == [said[2].removeprefix("; your edit is kept in ")]
    else:
        assert said[1] == "is empty" and not said[2] and not kept(world)  # nothing the user typed to keep


@pytest.mark.parametrize("mode", ["removes all", "removes two"])
@pytest.mark.parametrize("forget", [False, True])
def test_removing_more_than_half_without_a_terminal_is_refused_and_names_the_flag(world, mode, forget):
    done = edit(world, mode, *(["--forget"] if forget else []))

    assert done.exit_code == 1, done.output
    refused = re.fullmatch(r"error: this edit removes (\d) of the profile's 3 facts, more than half; nothing was "
                           r"applied; your edit is kept in (\S+) \(there is no terminal to confirm it on: pass "
                           r"--yes to apply it\)\n", done.stderr)
    assert refused, done.stderr
    assert refused[1] == ("3" if mode == "removes all" else "2") and Path(refused[2]).exists()
    assert facts(world) == sorted(FACTS)


def test_removing_more_than_half_with_yes_or_half_or_less_applies(world):
    one = edit(world, "removes one")
    assert one.exit_code == 0, one.output
    assert len(facts(world)) == 2
    all_of_them = edit(world, "removes all", "--yes")
    assert all_of_them.exit_code == 0, all_of_them.output
    assert facts(world) == [] and facts(world, "bob") == sorted(FACTS)


def on_a_terminal(world: dict[str, Path], mode: str, args: list[str], answer: str) -> tuple[int, str]:
    """`persona ARGS` as a real process on a pseudo-terminal, answering ``answer`` to the question it asks."""
    env = {"PATH": os.environ["PATH"], "HOME": str(world["db"].parent / "home"), "PYTHONPATH": str(REPO),
           "TMPDIR": str(world["tmp"]), "EDITOR": editor(world, mode), "TERM": "dumb"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: persona, its stdin, stdout and stderr the terminal
        os.execve(sys.executable, [sys.executable, "-m", "pipeline", *args], env)
    output, asked = b"", False
    while select.select([fd], [], [], 60)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child has gone: the terminal is closed
            break
        output += chunk
        if not asked and b"[y/N]" in output:
            os.write(fd, answer.encode() + b"\n")
            asked = True
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), output.decode()


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["n", "y"])
def test_removing_more_than_half_on_a_terminal_asks_first(world, answer):
    code, output = on_a_terminal(world, "removes two", [*base(world), "edit", "-p", "alice"], answer)
    assert "this edit removes 2 of the profile's 3 facts, more than half (demoted): apply it? [y/N]" in output
    if answer == "n":
        assert code == 1 and "nothing was applied" in output and facts(world) == sorted(FACTS)
    else:
        assert code == 0 and "applied in one transaction" in output and len(facts(world)) == 1


def forget(world: dict[str, Path], content: str, *args: str, profile: str = "alice"):
    with PersonaStore(world["db"], profile=profile) as store:
        fact_id = next(fact.id for fact in store.list() if fact.content == content)
    return runner.invoke(app, [*base(world), "forget", str(fact_id), "-p", profile, *args])


def test_a_forget_removes_the_kept_edit_files_that_hold_the_text_and_says_so(world):
    for profile in ("alice", "bob"):  # both edits fail, and each profile's file is kept
        assert edit(world, "fails", profile=profile).exit_code == 1
    alice, bob = (next(path for path in kept(world) if path.name == f"persona-{name}.yaml") for name in ("alice",
                                                                                                         "bob"))
    bobs = bob.read_bytes()
    done = forget(world, "Lives in Berlin")

    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[-1] == (f"removed 1 kept `persona edit` file that held the text: {alice}")
    assert not alice.exists() and not alice.parent.exists()
    assert bob.read_bytes() == bobs  # the same text in another profile's kept file: not this forget's
    again = forget(world, "Answers tersely.", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["edit_files"] == []
    erased = runner.invoke(app, [*base(world), "profile", "erase", "bob", "--yes"])
    assert erased.exit_code == 0, erased.output
    assert f"removed 1 kept `persona edit` file that held the text: {bob}" in erased.stdout and not kept(world)


def test_a_kept_edit_file_holding_the_text_in_another_spelling_goes_and_one_without_it_stays(world):
    assert edit(world, "fails").exit_code == 1
    path = kept(world)[0]
    other = path.parent.parent / "persona-edit-other" / path.name
    other.parent.mkdir(mode=0o700)
    other.write_text("facts:\n- topic: general\n  content: Uses npm for JavaScript\n    projects\n")  # folded
    write(path.parent.parent / "persona-edit-third" / path.name, "facts:\n- topic: drinks\n  content: Tea.\n")
    done = forget(world, "Uses npm for JavaScript projects")

    assert done.exit_code == 0, done.output
    assert "removed 2 kept `persona edit` files that held the text: " in done.stdout
    assert [p.parent.name for p in kept(world)] == ["persona-edit-third"]


def test_persona_edit_forget_removes_the_other_kept_edit_files_holding_what_it_forgot(world):
    assert edit(world, "fails").exit_code == 1
    [older] = kept(world)
    done = edit(world, "removes one", "--forget")

    assert done.exit_code == 0, done.output
    assert f"removed 1 kept `persona edit` file that held the text: {older}" in done.stdout
    assert not kept(world)
