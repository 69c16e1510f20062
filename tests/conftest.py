"""Shared fixtures and helpers. Every test runs with a clean environment and a private HOME."""

from __future__ import annotations

import hashlib
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, Settings, load_settings

from .support.databases import Db, open_database

REPO = Path(__file__).resolve().parent.parent
# Variables that move a host's folder or home: never the real ones in a test.
HOST_HOMES = frozenset({"HERMES_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked slow run last, in their own order, so every fast test has reported before them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is not None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Captured output holding a lone surrogate (a test of odd ids logs one) is escaped before pytest-xdist sends
    the report to its controller: execnet sends UTF-8 only, and the worker would die with every test it had left."""
    report.sections = [(title, text.encode("utf-8", "backslashreplace").decode("utf-8"))
                       for title, text in report.sections]


class Clock:
    """A clock that moves only when a test moves it (``clock.now += ...``), or by ``step`` at every reading."""

    def __init__(self, start: datetime, step: timedelta = timedelta(0)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 5, 10, 12, 0, tzinfo=UTC))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Clear MNEMOSYNE_*, DYNACONF_* and the hosts' homes (HERMES_HOME, CODEX_HOME...); point HOME, and the
    temporary directory, at the test's own (`persona edit` keeps its files there, and a forget or a profile erase
    removes the profile's from there: under `make test`'s parallel workers, never another test's)."""
    for name in list(os.environ):
        if name.startswith(("MNEMOSYNE_", "DYNACONF_")) or name in HOST_HOMES:
            monkeypatch.delenv(name)
    home, temp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    temp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    """The same test on both backends: a SQLite file, and a schema of its own on the PostgreSQL server."""
    yield from open_database(request.param, tmp_path)


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hermes home, named in HERMES_HOME as Hermes names it to a plugin outside its gateway."""
    made = tmp_path / "hermes"
    made.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(made))
    return made


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mnemosyne.db"


def add_memory(
    db: Path,
    memory_id: str,
    content: str,
    *,
    table: str = "working_memory",
    metadata: str | None = None,
    source: str | None = None,
    importance: float = 0.5,
    session: str = "default",
) -> None:
    """Write a memory the way Mnemosyne would."""
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            f"INSERT INTO {table} (id, content, metadata_json, source, importance, session_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (memory_id, content, metadata, source, importance, session),
        )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def local_settings(tmp_path: Path, overrides: dict[str, Any] | None = None, *, database: Db | None = None,
                   db: str = "m.db", persona: str = "p.md") -> Settings:
    """Settings whose persona file is in ``tmp_path`` and whose store is ``database`` (either backend), else a
    SQLite file in ``tmp_path``; ``overrides`` win (dotted keys)."""
    store = database.settings() if database is not None else {"store.path": str(tmp_path / db)}
    return load_settings(overrides={**store, "injection.file": str(tmp_path / persona), **(overrides or {})})


# -- a store with one fact, compared byte for byte -------------------------------


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    """A database with one fact; its directory is the working directory of `cli`."""
    db = tmp_path / "m.db"
    with PersonaStore(db) as store:
        store.add("Answers tersely.", topic="style")
    return db


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def schema_of(db: Path) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


# -- real processes: `persona` with a memory limit and a timeout, a Python snippet ----


runner = CliRunner()
ENV = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)}


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None, memory_mb: int = 1024,
        timeout: float = 60, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`persona ARGS` as a real process with a clean environment, a memory limit and a timeout."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    base = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO), "TMPDIR": tempfile.gettempdir()}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 1024 * 1024, memory_mb * 1024 * 1024))

    return subprocess.run([sys.executable, "-m", "pipeline", *args], env=base | (env or {}), capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit, cwd=tmp_path, input=stdin)


def failed_cleanly(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The process failed with one line on stderr and no traceback; returns that line."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("Usage:")
             and not line.startswith("Try ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def obeying_file_modes() -> list[str]:
    """A command prefix under which a file's mode binds the child even when the suite runs as root.

    A root child drops only the capabilities that override file modes (CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH), so a mode-000 file or a 0555 directory refuses it as it refuses an ordinary user.
    It keeps its uid, so the checkout and its venv stay readable wherever they sit, a 0700 directory too,
    and the package's lazy imports still load (switching to nobody cut the child off from them there).
    """
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


def python(code: str, *args: str, **popen) -> subprocess.Popen:
    env = ENV | {"HOME": os.environ["HOME"]}
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)
