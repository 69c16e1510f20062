"""Every reader of a template file (loader, render child, settings fingerprint) is confined and cannot block.

Issue 19, paragraph 7: `status` and `tick` fingerprint the templates; they used to open them with a
plain open(), so a FIFO hung them, a symlink to /dev/zero ate memory, and an absolute name escaped
the template directories. Each hostile template is tried through `status`, `tick` and `render` after a
good render, so every command reaches the fingerprint: one clear line, exit 1, nothing written.

User templates themselves run sandboxed, with a time and a memory limit per expression, and their
includes and imports stay inside the template directories, symlinks included (the sections at the end).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, TemplateError, run_pipeline
from pipeline.cli import app

from ..conftest import REPO, cli, failed_cleanly, local_settings, write

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


# -- user templates: the sandbox, and no expression runs away --------------------


HOSTILE_TEMPLATES = {
    "class": ("{{ persona.__class__ }}", "unsafe"),
    "subclasses": ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "unsafe"),
    "globals": ("{{ lipsum.__globals__['os'].popen('id').read() }}", "unsafe"),
    "os": ("{{ os.system('touch /tmp/pwned') }}", "'os' is undefined"),
    "file io": ("{% include '/etc/passwd' %}", "an absolute name"),
    "path escape": ("{% include '../../../../etc/passwd' %}", "stay inside the template directories"),
    "endless loop": ("{% set r = range(99999)|list %}{% for a in r %}{% for b in r %}{% endfor %}{% endfor %}",
                     "longer than 1 s; stopped"),
    "huge output": ("{% for i in range(99999) %}{{ 'x' * 1000 }}{% endfor %}", "output exceeds"),
    "huge range": ("{{ range(10 ** 9) | list }}", "Range too big"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEMPLATES))
def test_hostile_user_templates_are_refused_or_stopped(tmp_path, name):
    source, message = HOSTILE_TEMPLATES[name]
    write(tmp_path / "tpl" / "evil.j2", source)
    settings = local_settings(tmp_path, {
        "injection.file": str(tmp_path / "p.md"),
        "render.template_dirs": [str(tmp_path / "tpl")], "render.timeout_s": 1,
        "targets": {"markdown": {"template": "evil.j2"}},
    })
    with PersonaStore.from_settings(settings) as store:
        store.add("x", topic="t")
        started = time.monotonic()
        with pytest.raises(TemplateError, match=message):
            run_pipeline(settings, store=store)
        assert time.monotonic() - started < 30
    assert not (tmp_path / "p.md").exists() and not Path("/tmp/pwned").exists()


USER_TEMPLATE_ATTACKS = {
    "huge string": "{{ ('x' * 1000000) * 1000 }}",
    "huge list": "{{ ([1] * 300000000) | length }}",
    "huge padding": "{{ 'x'.center(1000000000) }}",
    "huge number": "{{ 7 ** 70000000 }}",
    "nested loops": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "recursive macro": "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(USER_TEMPLATE_ATTACKS))
def test_a_runaway_user_template_is_stopped_per_expression(tmp_path, seeded, name):
    templates = tmp_path / "templates"
    write(templates / "evil.j2", USER_TEMPLATE_ATTACKS[name])
    settings = write(tmp_path / "evil.yaml", f"render:\n  template_dirs: [{templates}]\n  timeout_s: 1\n"
                                            "  max_memory_mb: 256\ntargets:\n  markdown:\n    template: evil.j2\n")
    started = time.monotonic()
    done = cli(tmp_path, "--db", "m.db", "-c", str(settings), "render", memory_mb=2048, timeout=60)
    line = failed_cleanly(done)
    assert "evil.j2" in line and ("stopped" in line or "RecursionError" in line or "memory" in line), line
    assert time.monotonic() - started < 30
    assert not (tmp_path / ".hermes").exists()


# -- includes reach nothing outside the template directories, symlinks included ----


@pytest.mark.parametrize("statement", ['{% include "leak.txt" %}', '{% import "leak.txt" as x %}',
                                       '{% extends "leak.txt" %}', '{% include "sub/leak.txt" %}',
                                       '{% include "../secret.txt" %}'])
def test_includes_stay_inside_the_template_directories_symlinks_included(tmp_path, seeded, statement):
    secret = write(tmp_path / "secret.txt", "TOP SECRET")
    templates = tmp_path / "templates"
    write(templates / "evil.j2", statement)
    (templates / "leak.txt").symlink_to(secret)
    (templates / "sub").symlink_to(tmp_path)
    settings = write(tmp_path / "evil.yaml", f"render:\n  template_dirs: [{templates}]\n"
                                            "targets:\n  markdown:\n    template: evil.j2\n")
    result = runner.invoke(app, ["--db", str(seeded), "-c", str(settings), "--set",
                                 f"injection.file={tmp_path / 'out.md'}", "render", "--stdout"])
    assert result.exit_code == 1 and "TOP SECRET" not in result.stdout + result.stderr
    assert "evil.j2:1: " in result.stderr and "the template directories" in result.stderr


def test_a_template_that_is_itself_a_symlink_out_of_its_directory_is_refused(tmp_path, seeded):
    outside = write(tmp_path / "elsewhere" / "t.j2", "{{ persona.fact_count }}")
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.j2").symlink_to(outside)
    result = runner.invoke(app, ["--db", str(seeded), "--set", f"render.template_dirs=[{templates}]", "--set",
                                 "targets.markdown.template=t.j2", "render", "--dry-run"])
    assert result.exit_code == 1 and "outside the template directories" in result.stderr


def test_a_well_behaved_user_template_renders_in_its_child(tmp_path, seeded):
    templates = tmp_path / "templates"
    write(templates / "mine.j2", "{% for s in persona.sections %}## {{ s.topic }}\n{% for i in s.items %}"
                                 "- {{ i.text }} ({{ i.tier }})\n{% endfor %}{% endfor %}")
    result = runner.invoke(app, ["--db", str(seeded), "--set", f"render.template_dirs=[{templates}]", "--set",
                                 "targets.markdown.template=mine.j2", "render", "--stdout"])
    assert result.exit_code == 0 and result.stdout == "## style\n- Answers tersely. (long_term)\n"
