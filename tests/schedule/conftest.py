"""Fixtures of the schedule's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipeline import PersonaStore, Settings

from ..conftest import Clock


@pytest.fixture
def store(settings: Settings, clock: Clock) -> Iterator[PersonaStore]:
    """An opened store on the module's own ``settings`` (its backend and rules), read on the test clock."""
    with PersonaStore.from_settings(settings, clock=clock) as opened:
        opened.open()  # creates the schema
        yield opened
