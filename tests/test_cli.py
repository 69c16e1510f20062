"""The `persona` CLI through typer's runner, plus one real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import NotFoundError, PersonaStore
from pipeline.cli import app

from .conftest import REPO, add_memory, write

runner = CliRunner()


def persona(*args: str, db=None):
    prefix = ["--db", str(db)] if db is not None else []
    return runner.invoke(app, [*prefix, *args])


def test_add_list_reinforce_demote_round_trip(db):
    assert persona("add", "Answers tersely.", "--topic", "style", "--tier", "permanent", db=db).exit_code == 0
    listed = persona("list", db=db)
    assert listed.exit_code == 0
    assert listed.stdout.splitlines()[0].split() == ["ID", "TIER", "TOPIC", "REINF", "CONF", "CONTENT"]
    assert "permanent  style" in listed.stdout
    reinforced = persona("reinforce", "1", "--json", db=db)
    assert json.loads(reinforced.stdout)["reinforcement_count"] == 1
    demoted = persona("demote", "1", "--reason", "no longer true", db=db)
    assert "tombstone" in demoted.stdout
    assert json.loads(persona("list", "--json", db=db).stdout) == []


def test_promote_prints_json(db):
    PersonaStore(db).open()  # creates the schema
    add_memory(db, "m1", "Never force-push.", metadata='{"topic": "git"}')
    result = persona("promote", "m1", "--json", db=db)
    data = json.loads(result.stdout)
    assert data["created"] is True and data["fact"]["topic"] == "git"
    again = persona("promote", "m1", db=db)
    assert "already in the persona as #1" in again.stdout


def test_profile_option_scopes_every_command(db):
    persona("add", "x", "--topic", "t", "--profile", "work", db=db)
    assert json.loads(persona("list", "--json", db=db).stdout) == []
    assert len(json.loads(persona("list", "--json", "--profile", "work", db=db).stdout)) == 1


@pytest.mark.parametrize("spelling", [["--session", "work"], ["-s", "work"], ["--session=work"]])
def test_the_old_session_flag_still_names_the_profile_with_one_warning(db, spelling):
    persona("add", "x", "--topic", "t", "-p", "work", db=db)
    persona("add", "y", "--topic", "t", "--profile", "home", db=db)
    result = persona("list", "--json", *spelling, db=db)
    assert [fact["content"] for fact in json.loads(result.stdout)] == ["x"]  # work's, never home's
    assert result.stderr.count("is deprecated; use -") == 1


def test_a_value_that_looks_like_the_old_flag_is_left_alone(db):
    persona("add", "--topic", "t", "--", "--session", db=db)
    assert [fact["content"] for fact in json.loads(persona("list", "--json", db=db).stdout)] == ["--session"]


def test_import_command_reports_counts(db, tmp_path):
    path = write(tmp_path / "facts.yaml", "- {topic: t, content: c}\n")
    assert "1 added" in persona("import", str(path), db=db).stdout
    assert "1 unchanged" in persona("import", str(path), db=db).stdout


def test_domain_error_is_one_line_on_stderr_and_exit_1(db):
    result = persona("reinforce", "99", db=db)
    assert result.exit_code == 1
    assert result.stderr == "error: no persona fact with id 99 in profile 'default'\n"
    assert result.stdout == ""


def test_usage_error_exits_2(db):
    assert persona("reinforce", "not-a-number", db=db).exit_code == 2
    assert persona("no-such-command").exit_code == 2


def test_debug_shows_the_traceback(db):
    result = runner.invoke(app, ["--debug", "--db", str(db), "reinforce", "99"])
    assert result.exit_code == 1
    assert isinstance(result.exception, NotFoundError)


def test_bad_config_is_exit_1_with_every_problem(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKEN_CAP", "1500 tokens")
    result = runner.invoke(app, ["--set", "cap.tokn=1", "config", "show"])
    assert result.exit_code == 1
    assert "2 problems" in result.stderr and "MNEMOSYNE_PERSONA_TOKEN_CAP" in result.stderr


def test_set_value_without_equals_is_an_error():
    result = runner.invoke(app, ["--set", "cap.token_cap", "config", "show"])
    assert result.exit_code == 1
    assert "expected KEY.PATH=VALUE" in result.stderr


def test_config_show_sources(tmp_path, monkeypatch):
    path = write(tmp_path / "p.yaml", "cap:\n  counter: heuristic\n")
    monkeypatch.setenv("MNEMOSYNE_PERSONA_INTERVAL", "9")
    result = runner.invoke(app, ["-c", str(path), "--set", "cap.token_cap=800", "config", "show", "--sources"])
    lines = {line.split(" = ")[0]: line for line in result.stdout.splitlines()}
    assert lines["cap.token_cap"].endswith("# override cap.token_cap")
    assert lines["cap.counter"].endswith(f"# {path}:2")
    assert lines["triggers.interval"].endswith("# env MNEMOSYNE_PERSONA_INTERVAL (legacy)")
    assert lines["store.profile"].endswith("# default")


def test_config_show_json(tmp_path):
    data = json.loads(runner.invoke(app, ["config", "show", "--json", "--sources"]).stdout)
    assert data["settings"]["cap"]["token_cap"] == 1500
    assert data["sources"]["cap.token_cap"] == "default"


CONFIG = """\
# My persona settings.
cap:
  token_cap: 1200   # tuned for a small model
  truncation_note: 'single quoted'

