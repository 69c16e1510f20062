"""Mnemosyne's memory banks: with profile_isolation on, the store follows the bank Mnemosyne itself writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import write

runner = CliRunner()
mnemosyne = pytest.importorskip("mnemosyne", reason="mnemosyne-memory is in the dev extra")

ISOLATED = "memory:\n  mnemosyne:\n    profile_isolation: true\n"


def profile_home(name: str, config: str = ISOLATED) -> Path:
    """A Hermes profile's home, ~/.hermes/profiles/NAME, whose config.yaml sets Mnemosyne's profile_isolation."""
    home = Path.home() / ".hermes" / "profiles" / name
    home.mkdir(parents=True)
    write(home / "config.yaml", config)
    return home


def remember(bank: str, *texts: str) -> tuple[Path, list[str]]:
    """Memories written by Mnemosyne's own BeamMemory into ``bank``, as its Hermes provider does."""
    memory = mnemosyne.Mnemosyne(session_id=f"hermes_{bank}", bank=bank)
    ids = [memory.beam.remember(text, source="preference", importance=0.9) for text in texts]
    return Path(memory.db_path), ids


def persona(home: Path, *args: str):
    result = runner.invoke(app, list(args), env={"HERMES_HOME": str(home)})
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def data(tmp_path, monkeypatch):
    """One Mnemosyne data directory shared by every profile: only the bank keeps them apart."""
    monkeypatch.setenv("MNEMOSYNE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_memories_in_a_bank_are_promotable_counted_and_private(data):
    alice, bob = profile_home("alice"), profile_home("bob")
    alice_db, alice_ids = remember("alice", "Alice indents with tabs.", "Alice writes in British English.")
    bob_db, bob_ids = remember("bob", "Bob wants answers in French.")
    assert alice_db == data / "banks" / "alice" / "mnemosyne.db" != bob_db

    status = persona(alice, "--set", "triggers.interval=2", "status").stdout
    assert (f"database: {alice_db} (Mnemosyne bank alice, profile_isolation on in {alice / 'config.yaml'})"
            in status)
    assert "2+ new working memories since the last render (interval 2)" in status
    interval = next(line for line in status.splitlines() if line.startswith("interval"))
    assert "FIRES" in interval

    persona(alice, "promote", alice_ids[0], "--tier", "permanent")
    persona(bob, "promote", bob_ids[0])
    assert runner.invoke(app, ["promote", alice_ids[1]], env={"HERMES_HOME": str(bob)}).exit_code == 1

    listed = persona(alice, "list").stdout
    assert "Alice indents with tabs." in listed and "Bob" not in listed
    listed = persona(bob, "list").stdout
    assert "Bob wants answers in French." in listed and "Alice" not in listed
    bob_status = json.loads(persona(bob, "status", "--json").stdout)
    assert bob_status["database"].startswith(f"{bob_db} (Mnemosyne bank bob")


def test_mnemosyne_own_config_turns_banks_on(data):
    carol = profile_home("carol", "memory:\n  provider: mnemosyne\n")
    write(data / "config.yaml", "profile_isolation: 'yes'\n")
    db, _ = remember("carol", "Carol likes short answers.")
    status = persona(carol, "status").stdout
    assert f"database: {db} (Mnemosyne bank carol, profile_isolation on in {data / 'config.yaml'})" in status
    assert "1 new working memory since the last render" in status


def test_the_hermes_config_wins_and_banks_are_off_by_default(data):
    dave = profile_home("dave", "memory:\n  mnemosyne:\n    profile_isolation: off\n")
    write(data / "config.yaml", "profile_isolation: true\n")
    erin = profile_home("erin", "memory:\n  provider: mnemosyne\n")
    status = persona(dave, "status").stdout
    assert f"database: {data / 'mnemosyne.db'} (Mnemosyne's database; profile_isolation off)" in status
    (data / "config.yaml").unlink()
    status = persona(erin, "status").stdout
    assert f"database: {data / 'mnemosyne.db'} (Mnemosyne's database; profile_isolation off)" in status


def test_the_default_home_keeps_the_default_bank_and_a_docker_home_its_basename(tmp_path):
    root = Path.home() / ".hermes"
    root.mkdir()
    write(root / "config.yaml", ISOLATED)
    status = persona(root, "status").stdout
    assert f"database: {root / 'mnemosyne' / 'data' / 'mnemosyne.db'} (Mnemosyne bank default" in status
    docker = tmp_path / "opt" / "data"
    docker.mkdir(parents=True)
    write(docker / "config.yaml", ISOLATED)
    status = persona(docker, "status").stdout
    assert f"database: {docker / 'mnemosyne' / 'data' / 'banks' / 'data' / 'mnemosyne.db'} (Mnemosyne bank data" \
        in status


def test_hermes_install_says_which_database(data):
    frank = profile_home("frank")
    said = persona(frank, "hermes", "install", "--hermes-home", str(frank)).stdout
    assert f"database: {data / 'banks' / 'frank' / 'mnemosyne.db'} (Mnemosyne bank frank" in said
    gina = profile_home("gina", "memory:\n  provider: mnemosyne\n")
    said = persona(gina, "hermes", "install", "--hermes-home", str(gina)).stdout
    assert f"database: {data / 'mnemosyne.db'} (Mnemosyne's database; profile_isolation off)" in said
    assert "frank" not in said


def test_an_explicit_database_says_so(data, tmp_path):
    henry = profile_home("henry")
    status = persona(henry, "--db", str(tmp_path / "mine.db"), "status").stdout
    assert f"database: {tmp_path / 'mine.db'} (store.path)" in status
