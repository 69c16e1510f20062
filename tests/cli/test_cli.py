"""The `persona` CLI through typer's runner and as a real process."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import NotFoundError, PersonaStore, load_settings
from pipeline.cli import app

from ..conftest import REPO, add_memory, cli, digest, failed_cleanly, write

runner = CliRunner()


def persona(*args: str, db=None):
    prefix = ["--db", str(db)] if db is not None else []
    return runner.invoke(app, [*prefix, *args])


def test_add_list_reinforce_demote_round_trip(db):
    assert persona("add", "Answers tersely.", "--topic", "style", "--tier", "permanent", db=db).exit_code == 0
    listed = persona("list", db=db)
    assert listed.exit_code == 0
    header = ["ID", "TIER", "TOPIC", "REINF", "CONF", "SCOPE", "WRITER", "CONTENT"]
    assert listed.stdout.splitlines()[0].split() == header
    assert "permanent  style" in listed.stdout and " cli " in listed.stdout
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


# -- config set / init: through a symlink, only onto a regular file, never onto the store or a persona ----


def test_config_set_edits_through_a_symlink_and_keeps_it(tmp_path):
    real = write(tmp_path / "dotfiles" / "persona.yaml", "# mine\ncap:\n  token_cap: 900  # keep\n")
    link = tmp_path / "persona.yaml"
    link.symlink_to(real)
    result = runner.invoke(app, ["config", "set", "cap.token_cap", "700", "--file", str(link)])
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and real.read_text() == "# mine\ncap:\n  token_cap: 700  # keep\n"


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_config_set_and_init_refuse_anything_but_a_regular_file_without_hanging(tmp_path, kind):
    path = tmp_path / "persona.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/null")
    for args in (["config", "set", "cap.token_cap", "700", "--file", str(path)],
                 ["config", "init", str(path), "--force"]):
        line = failed_cleanly(cli(tmp_path, *args, timeout=20))
        assert "not a regular file" in line or "cannot read" in line
    assert path.is_fifo() if kind == "fifo" else path.is_dir() if kind == "directory" else path.is_symlink()


def test_config_edits_never_land_on_the_store_or_a_persona_file(tmp_path, seeded):
    persona = write(tmp_path / "persona.md", "## x\n\n- y\n")
    before = digest(seeded)
    for target in ("m.db", "./m.db-wal", "persona.md"):
        for args in (["config", "set", "cap.token_cap", "700", "--file", target],
                     ["config", "init", target, "--force"]):
            line = failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", "injection.file=persona.md", *args))
            assert "refusing to write" in line
    assert digest(seeded) == before and persona.read_text() == "## x\n\n- y\n"


def test_string_settings_take_text_as_written(tmp_path):
    path = write(tmp_path / "p.yaml", "cap:\n  token_cap: 900\n")
    for key, value in (("injection.header", "# Persona"), ("cap.truncation_note", "[cut]"),
                       ("store.profile", "123"), ("targets.markdown.boundary", "* ")):
        assert runner.invoke(app, ["config", "set", key, value, "--file", str(path)]).exit_code == 0
    settings = load_settings(config_files=[path])
    assert settings.injection.header == "# Persona" and settings.cap.truncation_note == "[cut]"
    assert settings.store.profile == "123" and settings.targets["markdown"].boundary == "* "


def test_config_init_into_an_unwritable_place_is_one_clear_error(tmp_path):
    for target in ("/proc/persona.yaml", "/nonexistent-root/persona.yaml"):
        done = cli(tmp_path, "config", "init", target)
        if os.geteuid() == 0 and target.startswith("/nonexistent"):
            Path(target).unlink(missing_ok=True)
            Path(target).parent.rmdir()
            continue  # root may create directories anywhere
        assert "cannot write" in failed_cleanly(done)


# -- bytes that are not text, terminal escapes, --version ------------------------


def test_undecodable_bytes_in_arguments_and_environment_are_one_clear_error(tmp_path, seeded):
    bad = os.fsdecode(b"\xff\xfe")
    for args in (["add", bad, "--topic", "t"], ["--db", bad, "list"], ["add", "x", "--topic", bad],
                 ["promote", bad]):
        line = failed_cleanly(subprocess.run([sys.executable, "-m", "pipeline", "--db", "m.db", *args],
                                             capture_output=True, text=True, cwd=tmp_path, timeout=60,
                                             env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO),
                                                  "HOME": str(tmp_path)}), code=2)
        assert "not valid UTF-8" in line
    for name in ("MNEMOSYNE_PERSONA_FILE", "MNEMOSYNE_PERSONA_STORE__PROFILE", "HERMES_HOME", "MNEMOSYNE_ENV"):
        line = failed_cleanly(subprocess.run([sys.executable, "-m", "pipeline", "--db", "m.db", "status"],
                                             capture_output=True, text=True, cwd=tmp_path, timeout=60,
                                             env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO),
                                                  "HOME": str(tmp_path), name: bad}))
        assert name in line and "not valid UTF-8" in line


def test_list_never_prints_terminal_escapes(tmp_path, seeded):
    with closing(sqlite3.connect(seeded)) as conn, conn:
        conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES "
                     "('default', 'working', '\x1b]0;pwned\x07topic', 'red \x1b[31mtext\x1b[0m\x07 and \x9b2J')")
    out = runner.invoke(app, ["--db", str(seeded), "list"]).stdout
    assert "red text and 2J" in out and not any(ch in out for ch in "\x1b\x07\x9b")


def test_version_is_printed(tmp_path):
    done = cli(tmp_path, "--version")
    assert done.returncode == 0 and done.stdout.startswith("persona-tier ")


# -- the real process --------------------------------------------------------------


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


# -- logs ------------------------------------------------------------------------


def test_no_fact_text_in_logs_at_info_or_above(tmp_path):
    secret = "Prefers-the-secret-handshake-xyzzy"
    # --debug logs every level to stderr as "persona: LEVEL: message"; only DEBUG may carry fact text.
    base = ["--debug", "--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / 'p.md'}",
            "--set", "injection.enabled=true"]
    runner = CliRunner()
    logged = []
    for args in (["add", secret, "--topic", "t"], ["render"], ["tick", "--force"], ["inject"],
                 ["session", "show", "s1"], ["session", "compact", "s1"], ["retention"], ["status"],
                 ["demote", "1"], ["render"]):
        result = runner.invoke(app, [*base, *args])
        assert result.exit_code == 0, result.stderr
        logged += _records(result.stderr)
    above_debug = [line for line in logged if not line.startswith("persona: DEBUG:")]
    assert above_debug, "nothing was logged above DEBUG; the test would pass vacuously"
    assert any(secret in line for line in logged), "the secret never reached any log; nothing was tested"
    assert not [line for line in above_debug if secret in line]


def _records(stderr: str) -> list[str]:
    """Log records, with the continuation lines of multi-line messages joined to their record."""
    records: list[str] = []
    for line in stderr.splitlines():
        if line.startswith("persona: "):
            records.append(line)
        elif records:
            records[-1] += "\n" + line
    return records


def test_list_shows_a_zero_confidence_as_zero(db):
    """0.0 is a confidence, not a missing one: only NULL falls back to the default."""
    assert persona("add", "Maybe likes green.", "--topic", "colour", "--confidence", "0", db=db).exit_code == 0
    row = persona("list", db=db).stdout.splitlines()[1]
    assert " 0.00 " in row and " 0.70 " not in row
