"""A host's first block in a new process (`pipeline.first_block`): byte for byte the injector's block, answered
with the standard library alone while nothing changed, and by the injector the moment any part of the key moves.

Each call is a real process, as a host's start is, and says which path answered by what it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import PersonaStore

from ..conftest import REPO
from .test_deliver import A_RULE, ALICE, B_RULE, BOB, FAST_MODULES, HEAVY, World, _world

CALL = """
import json, sys
from pipeline import first_block
block = first_block(**json.loads(sys.argv[1]))
print(json.dumps({"block": block, "modules": sorted(sys.modules)}))
"""
FULL = """
import json, sys
from pathlib import Path
from pipeline import PersonaInjector, load_settings
from pipeline.inject.views import Reader
args = json.loads(sys.argv[1])
project = args.get("project")
reader = Reader.at(args.get("host"), None if project is None else Path(project))
print(json.dumps({"block": PersonaInjector(load_settings(), profile=args.get("profile"), reader=reader).block()}))
"""


def _python(world: World, code: str, args: dict[str, str], env: dict[str, str] | None = None) -> dict[str, object]:
    base = {"PATH": os.environ["PATH"], "HOME": str(world.root / "user"), "PYTHONPATH": str(REPO),
            "MNEMOSYNE_PERSONA_INJECTION__ENABLED": "true"}
    done = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=base | world.env | (env or {}),
                          capture_output=True, text=True, timeout=60, cwd=world.root, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _fast(answer: dict[str, object]) -> bool:
    return not any(str(module).split(".")[0] in HEAVY for module in answer.get("modules", []))  # type: ignore[union-attr]


def _settled(world: World, args: dict[str, str], env: dict[str, str] | None = None) -> tuple[str, dict[str, object]]:
    """The injector's block, then the first block of calls until one is answered from the snapshot (a call that
    rendered is not recorded: at most three)."""
    full = _python(world, FULL, args, env)["block"]
    for _ in range(3):
        answer = _python(world, CALL, args, env)
        if _fast(answer):
            return str(full), answer
    raise AssertionError(f"{args}: never answered from the snapshot")


READERS = {
    "alice, nobody in particular": {},
    "alice in project a": {"host": "claude-code", "project": "a"},
    "alice in project b": {"host": "claude-code", "project": "b"},
    "bob in project a": {"profile": "bob", "host": "claude-code", "project": "a"},
}


@pytest.fixture
def world(tmp_path: Path) -> World:
    return _world(tmp_path, "home config and its local twin")


@pytest.mark.parametrize("reader", READERS)
def test_the_first_block_is_the_injectors_block_and_then_needs_only_the_standard_library(world: World, reader):
    args = {key: (str(world.projects[value]) if key == "project" else value) for key, value in READERS[reader].items()}
    full, fast = _settled(world, args)
    assert fast["block"] == full and full
    ours = {module for module in fast["modules"] if str(module).startswith("pipeline")}  # type: ignore[union-attr]
    assert ours <= {*FAST_MODULES, "pipeline.inject", "pipeline.inject.first_block"}
    shown = str(fast["block"])
    if args.get("profile") == "bob":
        assert BOB in shown and ALICE not in shown and A_RULE not in shown
    else:
        assert ALICE in shown and BOB not in shown
        assert (A_RULE in shown) == args.get("project", "").endswith("/a")
        assert (B_RULE in shown) == args.get("project", "").endswith("/b")


def test_a_new_fact_a_config_edit_or_a_moved_remote_each_reach_the_next_first_block(world: World):
    args = {"host": "claude-code", "project": str(world.projects["a"])}
    _settled(world, args)
    with PersonaStore(world.db, profile="alice") as store:
        store.add("Writes commit messages in English.", topic="git")  # the API renders nothing: the read does
    after_add = _python(world, CALL, args)
    assert not _fast(after_add) and "Writes commit messages in English." in str(after_add["block"])
    full, fast = _settled(world, args)
    assert fast["block"] == full
    (world.home / "mnemosyne" / "persona.local.yaml").write_text("injection:\n  header: '# Edited header'\n")
    edited = _python(world, CALL, args)
    assert not _fast(edited) and str(edited["block"]) == str(_python(world, FULL, args)["block"])
    config = world.projects["a"] / ".git" / "config"
    config.write_text(config.read_text().replace("me/a.git", "me/b.git"))  # project a now is b's checkout
    moved = _python(world, CALL, args)
    assert not _fast(moved) and B_RULE in str(moved["block"]) and A_RULE not in str(moved["block"])


def test_an_environment_change_alone_sends_it_to_the_injector(world: World):
    args = {"host": "claude-code", "project": str(world.projects["a"])}
    _settled(world, args)
    as_bob = _python(world, CALL, args, env={"MNEMOSYNE_PERSONA_STORE__PROFILE": "bob"})
    assert not _fast(as_bob) and BOB in str(as_bob["block"]) and ALICE not in str(as_bob["block"])


def test_a_forget_leaves_no_first_block_holding_the_text(world: World):
    args = {"host": "claude-code", "project": str(world.projects["a"])}
    _settled(world, args)
    with PersonaStore(world.db, profile="alice") as store:
        fact = next(fact for fact in store.list() if fact.content == A_RULE)
    assert world.run("forget", str(fact.id), "--profile", "alice").code == 0
    kept = [path for path in world.db.parent.rglob("*") if path.is_file() and A_RULE.encode() in path.read_bytes()]
    assert not [path for path in kept if ".persona-delivered" in str(path)]
    after = _python(world, CALL, args)
    assert A_RULE not in str(after["block"]) and ALICE in str(after["block"])
