"""Fixtures of the store's tests: an opened store on each backend, and the real PostgreSQL server alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import PersonaStore

from ..support.databases import Db, open_database


@pytest.fixture
def store(database: Db) -> Iterator[PersonaStore]:
    """An opened store on each backend (the test runs on both)."""
    with database.store() as opened:
        opened.open()  # creates the schema that tests write into
        yield opened


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[Db]:
    """A schema of its own on the real PostgreSQL server, for what only a server has."""
    yield from open_database("postgresql", tmp_path)
