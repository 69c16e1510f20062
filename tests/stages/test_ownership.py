"""A whole file persona-tier writes is replaced only when its bytes are a render of ours: a persona the user wrote
by hand (the existing tier told its users to) survives render, tick and a host's render-before-read, byte for
byte, until the user takes it over or overwrites it on purpose."""

from __future__ import annotations

import os
import threading

import pytest
from typer.testing import CliRunner

from pipeline import PersonaInjector, PersonaStore, StageError, load_settings, run_pipeline, tick
from pipeline.cli import app
from pipeline.fs.lock import file_lock, lock_path

from ..conftest import digest, local_settings, write

runner = CliRunner()
HANDWRITTEN = "# My persona\n\n## style\n\n- I like short answers.\n"


def base(tmp_path) -> list[str]:
    return ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / 'persona.md'}"]


def test_a_hand_written_persona_survives_render_and_tick_and_the_message_says_how_to_go_on(tmp_path):
    persona = write(tmp_path / "persona.md", HANDWRITTEN)
    before = digest(persona)
    assert runner.invoke(app, [*base(tmp_path), "add", "Prefers tea.", "--topic", "general"]).exit_code == 0
    for command in (["render"], ["tick"], ["tick", "--force"]):
        done = runner.invoke(app, [*base(tmp_path), *command])
        assert done.exit_code == 1, (command, done.output)
        assert f"{persona} holds text persona-tier did not write" in done.stderr
        assert f"`persona adopt {persona}`" in done.stderr and "persona render --force" in done.stderr
        assert digest(persona) == before, command
    assert list(tmp_path.glob("persona.md.before-persona-tier-*")) == []


def test_a_hosts_render_before_read_leaves_it_and_injects_the_users_own_persona(tmp_path):
    persona = write(tmp_path / "persona.md", HANDWRITTEN)
    settings = local_settings(tmp_path, {"injection.enabled": True}, persona="persona.md")
    with PersonaStore.from_settings(settings) as store:
        store.add("Prefers tea.", topic="general")
    injector = PersonaInjector(settings)
    try:
        block = injector.block()
    finally:
        injector.close()
    assert "I like short answers." in block and "Prefers tea." not in block
    assert persona.read_text() == HANDWRITTEN


def test_render_force_overwrites_and_keeps_a_private_copy_of_the_old_bytes(tmp_path):
    persona = write(tmp_path / "persona.md", HANDWRITTEN)
    runner.invoke(app, [*base(tmp_path), "add", "Prefers tea.", "--topic", "general"])
    done = runner.invoke(app, [*base(tmp_path), "render", "--force"])
    assert done.exit_code == 0, done.output
    assert "Prefers tea." in persona.read_text()
    [copy] = tmp_path.glob("persona.md.before-persona-tier-*")
    assert copy.read_text() == HANDWRITTEN and os.stat(copy).st_mode & 0o777 == 0o600
    again = runner.invoke(app, [*base(tmp_path), "add", "Answers tersely.", "--topic", "style"])
    assert again.exit_code == 0 and runner.invoke(app, [*base(tmp_path), "render"]).exit_code == 0  # ours now
    assert "Answers tersely." in persona.read_text()


def test_a_render_of_ours_edited_by_hand_is_the_users_now(tmp_path):
    settings = local_settings(tmp_path, persona="persona.md")
    with PersonaStore.from_settings(settings) as store:
        store.add("Prefers tea.", topic="general")
        run_pipeline(settings, store=store)
        persona = tmp_path / "persona.md"
        persona.write_text(persona.read_text() + "- A line I added myself.\n")
        edited = digest(persona)
        store.add("Answers tersely.", topic="style")
        with pytest.raises(StageError, match="holds text persona-tier did not write"):
            run_pipeline(settings, store=store)
        with pytest.raises(StageError, match="holds text persona-tier did not write"):
            tick(settings, store=store)
    assert digest(persona) == edited


def test_an_empty_or_missing_file_and_our_own_earlier_render_are_ours_to_replace(tmp_path):
    settings = local_settings(tmp_path, persona="persona.md")
    persona = write(tmp_path / "persona.md", "")
    with PersonaStore.from_settings(settings) as store:
        store.add("Prefers tea.", topic="general")
        run_pipeline(settings, store=store)  # an empty file holds nothing to lose
        first = persona.read_text()
        store.add("Answers tersely.", topic="style")
        run_pipeline(settings, store=store)
        persona.write_text(first)  # a backup of one of our own renders, put back
        store.add("Uses uv.", topic="tools")
        run_pipeline(settings, store=store)
    assert "Uses uv." in persona.read_text()


