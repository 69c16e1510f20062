"""A checkout's remote is read as git reads it: quoted values, inline comments, escapes, continuation lines and
deeper-indented lines that are variables of their own. Each file is read by the real git and by our own reader
(used where git is not on PATH), and both must agree; `persona add --project` prints the identity it chose."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.fs.git_config import GitConfigError, parse_git_config
from pipeline.fs.projects import project_of

from ..conftest import write

runner = CliRunner()
GIT = shutil.which("git")
ORIGIN = '[core]\n\tbare = false\n[remote "origin"]\n'
# (what .git/config holds, the project git's reading gives)
CONFIGS = {
    "plain": (ORIGIN + "\turl = https://github.com/acme/shop\n", "github.com/acme/shop"),
    "quoted": (ORIGIN + '\turl = "https://github.com/acme/secret"\n', "github.com/acme/secret"),
    "half quoted": (ORIGIN + '\turl = https://github.com/"acme"/secret.git\n', "github.com/acme/secret"),
    "inline ; comment": (ORIGIN + "\turl = git@github.com:acme/shop.git ; the old one\n", "github.com/acme/shop"),
    "inline # comment": (ORIGIN + "\turl = https://github.com/acme/shop   # mine\n", "github.com/acme/shop"),
    "a quoted ;": (ORIGIN + '\turl = "https://example.com/a;b" ; comment\n', "example.com/a;b"),
    "escapes": (ORIGIN + '\turl = "https://example.com/a\\"b\\\\c"\n', 'example.com/a"b\\c'),
    "continued": (ORIGIN + "\turl = https://github.com/\\\nacme/shop\n", "github.com/acme/shop"),
    "deeper-indented next line": (ORIGIN + "\turl = https://github.com/acme/shop\n\t\tfetch = "
                                  "+refs/heads/*:refs/remotes/origin/*\n", "github.com/acme/shop"),
    "CRLF": ((ORIGIN + "\turl = https://github.com/acme/shop\n").replace("\n", "\r\n"), "github.com/acme/shop"),
    "two urls: the first": (ORIGIN + "\turl = https://github.com/acme/one\n\turl = https://github.com/acme/two\n",
                            "github.com/acme/one"),
    "upstream only": ('[remote "upstream"]\n\turl = https://github.com/acme/up\n', "github.com/acme/up"),
    "origin after another": ('[remote "fork"]\n\turl = https://github.com/me/shop\n' + ORIGIN +
                             "\turl = https://github.com/acme/shop\n", "github.com/acme/shop"),
    "old dotted section": ("[remote.origin]\n\turl = https://github.com/acme/old\n", "github.com/acme/old"),
    "case in the section": ('[REMOTE "origin"]\n\tURL = https://github.com/acme/shop\n', "github.com/acme/shop"),
    "a key on the header line": ('[remote "origin"] url = https://github.com/acme/shop\n', "github.com/acme/shop"),
    "a subsection with a quote": ('[remote "my \\"fork\\""]\n\turl = https://github.com/me/fork\n',
                                  "github.com/me/fork"),
    "a BOM": ("\ufeff" + ORIGIN + "\turl = https://github.com/acme/shop\n", "github.com/acme/shop"),
    "no final newline": (ORIGIN + "\turl = https://github.com/acme/shop", "github.com/acme/shop"),
}
BROKEN = {  # git refuses each of these files: no remote is read from them (the project is the directory)
    "an unknown escape": ORIGIN + '\turl = "https://example.com/\\q"\n',
    "an open quote": ORIGIN + '\turl = "https://example.com/a\n',
    "a bad section": "[remote origin]\n\turl = https://github.com/acme/shop\n",
    "junk": ORIGIN + "\t= https://github.com/acme/shop\n",
}


def checkout(tmp_path: Path, config: str) -> Path:
    top = tmp_path / "checkout"
    (top / ".git").mkdir(parents=True)
    (top / ".git" / "config").write_bytes(config.encode("utf-8"))
    return top


def by_git(config: Path) -> list[tuple[str, str | None]] | None:
    """Every variable of the file as the real git lists it; None when git refuses the file."""
    assert GIT is not None
    done = subprocess.run([GIT, "config", "--file", str(config), "--null", "--list"], capture_output=True,
                          check=False)
    if done.returncode != 0:
        return None
    pairs = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]:
        key, newline, value = item.partition("\n")
        pairs.append((key, value if newline else None))
    return pairs


def by_reader(config: Path) -> list[tuple[str, str | None]] | None:
    try:
        return parse_git_config(config.read_bytes().decode("utf-8", "surrogateescape"))
    except GitConfigError:
        return None


def without_git() -> dict[str, str]:
    """An environment whose PATH holds no git: the reader's turn."""
    return {"PATH": str(Path(sys.executable).parent)}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_remote_is_read_as_git_reads_it_by_git_and_by_our_reader(tmp_path, monkeypatch, name):
    text, identity = CONFIGS[name]
    top = checkout(tmp_path, text)
    assert by_reader(top / ".git" / "config") == by_git(top / ".git" / "config")  # every variable, in order
    assert project_of(top / "src").identity == identity  # git on PATH
    monkeypatch.setenv("PATH", without_git()["PATH"])
    (top / ".git" / "config").write_bytes(text.encode("utf-8") + b"\n")  # a new state: read again, by the reader
    assert project_of(top).identity == identity


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_config_git_refuses_gives_no_remote_by_git_and_by_our_reader(tmp_path, monkeypatch, name):
    top = checkout(tmp_path, BROKEN[name])
    assert by_git(top / ".git" / "config") is None and by_reader(top / ".git" / "config") is None
    assert project_of(top).identity == str(top.resolve())
    monkeypatch.setenv("PATH", without_git()["PATH"])
    (top / ".git" / "config").write_bytes(BROKEN[name].encode("utf-8") + b"\n")
    assert project_of(top).identity == str(top.resolve())


def test_add_project_prints_the_identity_it_chose(tmp_path):
    top = checkout(tmp_path, CONFIGS["quoted"][0])
    done = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "add", "Deploys on Fridays.", "--topic", "deploy",
                               "--project", str(top)])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == "added as #1 (long_term, topic deploy, project github.com/acme/secret)"


def test_git_runs_once_per_state_of_the_config_not_per_look(tmp_path, monkeypatch):
    """A host looks up its directory's project per request (the Hermes plugin at most every 5 s, an MCP server per
    tool call): git runs when the config is new or changed, never for a look at one it has read."""
    assert GIT is not None
    log = tmp_path / "git calls"
    wrapper = write(tmp_path / "bin" / "git", f'#!/bin/sh\necho "$@" >> "{log}"\nexec {GIT} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    top = checkout(tmp_path, CONFIGS["plain"][0])
    assert {project_of(top).identity for _ in range(50)} == {"github.com/acme/shop"}
    assert len(log.read_text().splitlines()) == 1
    (top / ".git" / "config").write_text(CONFIGS["quoted"][0])
    assert project_of(top).identity == "github.com/acme/secret"
    assert len(log.read_text().splitlines()) == 2


PIECES = ['[remote "origin"]', "[remote.up]", '[a "b\\"c"]', "[x]", "url", "URL", " = ", "=", '"', "\\", "\\n",
          "\\t", "\\q", ";", "#", " ", "\t", "\n", "\r\n", "\r", "https://h/x", "a-b", ".", "]", "["]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_our_reader_agrees_with_git_on_any_text_made_of_configs_tricky_pieces(tmp_path, text):
    config = tmp_path / "config"
    config.write_bytes(text.encode("utf-8"))
    assert by_reader(config) == by_git(config), repr(text)
