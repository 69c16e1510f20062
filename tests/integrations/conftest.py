"""Fixtures of the integrations' tests: the Hermes plugin in a home, and the MCP client's event loop."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline import PersonaStore
from pipeline.integrations.hermes_binding import hermes_settings
from pipeline.integrations.hermes_plugin import PersonaPlugin


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def plugin(home: Path) -> Iterator[PersonaPlugin]:
    """The general plugin, in the module's own Hermes ``home``."""
    made = PersonaPlugin()
    yield made
    made.close()


@pytest.fixture
def two_users(hermes_home: Path) -> Callable[[str, str], Path]:
    """Seeds the home's store, as Hermes' settings name it, with one fact for its user and one for bob (the
    other user of the same database); returns the home."""

    def seed(fact: str, bobs_fact: str) -> Path:
        (hermes_home / "memory").mkdir()
        settings = hermes_settings(hermes_home)
        with PersonaStore.from_settings(settings) as store:
            store.add(fact, topic="style")
        with PersonaStore.from_settings(settings, profile="bob") as bob:
            bob.add(bobs_fact, topic="music")
        return hermes_home

    return seed
