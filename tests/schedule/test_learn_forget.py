"""Forget reaches back (issue 53, point 4): forgetting a fact also takes its entry out of each host's own memory file
(only that entry, every other byte kept, the file swapped with its mode kept), lists the files it changed, and
--keep-host-histories only names them. Through the CLI, both backends, two profiles and two projects."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import write
from ..stages.test_scopes import repository

GEMINI = "# Mine\n\n- Use 4 spaces.\n\n## Gemini Added Memories\n- Prefers metric units.\n- Has a dog named Pixel.\n"
USER = "Works from Lisbon.\n§\nDrinks tea, never coffee.\n§\nPlays the cello."
TOX, HUGO = "Runs the tests with tox.", "Deploys with hugo."


def cli(database, tmp_path: Path, *args: str):
    return CliRunner().invoke(app, ["--db", str(database.target), "--set",
                                    f"injection.file={tmp_path / 'p-{profile}.md'}", *args])


def memories(tmp_path: Path) -> dict[str, Path]:
    """Gemini CLI's global memory (its first learn only notes it, then its model added two lines), Hermes' USER.md
    and Claude Code's memory of projects a and b."""
    home = Path(os.environ["HOME"])
    files = {"gemini": write(home / ".gemini" / "GEMINI.md", "# Mine\n\n- Use 4 spaces.\n"),
             "hermes": write(home / ".hermes" / "memories" / "USER.md", USER)}
    for name, fact in (("a", TOX), ("b", HUGO)):
        project = repository(tmp_path / name, f"git@github.com:me/{name}.git")
        slug = re.sub(r"[^A-Za-z0-9]", "-", str(project))
        files[name] = write(home / ".claude" / "projects" / slug / "memory" / "MEMORY.md", f"# Memory\n\n- {fact}\n")
    return files


def learned(database, tmp_path: Path, files: dict[str, Path], profile: str) -> dict[str, int]:
    assert cli(database, tmp_path, "learn", "-p", profile).exit_code == 0
    files["gemini"].write_text(GEMINI)
    done = cli(database, tmp_path, "learn", "-p", profile)
    assert done.exit_code == 0, done.output
    return {fact.content: fact.id for fact in database.store(profile=profile).list()}


def test_forgetting_a_learned_fact_takes_only_its_entry_out_of_its_hosts_memory(database, tmp_path):
    files = memories(tmp_path)
    files["hermes"].chmod(0o640)
    ids = learned(database, tmp_path, files, "alice")
    for text in ("Has a dog named Pixel.", "Drinks tea, never coffee.", TOX):
        done = cli(database, tmp_path, "forget", str(ids[text]), "-p", "alice")
        assert done.exit_code == 0, done.output
    assert "took the entry out of 1 host memory file:" in done.output and f"{files['a']} (Claude Code, 1 entry)" \
        in done.output
    assert files["gemini"].read_text() == GEMINI.replace("- Has a dog named Pixel.\n", "")
    assert files["hermes"].read_text() == "Works from Lisbon.\n§\nPlays the cello."
    assert files["hermes"].stat().st_mode & 0o777 == 0o640
    assert files["a"].read_text() == "# Memory\n\n" and files["b"].read_text() == f"# Memory\n\n- {HUGO}\n"
    assert not list(files["hermes"].parent.glob(".*persona-scrub-*"))
    assert "Has a dog named Pixel." not in cli(database, tmp_path, "learn", "-p", "alice").output


def test_keep_host_histories_names_the_memory_files_and_changes_none(database, tmp_path):
    files = memories(tmp_path)
    ids = learned(database, tmp_path, files, "bob")
    before = {name: path.read_bytes() for name, path in files.items()}
    done = cli(database, tmp_path, "forget", str(ids["Plays the cello."]), "-p", "bob", "--keep-host-histories",
               "--json")
    assert done.exit_code == 0, done.output
    answer = json.loads(done.output[done.output.index("{"):])
    assert answer["host_histories"]["files"] == [{"host": "Hermes Agent", "path": str(files["hermes"]),
                                                  "replaced": 1, "memory": True}]
    assert {name: path.read_bytes() for name, path in files.items()} == before
    alice = learned(database, tmp_path, files, "alice")  # alice learns the same home: her own facts
    assert "Plays the cello." in alice


def test_a_memory_file_it_cannot_read_is_named_only_when_it_may_hold_the_text(database, tmp_path):
    files = memories(tmp_path)
    ids = learned(database, tmp_path, files, "alice")
    files["b"].write_bytes(b"- caf\xe9\n- " + HUGO.encode() + b"\n")  # not UTF-8 any more
    other = cli(database, tmp_path, "forget", str(ids["Works from Lisbon."]), "-p", "alice")
    assert other.exit_code == 0 and str(files["b"]) not in other.output  # it does not hold that text
    done = cli(database, tmp_path, "forget", str(ids[HUGO]), "-p", "alice")
    assert f"{files['b']} (Claude Code) still holds the text: it cannot be read as its host writes it" in done.output
    assert done.exit_code == 1
