"""Git as git reads it (issue 48 point 6): the remote through the files a config includes, each file read without
blocking and only if it is a regular file, with a deadline. A FIFO, a socket or a git that never answers means no
project identity (the project is the directory), never a hang: the SessionStart hook, a real process, returns and
prints no project's facts. Every file git consulted is noted for a recording (the fast path's key), and the
in-process memo of remotes moves with any of them. Two profiles, two projects; with git on PATH and without."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, inputs
from pipeline.cli import app
from pipeline.fs.projects import project_of

from ..conftest import cli, write

runner = CliRunner()
ALICE, A_RULE, B_RULE, BOB = "Answers tersely.", "Formats with biome here.", "Tabs, never spaces, here.", "Bob codes."
REMOTE = '[remote "origin"]\n\turl = git@github.com:me/{name}.git\n'
PATHS = {"with git": None, "without git": str(Path(sys.executable).parent)}


@pytest.fixture(params=list(PATHS))
def git_on_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if PATHS[request.param] is not None:
        monkeypatch.setenv("PATH", PATHS[request.param])
    return str(request.param)


def checkout(top: Path, config: str) -> Path:
    """A repository as git leaves one: .git/HEAD, objects/, refs/ and config."""
    write(top / ".git" / "HEAD", "ref: refs/heads/main\n")
    for folder in ("objects", "refs"):
        (top / ".git" / folder).mkdir()
    write(top / ".git" / "config", "[core]\n\trepositoryformatversion = 0\n" + config)
    return top


def identity(directory: Path) -> str:
    """The directory's project identity, or a failure when the look does not return (a hang fails, never waits)."""
    found: list[str] = []
    worker = threading.Thread(target=lambda: found.append(project_of(directory).identity), daemon=True)
    worker.start()
    worker.join(30)
    assert found, f"the project of {directory} was not found in 30 s: it hung"
    return found[0]


# -- the remote in an included file ------------------------------------------------------------------------------

def test_a_remote_in_an_included_file_is_the_projects_remote(tmp_path, git_on_path):
    shared = write(tmp_path / "shared" / "a.gitconfig", REMOTE.format(name="a"))
    a = checkout(tmp_path / "a", f"[include]\n\tpath = {shared}\n")  # absolute
    b = checkout(tmp_path / "b", "[include]\n\tpath = ../../b.gitconfig\n")  # beside the including file
    write(tmp_path / "b.gitconfig", REMOTE.format(name="b"))
    c = checkout(tmp_path / "c", "[include]\n\tpath = ~/c.gitconfig\n\tpath = missing.gitconfig\n")
    write(Path.home() / "c.gitconfig", "[include]\n\tpath = nested.gitconfig\n")  # an include inside an include
    write(Path.home() / "nested.gitconfig", REMOTE.format(name="c"))
    assert [identity(top / "src") for top in (a, b, c)] == ["github.com/me/a", "github.com/me/b", "github.com/me/c"]


def test_a_remote_the_config_gives_after_an_include_is_the_one_git_reads(tmp_path, git_on_path):
    write(tmp_path / "old.gitconfig", REMOTE.format(name="old"))
    top = checkout(tmp_path / "a", "[include]\n\tpath = ../../old.gitconfig\n" + REMOTE.format(name="a"))
    assert identity(top) == "github.com/me/old"  # the include comes first: its origin is git's first


def test_an_include_if_gitdir_is_followed_by_git(tmp_path):
    write(tmp_path / "work.gitconfig", REMOTE.format(name="work"))
    top = tmp_path / "a"
    checkout(top, f'[includeIf "gitdir:{top}/.git"]\n\tpath = ../../work.gitconfig\n')
    other = checkout(tmp_path / "b", f'[includeIf "gitdir:{top}/.git"]\n\tpath = ../../work.gitconfig\n')
    assert (identity(top), identity(other)) == ("github.com/me/work", str(other))


def test_a_change_to_an_included_file_is_seen_in_the_same_process(tmp_path, git_on_path):
    included = write(tmp_path / "remote.gitconfig", REMOTE.format(name="a"))
    top = checkout(tmp_path / "a", "[include]\n\tpath = ../../remote.gitconfig\n\tpath = ../../later.gitconfig\n")
    assert identity(top) == "github.com/me/a"
    included.write_text(REMOTE.format(name="moved"))
    assert identity(top) == "github.com/me/moved"
    included.unlink()
    assert identity(top) == str(top)
    write(tmp_path / "later.gitconfig", REMOTE.format(name="later"))  # a missing include that appears
    assert identity(top) == "github.com/me/later"


def test_project_facts_land_in_the_project_the_included_remote_names(tmp_path, git_on_path):
    projects = {}
    for name in ("a", "b"):
        write(tmp_path / f"{name}.gitconfig", REMOTE.format(name=name))
        projects[name] = checkout(tmp_path / name, f"[include]\n\tpath = ../../{name}.gitconfig\n")
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    for name, text in (("a", A_RULE), ("b", B_RULE)):
        done = runner.invoke(app, [*base, "add", text, "--topic", "format", "--project", str(projects[name])])
        assert done.exit_code == 0, done.output
        assert f"project github.com/me/{name})" in done.stdout.splitlines()[0]
    with PersonaStore(tmp_path / "m.db") as store:
        assert {fact.content: fact.scope for fact in store.list()} == {
            A_RULE: "project:github.com/me/a", B_RULE: "project:github.com/me/b"}


# -- the files git consulted are noted, and key the memo ------------------------------------------------------------

