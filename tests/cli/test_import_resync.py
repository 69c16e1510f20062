"""Issue 38 point 6: imports read like the user wrote them. A nested item joins its parent with "; " (never ".;"),
notes already taken in are not offered again, and re-importing a source after forgetting one of its entries skips
that entry with one notice, imports the rest and exits 0: a forgotten fact never comes back. The importers' real
sources: Hermes' USER.md (§), a CLAUDE.md with nested items and a code block, a pasted ChatGPT list, mem0 JSON."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import REPO, write
from .test_init import populate

runner = CliRunner()
DATA = REPO / "tests" / "data" / "imports"
CLAUDE = """# Preferences

## Reviews

- Asks before answering design questions.
  - short ones otherwise
- Answers tersely.
  - no summary of what was just said.
- Testing:
  - use pytest
- Wants trade-offs stated;
  - up front

```sh
- not a rule: a line of a code block
```
"""
# (format, source, the entry forgotten, how the forgotten entry reads in the store)
SOURCES = [
    ("hermes", DATA / "hermes" / "memories" / "USER.md", "Works in Python and Rust; uses uv, never pip."),
    ("instructions", DATA / "claude" / "CLAUDE.md", "Write docstrings in the imperative mood."),
    ("lines", DATA / "pasted" / "chatgpt-memories.txt", "Has a dog named Pixel."),
    ("mem0", DATA / "mem0" / "get_all.json", "Prefers concise answers without small talk"),
]


def persona(database, tmp_path, *args: str):
    pairs = [f"{key}={value}" for key, value in {**database.settings(),
                                                  "injection.file": str(tmp_path / "p.md")}.items()]
    return runner.invoke(app, [*(part for pair in pairs for part in ("--set", pair)), *args])


def contents(database, tmp_path) -> list[str]:
    return [fact["content"] for fact in json.loads(persona(database, tmp_path, "list", "--json").stdout)]


def test_a_nested_item_joins_its_parent_without_a_stray_full_stop_and_code_stays_out(database, tmp_path):
    source = write(tmp_path / "CLAUDE.md", CLAUDE)
    done = persona(database, tmp_path, "import", "--from", "instructions", str(source))
    assert done.exit_code == 0, done.output
    assert sorted(contents(database, tmp_path)) == [
        "Answers tersely; no summary of what was just said.",
        "Asks before answering design questions; short ones otherwise",
        "Testing: use pytest",
        "Wants trade-offs stated; up front",
    ]


@pytest.mark.parametrize(("fmt", "path", "forgotten"), SOURCES, ids=[s[0] for s in SOURCES])
def test_a_re_import_skips_each_forgotten_entry_with_one_notice_and_imports_the_rest(database, tmp_path, fmt, path,
                                                                                   forgotten):
    source = tmp_path / path.name
    shutil.copy(path, source)
    assert persona(database, tmp_path, "import", "--from", fmt, str(source)).exit_code == 0
    [fact] = [f for f in json.loads(persona(database, tmp_path, "list", "--json").stdout)
              if f["content"] == forgotten]
    assert persona(database, tmp_path, "forget", str(fact["id"])).exit_code == 0
    before = sorted(contents(database, tmp_path))
    dry = persona(database, tmp_path, "import", "--from", fmt, str(source), "--dry-run")
    assert dry.exit_code == 0 and "1 forgotten fact skipped" in dry.stdout and forgotten not in dry.stdout, dry.output
    again = persona(database, tmp_path, "import", "--from", fmt, str(source))
    assert again.exit_code == 0, again.output
    assert "1 forgotten fact skipped" in again.stdout and forgotten not in again.output
    assert sorted(contents(database, tmp_path)) == before  # the rest was there already; the forgotten stays out
    reported = json.loads(persona(database, tmp_path, "import", "--from", fmt, str(source), "--json").stdout)
    assert len(reported["skipped_forgotten"]) == 1 and reported["refused"] == []
    assert forgotten not in json.dumps(reported)


def test_a_changed_source_brings_its_new_lines_in_around_a_forgotten_one(database, tmp_path):
    source = write(tmp_path / "CLAUDE.md", "## Git\n\n- Never force-push.\n- Bank PIN is 8642-Zebra.\n")
    assert persona(database, tmp_path, "import", "--from", "instructions", str(source)).exit_code == 0
    [pin] = [f["id"] for f in json.loads(persona(database, tmp_path, "list", "--json").stdout) if "PIN" in f["content"]]
    assert persona(database, tmp_path, "forget", str(pin)).exit_code == 0
    write(source, "## Git\n\n- Never force-push.\n- Bank PIN is 8642\u2011Zebra\n- Signs every commit.\n")
    done = persona(database, tmp_path, "import", "--from", "instructions", str(source))
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"{source}: 1 added") and "1 forgotten fact skipped (line 4)" in done.stdout
    assert sorted(contents(database, tmp_path)) == ["Never force-push.", "Signs every commit."]


def test_notes_already_taken_in_are_not_offered_again(tmp_path):
    home = Path(os.environ["HOME"])
    populate(home)
    first = runner.invoke(app, ["init", "--dry-run"])
    assert "3 notes offered for review, not imported" in first.stdout, first.output
    accepted = runner.invoke(app, ["init", "--yes", "--accept-notes"])
    assert accepted.exit_code == 0, accepted.output
    again = runner.invoke(app, ["init", "--dry-run"])
    assert again.exit_code == 0, again.output
    assert "offered for review" not in again.stdout and "User asked to always run ruff" not in again.stdout
    memory = home / ".hermes" / "memories" / "MEMORY.md"
    listed = runner.invoke(app, ["import", "--from", "hermes", str(memory), "--dry-run", "--json"])
    assert json.loads(listed.stdout)["notes"] == []
