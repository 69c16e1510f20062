"""The fixed cost of a render (#23): what a render keeps between runs changes no byte, and the cheap paths keep
their contracts (a lock held elsewhere, an unchanged render's record, settings that cannot change under a memo)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from pydantic import ValidationError

from pipeline import PersonaStore, StageError, load_settings, resolve_target, run_pipeline
from pipeline.fs.lock import lock_path

from ..conftest import REPO, local_settings

FRESH_RENDER = textwrap.dedent("""
    import sys
    from pipeline import PersonaStore, load_settings, run_pipeline
    settings = load_settings(overrides=dict(arg.split("=", 1) for arg in sys.argv[1:]))
    with PersonaStore.from_settings(settings) as store:
        sys.stdout.write(run_pipeline(settings, store=store, dry_run=True)[0].text)
""")


def fresh_render(overrides: dict[str, str]) -> str:
    """The render a new process makes: nothing derived from any earlier render."""
    done = subprocess.run([sys.executable, "-c", FRESH_RENDER, *(f"{k}={v}" for k, v in overrides.items())],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)},
                          check=True)
    return done.stdout


def seed(store: PersonaStore, profile: str) -> None:
    for index in range(60):
        store.add(f"{profile} rule {index}: keep answers short and concrete, {'and precise ' * (index % 7)}",
                  topic=f"topic {index % 6}", tier=("permanent", "long_term", "working")[index % 3])


@pytest.mark.slow
@pytest.mark.parametrize("budget", [4000, 300])  # one persona that fits, one the fair fit must cut
def test_a_render_after_another_tool_rewrote_the_facts_gives_the_bytes_of_a_render_from_scratch(
        database, tmp_path, budget):
    """Another tool rewrites Mnemosyne's table under a warm process: texts change (duplicates appear, lengths
    and token counts change) and our triggers move the change counter. What the process derived from the old
    texts (its memos, its kept rows) must change nothing: the render is the one a new process makes. Two users
    share the database."""
    overrides = {**database.settings(), "injection.file": str(tmp_path / "p.md"), "cap.token_cap": str(budget)}
    renders = {}
    for profile in ("alice", "bob"):
        settings = load_settings(overrides={**overrides, "store.profile": profile})
        with PersonaStore.from_settings(settings) as store:
            seed(store, profile)
            run_pipeline(settings, store=store, dry_run=True)  # the process now holds derived data for both
    database.execute("UPDATE memoria_persona SET content = 'alice rule 1: keep answers short and concrete, ' "
                     "WHERE session_id = 'alice' AND content LIKE 'alice rule 2:%'")  # now a near-duplicate
    database.execute("UPDATE memoria_persona SET content = content || ' Always, always, always.' "
                     "WHERE session_id = 'alice' AND content LIKE 'alice rule 3%'")
    database.execute("UPDATE memoria_persona SET content = 'bob: 日本語のドキュメントは丁寧語で書く' "
                     "WHERE session_id = 'bob' AND content LIKE 'bob rule 4%'")
    for profile in ("alice", "bob"):
        settings = load_settings(overrides={**overrides, "store.profile": profile})
        with PersonaStore.from_settings(settings) as store:
            renders[profile] = run_pipeline(settings, store=store, dry_run=True)[0].text
        assert renders[profile] == fresh_render({**overrides, "store.profile": profile})
    if budget > 1000:  # everything fits: the rewritten texts themselves are there
        assert "Always, always" in renders["alice"] and "丁寧語" in renders["bob"]
    assert "bob" not in renders["alice"] and "alice" not in renders["bob"]


def test_a_render_waits_for_a_lock_held_by_another_process_then_fails_naming_the_file(tmp_path):
    """Another render (another process) holds the target's lock: this one waits its lock_timeout_s, fails with
    the file named, and leaves the persona as it was; a second profile's file is not held up."""
    settings = local_settings(tmp_path, {"pipeline": ["extract", "rank", "render", "cap",
                                                      {"write": {"lock_timeout_s": 0.3}}]})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        run_pipeline(settings, store=store)
        store.add("Uses uv, never pip.", topic="tools")
    path = resolve_target(settings, "markdown").path
    before = path.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from filelock import FileLock; lock = FileLock(sys.argv[1]); "
         "lock.acquire(); print('held', flush=True); sys.stdin.read()", str(lock_path(path))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with PersonaStore.from_settings(settings) as store, pytest.raises(StageError, match="locked by another"):
            run_pipeline(settings, store=store)
        assert path.read_bytes() == before
        other = local_settings(tmp_path, {"injection.file": str(tmp_path / "{profile}.md"), "store.profile": "bob"})
        with PersonaStore.from_settings(other) as store:
            store.add("Prefers German.", topic="language")
            assert run_pipeline(other, store=store)[0].written
    finally:
        holder.communicate("", timeout=30)
    with PersonaStore.from_settings(settings) as store:
        assert run_pipeline(settings, store=store)[0].written
    assert "Uses uv" in path.read_text()
    assert os.stat(lock_path(path)).st_mode & 0o777 == 0o600


def test_an_unchanged_render_is_recorded_and_a_changed_one_too(database, tmp_path):
    """A render that finds its output unchanged still leaves its run (commit without waiting for the disk), so
    the triggers see it; the next change renders and is written. Both backends, two profiles."""
    overrides = {**database.settings(), "injection.file": str(tmp_path / "{profile}.md")}
    for profile in ("alice", "bob"):
        settings = load_settings(overrides={**overrides, "store.profile": profile})
        with PersonaStore.from_settings(settings) as store:
            store.add(f"{profile} answers tersely.", topic="style")
            assert run_pipeline(settings, store=store)[0].written
            again = run_pipeline(settings, store=store)[0]
            assert not again.written and not again.changed
            store.add(f"{profile} uses uv.", topic="tools")
            assert run_pipeline(settings, store=store)[0].written
    rows = database.execute("SELECT session_id, outcome FROM persona_runs ORDER BY id")
    assert rows == [("alice", "written"), ("alice", "unchanged"), ("alice", "written"),
                    ("bob", "written"), ("bob", "unchanged"), ("bob", "written")]


def test_settings_cannot_change_under_what_was_derived_from_them(tmp_path):
    """Settings are frozen, so a fingerprint made once per settings object stays true; a copy with changes is
    new settings with a fingerprint of its own."""
    from pipeline.stages.fingerprint import config_hash

    settings = local_settings(tmp_path)
    with pytest.raises(ValidationError, match="frozen"):
        settings.cap.token_cap = 10  # type: ignore[misc]
    smaller = settings.model_copy(update={"cap": settings.cap.model_copy(update={"token_cap": 10})})
    assert config_hash(settings) != config_hash(smaller)
    assert config_hash(settings) == config_hash(local_settings(tmp_path))
