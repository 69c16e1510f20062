"""The hosts' memory files are inputs of a delivery (issue 53): the full path of the SessionStart hook learns what a
host's model saved, and the memory files it read are in the delivery's key, so a new entry reaches the next start
with no cron (the fast path falls back to the full path, which learns), and the fast path answers again after.
Real processes, two profiles and two projects (tests/inject/test_deliver.py's world)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..conftest import write
from .test_deliver import HOOK, World, _world

METRIC, TOX = "Prefers metric units.", "Runs the tests with tox."


def hook(world: World, project: str, *args: str):
    return world.run(*HOOK, *args, env={"CLAUDE_PROJECT_DIR": str(world.projects[project])})


def shown(run) -> str:
    assert run.code == 0, run.stderr
    return str(json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"])


def test_a_new_memory_entry_reaches_the_next_hook_with_no_cron_and_the_fast_path_resumes(tmp_path: Path):
    world = _world(tmp_path, "home config and its local twin")
    for project in ("a", "b"):
        world.delivered(*HOOK, env={"CLAUDE_PROJECT_DIR": str(world.projects[project])})
    write(world.home / "memories" / "USER.md", METRIC)  # Hermes' memory tool saved it
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(world.projects["a"]))
    write(world.root / "user" / ".claude" / "projects" / slug / "memory" / "MEMORY.md", f"- {TOX}\n")
    first = hook(world, "a")
    assert not first.fast and METRIC in shown(first)
    assert TOX not in shown(first)  # Claude Code saved it and loads its own memory: not twice
    assert METRIC in shown(hook(world, "b"))
    again = [hook(world, "a") for _ in range(3)]
    assert any(run.fast for run in again) and all(shown(run) == shown(first) for run in again)
    codex_a = world.run("inject", "--host", "codex", "--project", str(world.projects["a"]))
    codex_b = world.run("inject", "--host", "codex", "--project", str(world.projects["b"]))
    assert TOX in codex_a.stdout.decode() and METRIC in codex_a.stdout.decode()
    assert TOX not in codex_b.stdout.decode()
    # The home's memory is its owner's (store.profile): a start for another profile never learns it into that one.
    bob = shown(hook(world, "b", "--profile", "bob"))
    assert METRIC not in bob and "Bob writes Haskell only." in bob


def test_a_memory_file_it_cannot_read_is_named_and_the_hook_still_answers(tmp_path: Path):
    world = _world(tmp_path, "home config and its local twin")
    bad = world.home / "memories" / "USER.md"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"caf\xe9 au lait")
    done = hook(world, "a")
    assert "Answers tersely." in shown(done)
    assert f"not learned from {bad}" in done.stderr and "UTF-8" in done.stderr
    assert not hook(world, "a").fast  # a run that warned is never replayed: each start names the file again
