"""A kept process keeps its render's plan, its resolved targets and the list of files no render may write, with
the settings they come from (#40); never past a change: a stage registered again, another home, another profile
or another project each gets its own, and what the file system says (a symlink, a hard link, a file that
appeared) is asked at every render, so every check still holds on every write."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline import PersonaStore, load_settings, resolve_target, run_pipeline
from pipeline.errors import FileSystemError, InputError
from pipeline.fs.lock import lock_path
from pipeline.render.model import CappedRender
from pipeline.stages.ownership import NotOurs
from pipeline.stages.registry import stage, unregister
from pipeline.stages.runner import kept_plan


def settings_in(folder: Path, **extra: object):
    return load_settings(overrides={"store.path": str(folder / "m.db"), "injection.file": str(folder / "p.md"),
                                    **extra})


def rendered(settings, profile: str | None = None) -> str:
    with PersonaStore.from_settings(settings, profile=profile) as store:
        return run_pipeline(settings, store=store)[0].text


def test_a_stage_registered_again_runs_in_the_next_render_of_the_same_settings(tmp_path):
    def marking(mark: str):
        def mark_text(capped: CappedRender, *, ctx, options) -> CappedRender:
            """Append a mark (a toy)."""
            return CappedRender(replace(capped.capped, text=capped.text + mark), capped.rendered)
        return mark_text

    try:
        stage("mark", per_target=True)(marking("first\n"))
        settings = settings_in(tmp_path, pipeline=["extract", "rank", "render", "cap", "mark", "write"])
        with PersonaStore.from_settings(settings) as store:
            store.add("Answers tersely.", topic="style")
        assert rendered(settings).endswith("first\n")
        assert [step.spec.name for step in kept_plan(settings)] == ["extract", "rank", "render", "cap", "mark",
                                                                      "write"]
        unregister("mark")
        stage("mark", per_target=True)(marking("second\n"))
        assert rendered(settings).endswith("second\n")
        unregister("mark")
        for _ in range(2):  # a plan that cannot be made is never kept: each render says so
            with pytest.raises(Exception, match="unknown stage 'mark'"):
                rendered(settings)
    finally:
        unregister("mark")


def test_each_profile_and_each_home_has_its_own_resolved_target(tmp_path, monkeypatch):
    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db"),
                                        "injection.file": "~/notes/persona-{profile}.md"})
    assert resolve_target(settings, "markdown", profile="alice").path == Path.home() / "notes/persona-alice.md"
    assert resolve_target(settings, "markdown", profile="bob").path == Path.home() / "notes/persona-bob.md"
    monkeypatch.setenv("HOME", str(tmp_path / "another-home"))
    moved = resolve_target(settings, "markdown", profile="alice").path
    assert moved == tmp_path / "another-home/notes/persona-alice.md"


def test_the_default_persona_file_follows_the_hermes_home_of_the_moment(tmp_path, monkeypatch):
    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db")})
    fixed = settings.model_copy(update={"injection": settings.injection.model_copy(update={"file": None})})
    for home in ("first", "second", "first"):
        monkeypatch.setenv("HERMES_HOME", str(tmp_path / home))
        assert resolve_target(fixed, "markdown").path == tmp_path / home / "memory" / "persona.md"


def test_the_lock_follows_the_hermes_home_and_every_spelling_of_the_file_takes_one_lock(tmp_path, monkeypatch):
    folder = tmp_path / "real"
    folder.mkdir()
    (tmp_path / "link").symlink_to(folder)
    locks = set()
    for home in ("first", "second"):
        monkeypatch.setenv("HERMES_HOME", str(tmp_path / home))
        spelled = {lock_path(folder / "p.md"), lock_path(tmp_path / "link" / "p.md")}
        assert len(spelled) == 1 and next(iter(spelled)).is_relative_to(tmp_path / home)
        locks |= spelled
    assert len(locks) == 2


def test_a_file_that_became_the_database_or_another_targets_is_refused_at_the_next_render(tmp_path):
    settings = settings_in(tmp_path, **{"targets.other.path": str(tmp_path / "other.md")})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
    persona = tmp_path / "p.md"
    for _ in range(2):
        assert "Answers tersely." in rendered(settings)
    for becomes, role in ((tmp_path / "m.db", "the database"), (tmp_path / "m.db-journal", "the database's -journal"),
                          (tmp_path / "other.md", "target 'other'")):
        persona.unlink()
        persona.symlink_to(becomes)  # the journal is missing: the link dangles into it
        with pytest.raises(InputError, match=f"that is {role}"):
            rendered(settings)
    persona.unlink()
    os.link(tmp_path / "other.md", persona)  # a hard link: another spelling of the same inode
    with pytest.raises(InputError, match="that is target 'other'"):
        rendered(settings)
    persona.unlink()
    persona.mkdir()
    with pytest.raises(FileSystemError, match="it is a directory"):
        rendered(settings)
    persona.rmdir()
    assert (tmp_path / "m.db").read_bytes().startswith(b"SQLite format 3\0")
    assert "Answers tersely." in rendered(settings)


def test_a_file_someone_else_wrote_since_the_last_render_is_refused_at_the_next(tmp_path):
    settings = settings_in(tmp_path)
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
    persona = tmp_path / "p.md"
    rendered(settings)
    for _ in range(2):
        persona.unlink()
        rendered(settings)  # nothing there: written
    persona.write_text("my own notes\n")
    with pytest.raises(NotOurs):
        rendered(settings)
    assert persona.read_text() == "my own notes\n"


def test_a_per_profile_path_that_became_another_targets_file_is_refused_at_the_next_resolve(tmp_path):
    """persona-{profile}.md for profile "alias" is its own file until someone hard-links it to the fixed target's
    persona-fixed.md: from then on it is that target's file, and the kept target must not say otherwise."""
    settings = settings_in(tmp_path, **{"injection.file": str(tmp_path / "persona-{profile}.md"),
                                        "targets.fixed.path": str(tmp_path / "persona-fixed.md")})
    with PersonaStore.from_settings(settings, profile="alias") as store:
        store.add("Alias's rule.", topic="style")
        for _ in range(2):
            assert "Alias's rule." in run_pipeline(settings, store=store, targets=["markdown"])[0].text
    (tmp_path / "persona-alias.md").unlink()
    (tmp_path / "persona-fixed.md").write_text("the fixed target's\n")
    os.link(tmp_path / "persona-fixed.md", tmp_path / "persona-alias.md")
    for _ in range(2):
        with pytest.raises(InputError, match="which is target 'fixed''s file"):
            resolve_target(settings, "markdown", profile="alias")
    with PersonaStore.from_settings(settings, profile="alias") as store, pytest.raises(InputError):
        run_pipeline(settings, store=store, targets=["markdown"])
    assert (tmp_path / "persona-fixed.md").read_text() == "the fixed target's\n"


