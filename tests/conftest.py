"""Shared fixtures. Every test runs with a clean environment and a private HOME."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pipeline import PersonaStore, Settings, load_settings

from .databases import Db, open_database

REPO = Path(__file__).resolve().parent.parent


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
    """Clear MNEMOSYNE_*, HERMES_HOME and DYNACONF_*; point HOME at a temp dir."""
    for name in list(os.environ):
        if name.startswith(("MNEMOSYNE_", "DYNACONF_")) or name == "HERMES_HOME":
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    """The same test on both backends: a SQLite file, and a schema of its own on the PostgreSQL server."""
    yield from open_database(request.param, tmp_path)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mnemosyne.db"


@pytest.fixture
def store(db: Path) -> PersonaStore:
    with PersonaStore(db) as opened:
        opened.open()  # creates the schema that tests write into
        yield opened


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


def local_settings(tmp_path: Path, overrides: dict[str, Any] | None = None, *, db: str = "m.db",
                   persona: str = "p.md") -> Settings:
    """Settings whose database and persona file are in ``tmp_path``; ``overrides`` win (dotted keys)."""
    return load_settings(overrides={"store.path": str(tmp_path / db), "injection.file": str(tmp_path / persona),
                                    **(overrides or {})})


@pytest.fixture
def settings_for(tmp_path: Path):
    """Settings pointing every path into tmp_path."""

    def make(**overrides: Any) -> Settings:
        return local_settings(tmp_path, overrides, db="mnemosyne.db", persona="persona.md")

    return make
