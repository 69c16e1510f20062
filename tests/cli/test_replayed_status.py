"""`persona status` answered from its last full run (pipeline/deliver.py) while nothing it read has changed: byte
for byte what the full path prints, without pydantic or typer; anything it read changed alone, a record in doubt,
or another global option, and the full path answers again."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline import PersonaStore, load_settings, run_pipeline

from ..conftest import REPO
from ..inject.test_deliver import FAST_MODULES

PROFILES = ("alice", "bob")
CONFIG = "injection:\n  file: ~/personas/{profile}.md\n"
HEAVY = ("pydantic", "typer", "click", "jinja2")


def make_home(tmp_path: Path, config: str | None = CONFIG) -> Path:
    """A home whose default database holds two profiles' facts, each rendered as ``config`` says."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True, exist_ok=True)
    files = []
    if config is not None:
        (home / "persona.yaml").write_text(config.replace("~", str(home)))
        files = [home / "persona.yaml"]
    for profile in PROFILES:
        settings = load_settings(config_files=files or None, overrides={"store.profile": profile})
        settings.store.path.parent.mkdir(parents=True, exist_ok=True)
        with PersonaStore.from_settings(settings) as store:
            store.add(f"{profile} answers tersely.", topic="style")
            run_pipeline(settings, store=store)
    return home


def persona(home: Path, args: list[str], **env: str) -> tuple[tuple[str, str, int], bool]:
    """(stdout, stderr, exit code) of ``python -m pipeline ARGS`` as the console script runs it, and whether the
    fast path answered (it imported nothing heavy)."""
    environment = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO), **env}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "pipeline", *args], capture_output=True,
                          text=True, env=environment, cwd=home / "work", timeout=120, check=False)
    lines = done.stderr.splitlines()
    loaded = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    said = "".join(line + "\n" for line in lines if not line.startswith("import time:"))
    fast = not any(module.split(".")[0] in HEAVY for module in loaded)
    assert not fast or {module for module in loaded if module.startswith("pipeline")} <= FAST_MODULES
    return (done.stdout, said, done.returncode), fast


def records(home: Path) -> Path:
    return home / ".hermes" / "mnemosyne" / "persona-tier" / "records"


def full_answer(home: Path, args: list[str], **env: str) -> tuple[str, str, int]:
    """What the full path answers now: with the records' pointers set aside (and put back after)."""
    pointers, aside = records(home) / "pointers", home.parent / "aside"
    if pointers.exists():
        pointers.rename(aside)
    try:
        answer, fast = persona(home, args, **env)
        assert not fast
    finally:
        if pointers.exists():
            shutil.rmtree(pointers)
        if aside.exists():
            aside.rename(pointers)
    return answer


def settled(home: Path, args: list[str], **env: str) -> tuple[str, str, int]:
    """The answer once the fast path gives it, checked against the full path's now."""
    expected = full_answer(home, args, **env)
    for _ in range(3):
        answer, fast = persona(home, args, **env)
        if fast:
            assert answer == expected
            return answer
    raise AssertionError(f"{args}: never answered by the fast path")


SPELLINGS = [["status"], ["status", "--json"], ["status", "-p", "bob"], ["status", "--profile=alice", "--json"]]


