"""A persona as its reader sees it: an agent in a project gets the injected target's facts and its own agent's
and project's, no other project's or agent's, in the hook, in live injection and in session snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, load_settings
from pipeline.cli import app
from pipeline.inject.injector import PersonaInjector
from pipeline.inject.sessions import SessionSnapshots
from pipeline.inject.views import Reader
from pipeline.schedule.forget import forget

from ..conftest import write
from ..stages.test_scopes import repository

runner = CliRunner()
GLOBAL, MINE, THEIRS, CLAUDE, CODEX = ("Answers tersely.", "Uses pnpm in this repository.",
                                       "Uses yarn in the other repository.", "Starts in plan mode.",
                                       "Runs the tests before every answer.")


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    places = {"a": repository(tmp_path / "a", "git@github.com:me/a.git"),
              "b": repository(tmp_path / "b", "git@github.com:me/b.git"), "db": tmp_path / "m.db"}
    return places


def persona(world: dict[str, Path], *args: str, env: dict[str, str] | None = None):
    done = runner.invoke(app, ["--db", str(world["db"]), *args], env=env)
    assert done.exit_code == 0, done.output
    return done


def seed(world: dict[str, Path]) -> None:
    persona(world, "add", GLOBAL, "--topic", "style")
    persona(world, "add", MINE, "--topic", "tools", "--project", str(world["a"]))
    persona(world, "add", THEIRS, "--topic", "tools", "--project", str(world["b"]))
    persona(world, "add", CLAUDE, "--topic", "flow", "--host", "claude-code")
    persona(world, "add", CODEX, "--topic", "flow", "--host", "codex")


def shown(text: str) -> set[str]:
    return {fact for fact in (GLOBAL, MINE, THEIRS, CLAUDE, CODEX) if fact in text}


def hook_text(world: dict[str, Path], *args: str, env: dict[str, str] | None = None) -> str:
    out = persona(world, "inject", "--format", "claude-code", *args, env=env).stdout
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])


def test_claude_codes_hook_shows_its_projects_and_its_own_facts_and_no_others(world, monkeypatch):
    seed(world)
    assert shown(hook_text(world, env={"CLAUDE_PROJECT_DIR": str(world["a"])})) == {GLOBAL, MINE, CLAUDE}
    monkeypatch.chdir(world["b"] / "src")  # no $CLAUDE_PROJECT_DIR: the working directory's project
    assert shown(hook_text(world)) == {GLOBAL, THEIRS, CLAUDE}
    codex = persona(world, "inject", "--host", "codex", "--project", str(world["a"])).stdout
    assert shown(codex) == {GLOBAL, MINE, CODEX}
    assert shown(persona(world, "--set", "injection.enabled=true", "inject").stdout) == {GLOBAL}  # no reader


def test_the_hook_serves_whatever_the_hermes_switch_says(world):
    seed(world)
    assert load_settings().injection.enabled is False  # the default
    assert GLOBAL in hook_text(world, "--project", str(world["a"]))
    plain = persona(world, "inject")  # the Hermes injector's own view: switched off
    assert plain.stdout == "" and "injection is disabled" in plain.stderr


def test_a_fact_added_reaches_the_view_at_the_next_read(world):
    seed(world)
    env = {"CLAUDE_PROJECT_DIR": str(world["a"])}
    before = hook_text(world, env=env)
    persona(world, "add", "Formats with biome here.", "--topic", "format", "--project", str(world["a"] / "src"))
    after = hook_text(world, env=env)
    assert "Formats with biome here." in after and "Formats with biome here." not in before
    assert hook_text(world, env=env) == after  # nothing new: the same bytes, no render


def test_a_hand_written_persona_beside_an_empty_store_is_still_served(world, tmp_path):
    own = write(tmp_path / "persona.md", "## style\n- Written by hand.\n")
    done = persona(world, "--set", f"injection.file={own}", "inject", "--format", "claude-code",
                   "--project", str(world["a"]))
    assert "Written by hand." in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def configured(database, tmp_path: Path):
    return load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "persona-{profile}.md"),
                                    "injection.enabled": True, "injection.mode": "session"})


def test_each_sessions_snapshot_is_its_own_projects_view_and_refreshes_at_compaction(database, tmp_path, world):
    settings = configured(database, tmp_path)
    with PersonaStore.from_settings(settings) as store:
        store.add(GLOBAL, topic="style")
        store.add(MINE, topic="tools", scope="project:github.com/me/a")
        store.add(THEIRS, topic="tools", scope="project:github.com/me/b")
    in_a, in_b = Reader.at("hermes", world["a"]), Reader.at("hermes", world["b"])
    with SessionSnapshots(settings, reader=in_a) as a, SessionSnapshots(settings, reader=in_b) as b:
        assert shown(a.snapshot("s-a").text) == {GLOBAL, MINE}
        assert shown(b.snapshot("s-b").text) == {GLOBAL, THEIRS}
        a.store.add("Formats with biome here.", topic="format", scope="project:github.com/me/a")
        assert "biome" not in a.snapshot("s-a").text  # a running session keeps its persona
        refreshed = a.refresh_at_compaction("s-a")
        assert refreshed.changed and "biome" in refreshed.text and "biome" not in b.refresh_at_compaction("s-b").text


def test_a_forgotten_project_fact_leaves_every_view(database, tmp_path, world):
    settings = configured(database, tmp_path)
    with PersonaStore.from_settings(settings) as store:
        store.add(GLOBAL, topic="style")
        secret = store.add(MINE, topic="tools", scope="project:github.com/me/a").fact.id
    injector = PersonaInjector(settings, session_id="s-1", reader=Reader(project="github.com/me/a"))
    live = PersonaInjector(settings.model_copy(update={"injection": settings.injection.model_copy(
        update={"mode": "live"})}), reader=Reader(project="github.com/me/a"))
    try:
        assert MINE in injector.block() and MINE in live.block()
        with PersonaStore.from_settings(settings) as store:
            forget(settings, store, secret)
            assert MINE not in json.dumps(database.rows("persona_blocks"), default=str)
            assert MINE not in json.dumps(database.rows("persona_snapshots"), default=str)
    finally:
        injector.close()
        live.close()
    fresh = PersonaInjector(settings, session_id="s-1", reader=Reader(project="github.com/me/a"))
    try:
        assert shown(fresh.block()) == {GLOBAL}
    finally:
        fresh.close()


def test_a_target_name_cannot_pose_as_a_view(tmp_path):
    config = write(tmp_path / "persona.yaml", "targets:\n  '@abc':\n    template: persona.md.j2\n")
    done = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "-c", str(config), "render"])
    assert done.exit_code != 0 and "must not start with '@'" in done.output


def test_the_session_commands_keep_the_reader_a_session_was_first_given(world, tmp_path):
    settings = load_settings(overrides={"store.path": str(world["db"]), "injection.enabled": True,
                                        "injection.mode": "session"})
    seed(world)
    with SessionSnapshots(settings, reader=Reader.at("claude-code", world["a"])) as snapshots:
        assert shown(snapshots.snapshot("s-a").text) == {GLOBAL, MINE, CLAUDE}
    listed = persona(world, "session", "list").stdout
    assert "s-a" in listed and "github.com/me/a" in listed and "claude-code" in listed
    persona(world, "add", "Formats with biome here.", "--topic", "format", "--project", str(world["a"]))
    compacted = json.loads(persona(world, "session", "compact", "s-a", "--json").stdout)
    assert compacted["changed"] is True
    text = persona(world, "session", "show", "s-a").stdout
    assert shown(text) == {GLOBAL, MINE, CLAUDE} and "Formats with biome here." in text


def test_a_reader_sees_its_own_scopes_in_any_target_never_the_targets_project(world):
    """An agent in project B reading a target written for project A (injection.target, an MCP resource) gets
    the global facts, its own agent's and B's: never A's, never another agent's."""
    seed(world)
    persona(world, "targets", "add", "cursor", "--project", str(world["a"]), "--name", "cursor-a")
    as_b = persona(world, "--set", "injection.enabled=true", "--set", "injection.target=cursor-a", "inject",
                   "--host", "claude-code", "--project", str(world["b"])).stdout
    assert shown(as_b) == {GLOBAL, THEIRS, CLAUDE}


def test_a_reader_whose_scopes_hold_no_fact_gets_an_empty_persona_not_a_crash(world, tmp_path):
    persona(world, "add", MINE, "--topic", "tools", "--project", str(world["a"]))  # no global fact at all
    assert hook_text(world, env={"CLAUDE_PROJECT_DIR": str(world["b"])}) == ""
    assert hook_text(world, env={"CLAUDE_PROJECT_DIR": str(world["a"])}).count(MINE) == 1