def test_two_projects_in_one_process_each_render_their_own_file(tmp_path):
    projects = {name: tmp_path / name for name in ("one", "two")}
    for name, folder in projects.items():
        folder.mkdir()
        with PersonaStore.from_settings(settings_in(folder)) as store:
            store.add(f"{name}'s rule.", topic="style")
    for _ in range(2):
        for name, folder in projects.items():
            (folder / "p.md").unlink(missing_ok=True)
            text = rendered(settings_in(folder))
            assert f"{name}'s rule." in text and (folder / "p.md").read_text() == text
    with closing(sqlite3.connect(projects["one"] / "m.db")) as conn:
        assert {row[0] for row in conn.execute("SELECT DISTINCT path FROM persona_runs")} == {
            str(projects["one"] / "p.md")}


@pytest.mark.parametrize("spelling", ["alias/m.db-journal", "sub/../m.db-journal", "alias/other.md",
                                      "sub/../alias/other.md"])
def test_a_missing_file_spelled_through_a_symlink_or_dots_is_still_the_protected_one(tmp_path, spelling):
    """Two files that are not there yet are one where both resolve to one path: the journal the database has not
    made, another target's file not rendered yet, each named through a symlinked directory or a ``..``."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path)
    settings = settings_in(tmp_path, **{"targets.other.path": str(tmp_path / "other.md"),
                                        "injection.file": str(tmp_path / spelling)})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        for _ in range(2):
            with pytest.raises(InputError, match="refusing to write target 'markdown'"):
                run_pipeline(settings, store=store, targets=["markdown"])
    assert not (tmp_path / "m.db-journal").exists() and not (tmp_path / "other.md").exists()