# Injection
injection:
  enabled: true
"""


def test_config_set_keeps_comments_order_and_quoting(tmp_path):
    path = write(tmp_path / "p.yaml", CONFIG)
    result = runner.invoke(app, ["config", "set", "cap.token_cap", "900", "--file", str(path)])
    assert result.exit_code == 0, result.stderr
    assert path.read_text() == CONFIG.replace("1200", "900 ")
    runner.invoke(app, ["config", "set", "triggers.interval", "20", "--file", str(path)])
    assert path.read_text().endswith("  enabled: true\ntriggers:\n  interval: 20\n")


def test_config_set_validates_before_replacing(tmp_path):
    path = write(tmp_path / "p.yaml", CONFIG)
    for key, value, message in [
        ("cap.token_cap", "lots", "valid integer"),
        ("cap.tokn_cap", "5", "did you mean cap.token_cap"),
    ]:
        result = runner.invoke(app, ["config", "set", key, value, "--file", str(path)])
        assert result.exit_code == 1 and message in result.stderr
    assert path.read_text() == CONFIG
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".persona-tmp-")]


def test_config_set_edits_the_env_section(tmp_path):
    path = write(tmp_path / "p.yaml", "default:\n  cap:\n    token_cap: 1000\n")
    runner.invoke(app, ["--env", "staging", "config", "set", "cap.token_cap", "700", "--file", str(path)])
    assert "staging:\n  cap:\n    token_cap: 700\n" in path.read_text()
    shown = runner.invoke(app, ["-c", str(path), "--env", "staging", "config", "show"])
    assert "cap.token_cap = 700" in shown.stdout


def test_config_set_defaults_to_the_last_config_file(tmp_path):
    first = write(tmp_path / "a.yaml", "cap:\n  token_cap: 1\n")
    second = write(tmp_path / "b.yaml", "cap:\n  token_cap: 2\n")
    runner.invoke(app, ["-c", str(first), "-c", str(second), "config", "set", "cap.token_cap", "3"])
    assert "token_cap: 3" in second.read_text() and "token_cap: 1" in first.read_text()


def test_config_init_writes_the_reference_and_refuses_to_overwrite(tmp_path):
    path = tmp_path / "conf" / "persona.yaml"
    assert runner.invoke(app, ["config", "init", str(path)]).exit_code == 0
    assert path.read_text() == (REPO / "config" / "persona.yaml").read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    again = runner.invoke(app, ["config", "init", str(path)])
    assert again.exit_code == 1 and "already exists" in again.stderr


def test_config_init_defaults_to_hermes_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hh"))
    runner.invoke(app, ["config", "init"])
    assert (tmp_path / "hh" / "mnemosyne" / "persona.yaml").exists()


@pytest.mark.parametrize("entry", [["python", "-m", "pipeline"], ["persona"]])
def test_the_cli_runs_as_a_real_process(db, entry):
    command = [sys.executable, "-m", "pipeline"] if entry[0] == "python" else [str(REPO / ".venv" / "bin" / "persona")]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(db.parent)}
    ok = subprocess.run(
        [*command, "--db", str(db), "add", "x", "--topic", "t"], capture_output=True, text=True, env=env
    )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([*command, "--db", str(db), "demote", "5"], capture_output=True, text=True, env=env)
    assert (bad.returncode, bad.stderr) == (1, "error: no persona fact with id 5 in profile 'default'\n")


def test_readme_documents_every_command_and_setting():
    from pipeline import Settings
    from pipeline.config.edit import model_leaves

    readme = (REPO / "README.md").read_text()
    for path, _ in model_leaves(Settings()):
        key = "targets" if path[0] == "targets" else ".".join(path)  # target names are the user's own
        assert f"`{key}`" in readme, f"README lacks setting {key}"
    for name in _command_names(app):
        assert f"`persona {name}" in readme, f"README lacks command persona {name}"


def _command_names(typer_app, prefix=""):
    names = [prefix + (c.name or c.callback.__name__) for c in typer_app.registered_commands]
    for group in typer_app.registered_groups:
        names += _command_names(group.typer_instance, prefix + group.name + " ")
    return names


def test_readme_settings_table_shows_the_real_defaults():
    import re

    from ruamel.yaml import YAML

    from pipeline import Settings
    from pipeline.config.edit import model_leaves

    defaults = {".".join(path): value for path, value in model_leaves(Settings())}
    rows = re.findall(r"^\| `([a-z_.]+)` \| `([^`]*)`", (REPO / "README.md").read_text(), flags=re.MULTILINE)
    checked = 0
    for key, shown in rows:
        if key not in defaults:
            continue
        default = defaults[key]
        if isinstance(default, str | Path):
            assert shown == str(default), key
        else:
            assert YAML(typ="safe").load(shown) == default, key
        checked += 1
    assert checked >= 20
