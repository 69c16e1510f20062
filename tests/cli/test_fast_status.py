"""`persona status` run without typer says what typer's command says, byte for byte, and imports no typer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import PersonaStore, load_settings, run_pipeline

from .. import docs_reference
from ..conftest import REPO
from .test_fast_help import LOADED, PERSONA


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose default database holds two profiles' facts, each rendered into its own file."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / "work").mkdir(parents=True)
    (home / "persona.yaml").write_text("injection:\n  file: ~/personas/{profile}.md\n")
    for profile in ("alice", "bob"):
        settings = load_settings(config_files=[home / "persona.yaml"], overrides={"store.profile": profile})
        settings.store.path.parent.mkdir(parents=True, exist_ok=True)
        with PersonaStore.from_settings(settings) as store:
            store.add(f"{profile} answers tersely.", topic="style")
            store.add(f"{profile} uses uv, never pip.", topic="tools")
            run_pipeline(settings, store=store)
    return home


def run(home: Path, argv: list[str], args: list[str], **env: str) -> tuple[str, str, int]:
    environment = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO), **env}
    done = subprocess.run([*argv, *args], capture_output=True, text=True, env=environment, cwd=home / "work",
                          timeout=120, check=False)
    return done.stdout, done.stderr, done.returncode


def typers(home: Path, args: list[str], **env: str) -> tuple[str, str, int]:
    return run(home, [sys.executable, "-c", docs_reference.TYPER_PERSONA], args, **env)


CONFIG = ["-c", "~/persona.yaml"]
SPELLINGS = [
    [*CONFIG, "status"],
    [*CONFIG, "status", "--json"],
    [*CONFIG, "status", "--profile", "bob"],
    [*CONFIG, "status", "-p", "alice", "--json"],
    [*CONFIG, "status", "--profile=bob"],
    ["--config=~/persona.yaml", "--set", "cap.token_cap=900", "--set", "store.profile=bob", "status"],
    [*CONFIG, "--env", "nowhere", "--debug", "status"],
    ["status"],  # the default file belongs to no one here: each target says it has no persona yet
    [*CONFIG, "--db", "~/other.db", "status"],  # a database that does not exist: an error, exit 1
    [*CONFIG, "--set", "cap.token_cap=-1", "status"],  # invalid settings: an error, exit 1
    [*CONFIG, "status", "--profile", "alice", "-p", "bob"],  # typer's from here on
    [*CONFIG, "status", "--session", "bob"],
    [*CONFIG, "status", "--profile", "--json"],
    [*CONFIG, "status", "extra"],
    [*CONFIG, "status", "--help"],
    [*CONFIG, "status", "--", "--json"],
]


@pytest.mark.parametrize("args", SPELLINGS, ids=" ".join)
def test_status_says_what_typers_command_says(home, args):
    args = [arg.replace("~", str(home)) for arg in args]
    assert run(home, [str(PERSONA)], args) == typers(home, args)


def test_an_open_proposal_and_an_installed_hook_are_said_as_typer_says_them(home):
    """The two parts that reach past what status imports alone (the proposal lines, the hook's text)."""
    config = [*CONFIG[:1], str(home / "persona.yaml")]
    assert run(home, [str(PERSONA)], [*config, "hooks", "install", "claude-code", "--user"])[2] == 0
    added = run(home, [str(PERSONA)], [*config, "add", "alice answers tersely, without a summary of what was just "
                                       "said.", "--topic", "style", "-p", "alice"])
    assert "persona review accept" in added[0]
    run(home, [str(PERSONA)], [*config, "status", "-p", "alice"])  # the hook's view of the new fact, rendered
    for args in ([*config, "status", "-p", "alice"], [*config, "status", "-p", "alice", "--json"]):
        ours = run(home, [str(PERSONA)], args)
        assert ours == typers(home, args)
        assert "claude-code hook" in ours[0] and "merge" in ours[0]


@pytest.mark.parametrize("args", [["status"], ["status", "--json"], ["--debug", "status", "-p", "bob"]])
def test_status_imports_no_typer(home, args):
    modules = home / "modules.txt"
    _, _, code = run(home, [sys.executable, "-c", LOADED], [*CONFIG[:1], str(home / "persona.yaml"), *args,
                                                             str(modules)])
    assert code == 0
    loaded = set(modules.read_text().split())
    assert "pipeline.cli.status_view" in loaded
    assert not {module for module in loaded if module.startswith(("typer", "click", "pipeline.cli.common"))}


def test_a_stdout_that_cannot_write_utf8_goes_to_typer(home):
    args = [*CONFIG[:1], str(home / "persona.yaml"), "status", "-p", "bob"]
    assert run(home, [str(PERSONA)], args, PYTHONIOENCODING="ascii") == typers(home, args,
                                                                             PYTHONIOENCODING="ascii")
