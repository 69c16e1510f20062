"""Every reader of a template file (loader, render child, settings fingerprint) is confined and cannot block.

Issue 19, paragraph 7: `status` and `tick` fingerprint the templates; they used to open them with a
plain open(), so a FIFO hung them, a symlink to /dev/zero ate memory, and an absolute name escaped
the template directories. Each hostile template is tried through `status`, `tick` and `render` after a
good render, so every command reaches the fingerprint: one clear line, exit 1, nothing written.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

from .conftest import write

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()
COMMANDS = (["status"], ["tick"], ["tick", "--force"], ["render"])


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    """A database whose two profiles were each rendered once with the shipped template."""
    db = tmp_path / "m.db"
    for profile, fact in (("alice", "Alice answers tersely."), ("bob", "Bob likes long answers.")):
        with PersonaStore(db, profile=profile) as store:
            store.add(fact, topic="style")
        result = runner.invoke(app, [*base_args(tmp_path, profile), "render"])
        assert result.exit_code == 0, result.output
    return db


def base_args(tmp_path: Path, profile: str) -> list[str]:
    return ["--db", str(tmp_path / "m.db"), "--set", f"store.profile={profile}",
            "--set", f"injection.file={tmp_path / 'out'}/persona-{{profile}}.md"]


def hostile_args(tmp_path: Path, name: str, profile: str = "alice") -> list[str]:
    templates = tmp_path / "templates"
    return [*base_args(tmp_path, profile), "--set", f"render.template_dirs=[{templates}]",
            "--set", f"targets.markdown.template={name}"]


def state(tmp_path: Path) -> tuple[str, ...]:
    """Everything a command could write: each persona file and the run log."""
    files = tuple(hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((tmp_path / "out").iterdir()))
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn:
        runs = conn.execute("SELECT COUNT(*), MAX(id) FROM persona_runs").fetchone()
    return (*files, repr(runs))


def one_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in output, output
    return lines[0]


def make_secret(tmp_path: Path) -> Path:
    return write(tmp_path / "elsewhere" / "secret.j2", "TOP SECRET {{ persona.fact_count }}")


def setup_zero(tmp_path: Path) -> str:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "zero.j2").symlink_to("/dev/zero")
    return "zero.j2"


def setup_absolute(tmp_path: Path) -> str:
    (tmp_path / "templates").mkdir()
    return str(make_secret(tmp_path))


def setup_dotdot(tmp_path: Path) -> str:
    (tmp_path / "templates").mkdir()
    make_secret(tmp_path)
    return "../elsewhere/secret.j2"


def setup_symlink_out(tmp_path: Path) -> str:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "persona.md.j2").symlink_to(make_secret(tmp_path))  # shadows the shipped one
    return "persona.md.j2"


HOSTILE = {
    "a symlink to /dev/zero": (setup_zero, "outside the template directories"),
    "an absolute name": (setup_absolute, "an absolute name"),
    "a .. escape": (setup_dotdot, "no '..'"),
    "a symlink out of the directory": (setup_symlink_out, "outside the template directories"),
}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_template_is_one_clear_error_in_every_command_and_nothing_is_written(
        tmp_path, rendered, kind, command):
    setup, reason = HOSTILE[kind]
    name = setup(tmp_path)
    before = state(tmp_path)
    result = runner.invoke(app, [*hostile_args(tmp_path, name), *command])
    line = one_line(result.stderr)
    assert result.exit_code == 1 and reason in line and name in line, line
    assert "TOP SECRET" not in result.output
    assert state(tmp_path) == before


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_fifo_in_a_template_directory_never_hangs_a_command(tmp_path, rendered, command):
    templates = tmp_path / "templates"
    templates.mkdir()
    os.mkfifo(templates / "persona.md.j2")  # the shipped name: no silent fall-through to the built-in one
    before = state(tmp_path)
    home = tmp_path / "home"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO)}
    # A generous bound: a hang fails this test instead of hanging the suite.
    done = subprocess.run([sys.executable, "-m", "pipeline", *hostile_args(tmp_path, "persona.md.j2"), *command],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    line = one_line(done.stderr)
    assert done.returncode == 1 and "persona.md.j2" in line and "a FIFO" in line, line
    assert state(tmp_path) == before


def test_a_missing_user_template_names_each_directory_and_why(tmp_path, rendered):
    (tmp_path / "templates").mkdir()
    gone = tmp_path / "gone"
    args = [*base_args(tmp_path, "alice"), "--set", f"render.template_dirs=[{tmp_path / 'templates'}, {gone}]",
            "--set", "targets.markdown.template=mine.j2"]
    for command in COMMANDS:
        result = runner.invoke(app, [*args, *command])
        line = one_line(result.stderr)
        assert result.exit_code == 1, line
        assert f"{tmp_path / 'templates'} (no file mine.j2)" in line and f"{gone} (no such directory)" in line
        assert "the built-in templates (" in line


def test_a_good_user_template_still_renders_and_an_edit_is_noticed(tmp_path, rendered):
    mine = write(tmp_path / "templates" / "mine.j2", "{% for s in persona.sections %}{{ s.topic }}{% endfor %}\n")
    args = [*hostile_args(tmp_path, "mine.j2"), "--set", "targets.markdown.boundary=s"]
    assert runner.invoke(app, [*args, "render"]).exit_code == 0
    assert (tmp_path / "out" / "persona-alice.md").read_text().strip() == "style"
    mine.write_text("{% for s in persona.sections %}[{{ s.topic }}]{% endfor %}\n")
    status = runner.invoke(app, [*args, "status"])
    assert status.exit_code == 0 and "settings or templates changed" in status.output
    assert runner.invoke(app, [*args, "tick"]).exit_code == 0
    assert (tmp_path / "out" / "persona-alice.md").read_text().strip() == "[style]"
    assert "Alice" not in (tmp_path / "out" / "persona-bob.md").read_text()


def test_an_include_of_a_fifo_is_refused_not_ignored(tmp_path, rendered):
    templates = tmp_path / "templates"
    write(templates / "mine.j2", '{% include "part.j2" ignore missing %}x\n')
    os.mkfifo(templates / "part.j2")
    before = state(tmp_path)
    result = runner.invoke(app, [*hostile_args(tmp_path, "mine.j2"), "render"])
    line = one_line(result.stderr)
    assert result.exit_code == 1 and "mine.j2:1: " in line and "part.j2" in line and "a FIFO" in line, line
    assert state(tmp_path) == before
