"""What a new user tripped over: one-line errors that name the fix, warnings where silence misled, plain words."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.cli.common import width

from ..conftest import REPO, write

runner = CliRunner()


def persona(db, *args):
    return runner.invoke(app, ["--db", str(db), *args])


def commands(group=None, path=()):
    """Every command of the CLI, with its path (``("session", "show")``)."""
    import typer.main

    group = group or typer.main.get_command(app)
    context = typer.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if hasattr(command, "list_commands"):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


def test_usage_lines_name_arguments_plainly():
    for path, _ in commands():
        usage = runner.invoke(app, [*path, "--help"]).stdout.splitlines()[0]
        assert usage.startswith("Usage: persona ") and "{" not in usage, usage


def test_counts_read_as_words(tmp_path):
    db = tmp_path / "m.db"
    persona(db, "add", "Answers tersely.", "--topic", "style", "--profile", "alice")
    persona(db, "add", "Bob plays the cello.", "--topic", "music", "--profile", "bob")
    assert "1 time" in persona(db, "reinforce", "1", "--profile", "alice").stdout
    assert "2 times" in persona(db, "reinforce", "1", "--profile", "alice").stdout
    rendered = persona(db, "--set", f"injection.file={tmp_path / 'p-{profile}.md'}", "render", "--profile", "bob")
    assert "1 fact written, 0 left out, 1 section kept" in rendered.stdout and "Answers" not in rendered.stdout


def test_list_columns_line_up_with_cjk_topics(tmp_path):
    db = tmp_path / "m.db"
    for topic, content in (("style", "Answers tersely."), ("日本語の話題", "敬語を使う。"), ("mixed 中文", "Uses uv.")):
        persona(db, "add", content, "--topic", topic)
    persona(db, "add", "Someone else's rule.", "--topic", "other", "--profile", "bob")
    lines = persona(db, "list").stdout.splitlines()
    # Where the REINF column and the CONTENT column start, in terminal columns, on every row and the header.
    reinf_at = {width(line[: line.index(" 0 " if i else "REINF")]) + (1 if i else 0) for i, line in enumerate(lines)}
    content_at = {width(line[: max(line.find(word) for word in ("CONTENT", "Answers", "敬語", "Uses"))])
                  for line in lines}
    assert len(reinf_at) == 1 and len(content_at) == 1, lines
    assert "Someone else" not in "\n".join(lines)


def test_an_unknown_profile_is_warned_about_not_shown_as_an_empty_persona(tmp_path):
    db = tmp_path / "m.db"
    persona(db, "add", "Alice likes haiku.", "--topic", "style", "--profile", "alice")
    listed = persona(db, "list", "--profile", "alcie")  # a typo
    assert "profile 'alcie' has no facts and was never rendered" in listed.stderr
    assert "profile 'alice'" not in persona(db, "list", "--profile", "alice").stderr
    file = tmp_path / "p-{profile}.md"
    shown = persona(db, "--set", "injection.enabled=true", "--set", f"injection.file={file}", "inject", "-p", "alcie")
    assert shown.exit_code == 0 and shown.stdout == "" and "has no facts and was never rendered" in shown.stderr


def test_an_env_section_no_file_defines_is_warned_about(tmp_path):
    config = write(tmp_path / "p.yaml", "default:\n  cap:\n    token_cap: 900\nwork:\n  cap:\n    token_cap: 800\n")
    unknown = runner.invoke(app, ["-c", str(config), "--env", "wrok", "config", "show"])
    assert "no config file defines the section 'wrok'" in unknown.stderr
    known = runner.invoke(app, ["-c", str(config), "--env", "work", "config", "show", "--json"])
    assert "defines the section" not in known.stderr and json.loads(known.stdout)["cap"]["token_cap"] == 800


MISSING_PSYCOPG = """
import sys
sys.modules["psycopg"] = None  # as on a machine without the postgres extra
from pipeline.cli import app
app(["--db", "postgresql://alice@127.0.0.1:1/persona", "list"])
"""


def test_a_postgresql_url_without_the_extra_is_one_line_naming_it(tmp_path):
    done = subprocess.run([sys.executable, "-c", MISSING_PSYCOPG], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith("error: a PostgreSQL store (psycopg is not installed) needs persona-tier's optional extra "
                           "'postgres': pip install 'persona-tier[postgres]'"), said
    assert "pipx install --force 'SOURCE[postgres]'" in said and "uv tool install --force 'SOURCE[postgres]'" in said


@pytest.mark.parametrize("text", ["plain", "中文字", "e\u0301"])
def test_width_counts_terminal_columns(text):
    assert width(text) == {"plain": 5, "中文字": 6, "e\u0301": 1}[text]