def test_a_hand_written_cursor_rule_survives_its_presets_render(tmp_path):
    project = tmp_path / "project"
    rule = write(project / ".cursor" / "rules" / "persona.mdc", "---\nalwaysApply: true\n---\n- My own rule.\n")
    config = write(tmp_path / "persona.yaml", "")
    cli = ["--db", str(tmp_path / "m.db"), "-c", str(config)]
    assert runner.invoke(app, [*cli, "add", "Prefers tea.", "--topic", "general"]).exit_code == 0
    added = runner.invoke(app, [*cli, "targets", "add", "cursor", "--project", str(project)])
    assert added.exit_code == 0, added.output
    done = runner.invoke(app, [*cli, "render"])
    assert done.exit_code == 1 and f"{rule} holds text persona-tier did not write" in done.stderr
    assert rule.read_text() == "---\nalwaysApply: true\n---\n- My own rule.\n"


def test_another_profiles_render_and_a_pruned_log_still_prove_a_file_ours(tmp_path):
    """The newest run of every file outlives store.keep_runs, and any profile's render counts as ours."""
    settings = local_settings(tmp_path, {"store.keep_runs": 1, "targets.second.path": str(tmp_path / "b.md")},
                              persona="persona.md")
    with PersonaStore.from_settings(settings) as store:
        for fact in ("Prefers tea.", "Answers tersely.", "Uses uv."):
            store.add(fact, topic="general")
            run_pipeline(settings, store=store)
    assert "Uses uv." in (tmp_path / "persona.md").read_text() and "Uses uv." in (tmp_path / "b.md").read_text()


def test_a_render_decides_whose_file_it_is_under_the_render_lock(tmp_path):
    """Another render of ours replaces the file a moment before it commits the run that proves those bytes ours;
    a render that looked in between refused our own file as someone else's. Foreign-looking bytes are looked at
    again under the render lock, which that render holds until its run is committed."""
    persona = write(tmp_path / "persona.md", HANDWRITTEN)
    settings = local_settings(tmp_path, persona="persona.md")
    outcome: list[object] = []

    def render() -> None:
        with PersonaStore.from_settings(settings) as store:
            try:
                outcome.append(run_pipeline(settings, store=store))
            except StageError as error:
                outcome.append(error)

    with file_lock(lock_path(persona), 5):  # the other render, between its swap and its commit
        racing = threading.Thread(target=render)
        racing.start()
        racing.join(0.5)  # before the fix it gave up here, without waiting for the lock
        persona.unlink()  # by the time the lock is free the file is no longer a stranger's
    racing.join(30)
    assert len(outcome) == 1 and not isinstance(outcome[0], StageError), outcome
    assert persona.exists()


def test_the_pruned_log_keeps_the_newest_runs_and_each_files_newest_on_both_backends(database, tmp_path):
    """store.keep_runs: after each render, a profile keeps its newest runs and every file's newest run (of the
    profile's own), whatever else it rendered since; another profile's runs are its own to prune."""
    files = {name: str(tmp_path / f"{name}.md") for name in ("a", "b", "c")}
    base = {**database.settings(), "store.keep_runs": 3, "injection.file": str(tmp_path / "default.md"),
            **{f"targets.{name}.path": path for name, path in files.items()}}
    order = ["a", "b", "a", "c", "a", "a", "b", "a", "a", "a", "markdown", "a", "a"]
    for profile in ("alice", "bob"):
        settings = load_settings(overrides={**base, "store.profile": profile,
                                            "injection.file": str(tmp_path / f"{profile}.md")})
        with PersonaStore.from_settings(settings) as store:
            store.add(f"{profile} prefers tea.", topic="general")
            for index, target in enumerate(order):
                store.add(f"{profile} fact {index}.", topic="general")
                run_pipeline(settings, store=store, targets=[target])
                runs = database.execute("SELECT id, path FROM persona_runs WHERE session_id = ? ORDER BY id",
                                        (profile,))
                seen = [path for _, path in runs]
                newest = {path: max(id_ for id_, p in runs if p == path) for path in seen}
                kept = {id_ for id_, _ in runs[-3:]} | set(newest.values())
                assert {id_ for id_, _ in runs} == kept and len(set(seen)) == len({*order[:index + 1]})
    assert {row[0] for row in database.execute("SELECT DISTINCT session_id FROM persona_runs")} == {"alice", "bob"}
