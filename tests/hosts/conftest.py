"""Fixtures for the real hosts: a fake model server, a HOME and a project directory of the test's own."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_model import FakeModel
from .hosts import HOSTS, HOSTS_DIR, Host, check


def pytest_report_header() -> list[str]:
    interfaces = sorted(name for _, name in socket.if_nameindex())
    network = "loopback only (a network namespace of its own)" if interfaces == ["lo"] else "the machine's"
    return [f"hosts: {', '.join(map(str, HOSTS))} from {HOSTS_DIR}", f"network: {network}"]


@pytest.fixture
def host(request: pytest.FixtureRequest) -> Host:
    """The host a test module is parametrized with (its id names the version), checked before anything runs:
    a host that is missing or does not start fails the test, with the reason."""
    host: Host = request.param
    check(host)
    return host


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The HOME every process of the test gets (tests/conftest.py made it and points HOME at it)."""
    made = tmp_path / "home"
    made.mkdir(exist_ok=True)
    return made


@pytest.fixture
def project(tmp_path: Path) -> Path:
    made = tmp_path / "project"
    made.mkdir()
    return made
