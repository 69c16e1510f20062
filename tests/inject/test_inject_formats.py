"""`persona inject --format`: the appendix as plain text, or in the shape a host's session-start hook reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

runner = CliRunner()


@pytest.fixture
def args(tmp_path: Path) -> list[str]:
    with PersonaStore(tmp_path / "m.db") as store:
        store.add("Answers tersely.", topic="style")
    with PersonaStore(tmp_path / "m.db", profile="bob") as store:
        store.add("Bob's secret rule.", topic="bob")
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / '{profile}.md'}",
            "--set", "injection.enabled=true"]
    for profile in ("default", "bob"):
        assert runner.invoke(app, [*base, "render", "--profile", profile]).exit_code == 0
    return base


def test_the_claude_code_format_is_its_session_start_hook_json(args):
    text = runner.invoke(app, [*args, "inject"])
    hook = runner.invoke(app, [*args, "inject", "--format", "claude-code"])
    assert hook.exit_code == 0, hook.stderr
    shape = json.loads(hook.stdout)
    assert shape == {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text.stdout}}
    assert "Answers tersely." in text.stdout and "Bob" not in hook.stdout
    bob = json.loads(runner.invoke(app, [*args, "inject", "--format", "claude-code", "--profile", "bob"]).stdout)
    assert "Bob's secret rule." in bob["hookSpecificOutput"]["additionalContext"]
    assert "Answers tersely." not in bob["hookSpecificOutput"]["additionalContext"]


def test_plain_text_is_the_default_and_an_unknown_format_is_one_error(args):
    plain = runner.invoke(app, [*args, "inject"]).stdout
    assert "Answers tersely." in plain and runner.invoke(app, [*args, "inject", "--format", "text"]).stdout == plain
    bad = runner.invoke(app, [*args, "inject", "--format", "xml"])
    assert bad.exit_code == 1 and "unknown --format 'xml'" in bad.stderr