@pytest.mark.parametrize("args", SPELLINGS)
def test_a_replayed_status_says_what_the_full_path_says_and_imports_nothing_heavy(tmp_path, args):
    home = make_home(tmp_path)
    settled(home, ["-c", str(home / "persona.yaml"), *args])


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A home whose status the fast path answers."""
    home = make_home(tmp_path)
    settled(home, status_of_alice(home))
    return home


def status_of_alice(home: Path) -> list[str]:
    return ["-c", str(home / "persona.yaml"), "status", "--profile", "alice"]


def _edit_config(home: Path) -> dict[str, str]:
    with (home / "persona.yaml").open("a") as file:
        file.write("triggers:\n  interval: 9\n")
    return {}


def _local_twin(home: Path) -> dict[str, str]:
    (home / "persona.local.yaml").write_text("cap:\n  token_cap: 700\n")
    return {}


def _default_file(home: Path) -> dict[str, str]:  # a searched path that was missing, now there
    (home / ".hermes" / "mnemosyne" / "persona.yaml").write_text("triggers:\n  daily_sync_hour: 5\n")
    return {}


def _database(home: Path) -> Path:
    return home / ".hermes" / "mnemosyne" / "data" / "mnemosyne.db"


def _memory(home: Path) -> dict[str, str]:  # Mnemosyne writes a working memory: the interval trigger counts it
    with closing(sqlite3.connect(_database(home))) as conn, conn:
        conn.execute("INSERT INTO working_memory (id, content) VALUES ('m-1', 'noted')")
    return {}


def _proposal_decided(home: Path) -> dict[str, str]:
    with PersonaStore(_database(home), profile="alice") as store:
        store.add("alice answers at length.", topic="style")
        for proposal in store.proposals():
            store.dismiss(proposal.id)
    return {}


def _held(home: Path) -> dict[str, str]:  # an agent's write held for approval: status counts it
    with PersonaStore(_database(home), profile="alice") as store:
        store.writer = "tool:mcp"
        store.hold("add", content="alice drinks tea.", topic="food")
    return {}


def _another_tool(home: Path) -> dict[str, str]:
    with closing(sqlite3.connect(_database(home))) as conn, conn:
        conn.execute("UPDATE memoria_persona SET tier = 'permanent' WHERE session_id = 'alice'")
    return {}


CHANGES = {
    "the config file's bytes": _edit_config,
    "its local twin appears": _local_twin,
    "the default config file appears": _default_file,
    "a working memory": _memory,
    "a proposal made and dismissed": _proposal_decided,
    "a write held for approval": _held,
    "another tool's write": _another_tool,
    "an env variable": lambda home: {"MNEMOSYNE_PERSONA_TRIGGERS__INTERVAL": "7"},
    "an env variable in lower case": lambda home: {"mnemosyne_persona_triggers__interval": "7"},
    "a legacy env variable": lambda home: {"MNEMOSYNE_PERSONA_INTERVAL": "8"},
    "the Hermes home": lambda home: {"HERMES_HOME": str(home / "elsewhere")},
}


# Read by no run that names its config file: the fast path may answer, and says what the full path says.
UNREAD = {"the default config file appears"}


@pytest.mark.parametrize("change", CHANGES)
def test_each_input_changed_alone_sends_status_to_the_full_path(recorded, change):
    env = CHANGES[change](recorded)
    args = status_of_alice(recorded)
    answer, fast = persona(recorded, args, **env)
    assert fast == (change in UNREAD)
    assert answer == full_answer(recorded, args, **env)


def test_another_global_option_is_another_request(recorded):
    args = ["-c", str(recorded / "persona.yaml"), "--set", "triggers.interval=3", "status", "--profile", "alice"]
    answer, fast = persona(recorded, args)
    assert not fast and "interval 3" in answer[0]


def test_the_daily_trigger_firing_is_a_deadline_of_the_answer(recorded):
    """Status says whether the daily render is due: the record stands only until the next daily slot."""
    for path in _deliveries(recorded):
        document = json.loads(path.read_text())
        [until] = [state for kind, _, state in document["inputs"] if kind == "until"]
        assert until > datetime.now(UTC).timestamp()
        document["inputs"] = [[kind, subject, 0 if kind == "until" else state] for kind, subject, state in
                              document["inputs"]]
        path.write_text(json.dumps(document))
        path.chmod(0o600)
    assert not persona(recorded, status_of_alice(recorded))[1]


def _deliveries(home: Path) -> list[Path]:
    return [path for path in records(home).rglob("*.json") if "deliveries" in path.parts and path.name != ".listed"]


def _garbage(path: Path) -> None:
    path.write_bytes(b"\xff{not json")


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _wrong_shape(path: Path) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), "inputs": "everything"}))


def _foreign_mode(path: Path) -> None:
    path.chmod(0o644)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path, 0o600)


@pytest.mark.parametrize("spoil", [_garbage, _truncated, _wrong_shape, _foreign_mode, _fifo],
                         ids=lambda spoil: spoil.__name__.strip("_"))
def test_a_record_in_doubt_is_ignored(recorded, spoil):
    for path in _deliveries(recorded):
        spoil(path)
    args = status_of_alice(recorded)
    answer, fast = persona(recorded, args)
    assert not fast and answer == full_answer(recorded, args)


def test_the_record_is_private(recorded):
    for path in _deliveries(recorded):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_two_hermes_profiles_never_read_each_others_record(recorded):
    """The sticky Hermes profile picks another home: its own database, its own record."""
    args = status_of_alice(recorded)
    before = {path: path.read_bytes() for path in _deliveries(recorded)}
    (recorded / ".hermes" / "profiles" / "work").mkdir(parents=True)
    (recorded / ".hermes" / "active_profile").write_text("work\n")
    os.environ["HOME"], home = str(recorded), os.environ["HOME"]
    try:
        settings = load_settings(config_files=[recorded / "persona.yaml"])
    finally:
        os.environ["HOME"] = home
    settings.store.path.parent.mkdir(parents=True)
    with PersonaStore.from_settings(settings) as store:
        store.add("works late.", topic="hours")  # the default profile's: alice's status there reads an empty one
    answer = settled(recorded, args)
    assert "profiles/work/mnemosyne/data/mnemosyne.db" in answer[0]
    assert {path: path.read_bytes() for path in _deliveries(recorded)} == before  # the default home's, untouched
    assert len([path for path in (recorded / ".hermes" / "profiles" / "work").rglob("*.json")
                if "deliveries" in path.parts and path.name != ".listed"]) == 1


def test_a_fifo_among_the_searched_files_does_not_hang_status(recorded):
    os.mkfifo(recorded / "persona.local.yaml", 0o600)
    args = status_of_alice(recorded)
    answer, fast = persona(recorded, args)
    assert not fast and answer == full_answer(recorded, args)