def test_a_recording_notes_every_file_the_remote_was_read_from_or_looked_for(tmp_path, git_on_path):
    included = write(tmp_path / "remote.gitconfig", REMOTE.format(name="a"))
    top = checkout(tmp_path / "a", "[include]\n\tpath = ../../remote.gitconfig\n\tpath = absent.gitconfig\n")
    for _ in range(2):  # the second look answers from the memo: it notes the same files
        with inputs.recording() as recorder:
            assert project_of(top).identity == "github.com/me/a"
        noted = {os.path.normpath(subject) for kind, subject in recorder.entries if kind == "file"}
        assert {str(top / ".git" / "config"), str(included), str(top / ".git" / "absent.gitconfig")} <= noted
        assert recorder.unusable is None and inputs.holds(recorder.entries)
    included.write_text(REMOTE.format(name="moved"))
    assert not inputs.holds(recorder.entries)


# -- FIFOs, sockets and a git that never answers: no identity, never a hang ------------------------------------------

def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


@contextmanager
def socket_at(path: Path) -> Iterator[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(path))
        yield path


def _config_fifo(top: Path) -> None:
    write(top / ".git" / "HEAD", "ref: refs/heads/main\n")
    fifo(top / ".git" / "config")


def _commondir_fifo(top: Path) -> None:
    """A linked worktree whose commondir is a FIFO."""
    main = checkout(top.parent / f"{top.name}-main", REMOTE.format(name="a"))
    worktree = main / ".git" / "worktrees" / "w"
    write(worktree / "HEAD", "ref: refs/heads/w\n")
    fifo(worktree / "commondir")
    write(top / ".git", f"gitdir: {worktree}\n")


def _dot_git_fifo(top: Path) -> None:
    fifo(top / ".git")


def _head_fifo(top: Path) -> None:
    write(top / ".git" / "config", REMOTE.format(name="a"))
    fifo(top / ".git" / "HEAD")


def _include_fifo(top: Path) -> None:
    fifo(top.parent / f"{top.name}.gitconfig")
    checkout(top, f"[include]\n\tpath = ../../{top.name}.gitconfig\n" + REMOTE.format(name="a"))


def _include_if_fifo(top: Path) -> None:
    fifo(top.parent / f"{top.name}.gitconfig")
    checkout(top, f'[includeIf "gitdir:{top}/.git"]\n\tpath = ../../{top.name}.gitconfig\n' + REMOTE.format(name="a"))


def _config_too_large(top: Path) -> None:
    checkout(top, REMOTE.format(name="a") + "# padding\n" * 100_001)


UNREADABLE: dict[str, Callable[[Path], None]] = {
    "a FIFO at .git/config": _config_fifo, "a FIFO at .git/commondir": _commondir_fifo,
    "a FIFO at .git": _dot_git_fifo, "a FIFO at .git/HEAD": _head_fifo, "an included FIFO": _include_fifo,
    "an includeIf's FIFO": _include_if_fifo, "a config over the size limit": _config_too_large,
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_a_repository_file_that_is_no_regular_file_means_no_identity(tmp_path, git_on_path, case):
    top = tmp_path / "a"
    UNREADABLE[case](top)
    assert identity(top / "src" if (top / "src").is_dir() else top) == str(top)


def test_a_socket_at_git_config_means_no_identity(tmp_path, git_on_path):
    top = tmp_path / "a"
    write(top / ".git" / "HEAD", "ref: refs/heads/main\n")
    with socket_at(top / ".git" / "config"):
        assert identity(top) == str(top)


def test_a_fifo_in_the_users_own_git_config_holds_no_look(tmp_path):
    """git reads no system or global config for a remote: a FIFO at ~/.gitconfig would have held it."""
    fifo(Path.home() / ".gitconfig")
    assert identity(checkout(tmp_path / "a", REMOTE.format(name="a"))) == "github.com/me/a"


@pytest.mark.slow
def test_a_git_that_never_answers_means_no_identity(tmp_path, monkeypatch):
    """A git stuck on a dead mount: its answer is given up after its timeout, and the project is the directory."""
    fake = write(tmp_path / "bin" / "git", "#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    top = checkout(tmp_path / "a", REMOTE.format(name="a"))
    assert identity(top) == str(top)


# -- the SessionStart hook, a real process ------------------------------------------------------------------------

def _store(db: Path) -> None:
    with PersonaStore(db, profile="alice") as store:
        store.add(ALICE, topic="style")
        store.add(A_RULE, topic="format", scope="project:github.com/me/a")
        store.add(B_RULE, topic="format", scope="project:github.com/me/b")
    with PersonaStore(db, profile="bob") as store:
        store.add(BOB, topic="code", scope="project:github.com/me/a")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["a FIFO at .git/config", "a FIFO at .git/commondir", "an included FIFO"])
def test_the_hook_returns_and_shows_no_projects_facts_when_the_repository_holds_a_fifo(tmp_path, git_on_path, case):
    db = tmp_path / "m.db"
    _store(db)
    top = tmp_path / "a"
    UNREADABLE[case](top)
    base = ["--db", str(db), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}", "inject", "--format",
            "claude-code"]
    for profile in ("alice", "bob", "alice"):  # alice twice: the second may be the fast path's answer
        done = cli(tmp_path, *base, "--profile", profile, env={"CLAUDE_PROJECT_DIR": str(top)}, timeout=120)
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout else ""
        assert A_RULE not in shown and B_RULE not in shown and BOB not in shown
        assert (ALICE in shown) == (profile == "alice")
