"""Fixtures of the pipeline's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import PersonaStore


@pytest.fixture
def store(db: Path) -> Iterator[PersonaStore]:
    """An opened store on the SQLite file ``db``."""
    with PersonaStore(db) as opened:
        opened.open()  # creates the schema that tests write into
        yield opened
