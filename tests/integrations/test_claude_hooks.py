"""`persona hooks install | remove claude-code`: our SessionStart hook in Claude Code's settings.json, and every
other byte of the user's JSON as they wrote it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import cli, failed_cleanly

runner = CliRunner()
PERSONA = Path(sys.executable).parent / "persona"
SETTINGS = {
    "two spaces": b'{\n  "permissions": {\n    "allow": ["Bash(ls)"]\n  },\n  "model": "opus"\n}\n',
    "four spaces, CRLF": b'{\r\n    "model": "opus",\r\n    "env": {"A": "1"}\r\n}\r\n',
    "tabs, no final newline": b'{\n\t"model": "opus"\n}',
    "one line": b'{"model": "opus", "theme": "dark"}\n',
    "empty object": b"{}\n",
    "other hooks": b'{\n  "hooks": {\n    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]\n  }\n}\n',
    "empty hooks": b'{\n  "hooks": {}\n}\n',
    "a SessionStart of the user's": (b'{\n  "hooks": {\n    "SessionStart": [\n      {\n        "matcher": "startup",\n'
                                     b'        "hooks": [{"type": "command", "command": "echo hi"}]\n      }\n'
                                     b'    ]\n  }\n}\n'),
    "unicode and escapes": '{\n  "name": "Zoë \\u00e9 \\"quoted\\"",\n  "n": -1.5e3\n}\n'.encode(),
}


def hooks(*args: str) -> str:
    result = runner.invoke(app, ["hooks", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def project_settings(tmp_path: Path, data: bytes | None) -> Path:
    path = tmp_path / "project" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    if data is not None:
        path.write_bytes(data)
    return path


def session_start(path: Path) -> list[dict[str, object]]:
    return list(json.loads(path.read_bytes())["hooks"]["SessionStart"])


@pytest.mark.parametrize("kind", sorted(SETTINGS))
def test_install_then_remove_gives_back_the_users_settings_byte_for_byte(tmp_path, kind):
    path = project_settings(tmp_path, SETTINGS[kind])
    hooks("install", "claude-code", "--project", str(tmp_path / "project"))
    installed = json.loads(path.read_bytes())
    ours = session_start(path)[-1]
    assert ours == {"matcher": "startup|resume|clear|compact",
                    "hooks": [{"type": "command", "command": f"{PERSONA} inject --format claude-code"}]}
    before = json.loads(SETTINGS[kind])
    assert {k: v for k, v in installed.items() if k != "hooks"} == {k: v for k, v in before.items() if k != "hooks"}
    assert session_start(path)[:-1] == before.get("hooks", {}).get("SessionStart", [])
    hooks("remove", "claude-code", "--project", str(tmp_path / "project"))
    assert path.read_bytes() == SETTINGS[kind]


@pytest.mark.parametrize("kind", sorted(set(SETTINGS) - {"empty object", "empty hooks"}))
def test_remove_after_the_user_edited_elsewhere_takes_out_only_our_hook(tmp_path, kind):
    """Another edit since install (Claude Code's own, or the user's): our entry and the separator we put before
    it leave; the edit stays."""
    path = project_settings(tmp_path, SETTINGS[kind])
    hooks("install", "claude-code", "--project", str(tmp_path / "project"))
    path.write_bytes(path.read_bytes().replace(b"{", b'{"edited": true, ', 1))
    hooks("remove", "claude-code", "--project", str(tmp_path / "project"))
    assert path.read_bytes() == SETTINGS[kind].replace(b"{", b'{"edited": true, ', 1)


def test_a_missing_settings_file_is_created_private_and_removed_again(tmp_path):
    path = project_settings(tmp_path, None)
    hooks("install", "claude-code", "--project", str(tmp_path / "project"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(session_start(path)) == 1
    hooks("remove", "claude-code", "--project", str(tmp_path / "project"))
    assert not path.exists()


def test_the_user_level_file_is_the_default_and_keeps_its_mode(tmp_path):
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(SETTINGS["two spaces"])
    path.chmod(0o644)
    hooks("install", "claude-code")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and len(session_start(path)) == 1
    assert "already" in hooks("install", "claude-code", "--user") and len(session_start(path)) == 1
    hooks("remove", "claude-code", "--user")
    assert path.read_bytes() == SETTINGS["two spaces"]
    assert "holds no persona hook" in hooks("remove", "claude-code")
    assert not [p for p in path.parent.iterdir() if p.name != "settings.json"]  # no lock or backup beside it


@pytest.mark.parametrize(("data", "message"), [
    (b'{\n  "model": "opus",\n}\n', "line 3 column 1: not valid JSON"),
    (b'["a list"]\n', "not an object"),
    (b'{"hooks": []}\n', "`hooks` is not an object"),
    (b'{"hooks": {"SessionStart": {}}}\n', "`hooks.SessionStart` is not a list"),
    (b'{"a": "\xff"}\n', "not UTF-8"),
])
def test_settings_we_cannot_read_are_refused_and_left_untouched(tmp_path, data, message):
    path = project_settings(tmp_path, data)
    result = runner.invoke(app, ["hooks", "install", "claude-code", "--project", str(tmp_path / "project")])
    assert result.exit_code == 1 and message in result.stderr and str(path) in result.stderr
    assert path.read_bytes() == data


def test_install_as_a_real_process_writes_the_persona_executables_absolute_path(tmp_path):
    project = tmp_path / "project"
    path = project_settings(tmp_path, SETTINGS["one line"])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home")}
    subprocess.run([str(PERSONA), "hooks", "install", "claude-code", "--project", "."], cwd=project, env=env,
                   check=True, capture_output=True, timeout=60)
    command = session_start(path)[-1]["hooks"][0]["command"]  # type: ignore[index]
    assert command == f"{PERSONA} inject --format claude-code" and Path(command.split()[0]).is_absolute()
    subprocess.run([str(PERSONA), "hooks", "remove", "claude-code", "--project", str(project)], env=env,
                   check=True, capture_output=True, timeout=60)
    assert path.read_bytes() == SETTINGS["one line"]


DEEP = "{" + '"a": {' * 5000 + "}" * 5001 + "\n"  # valid JSON, 5,001 objects deep


@pytest.mark.slow
@pytest.mark.parametrize("command", [["hooks", "install", "claude-code"], ["hooks", "remove", "claude-code"]])
def test_a_deeply_nested_settings_file_is_refused_in_one_line_and_left_untouched(tmp_path, command):
    path = tmp_path / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(DEEP)
    line = failed_cleanly(cli(tmp_path, *command))
    assert line.startswith(f"error: {path}, line 1 column ") and "nested more than 64 levels deep" in line, line
    assert path.read_text() == DEEP


@pytest.mark.slow
def test_status_and_targets_check_say_a_deeply_nested_settings_file_is_unreadable_and_go_on(tmp_path):
    path = tmp_path / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(DEEP)
    db = ["--db", str(tmp_path / "m.db")]
    assert cli(tmp_path, *db, "add", "Answers tersely.", "--topic", "style").returncode == 0
    for command in (["status"], ["targets", "check"]):
        done = cli(tmp_path, *db, *command)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        said = [line for line in done.stdout.splitlines() if str(path) in line]
        assert len(said) == 1 and "claude-code hook: cannot check: " in said[0], done.stdout
        assert "nested more than 64 levels deep" in said[0]
    assert "facts: " in cli(tmp_path, *db, "status").stdout  # the rest of status is there


@pytest.mark.slow
def test_a_deeply_nested_mem0_export_is_refused_in_one_line(tmp_path):
    export = tmp_path / "mem0.json"
    export.write_text("[" * 5000 + "]" * 5000)
    line = failed_cleanly(cli(tmp_path, "--db", str(tmp_path / "m.db"), "import", "--from", "mem0", str(export)))
    assert str(export.name) in line and "nested more than 64 levels deep" in line, line
