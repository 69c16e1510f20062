"""Issue 48's adversary cases: every copy an answer is replayed from comes from what its full run really read, so
the fast path never answers where the full path would not say the same; a forget reaches every copy, whatever
spelling of the database's path made it. Real processes, two profiles and two projects."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from pipeline import PersonaStore

from ..conftest import REPO
from ..stages.test_scopes import repository
from .test_deliver import A_RULE, ALICE, B_RULE, HOOK, World, _settled, _world


def _shown(run) -> str:
    return json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_project_symlink_pointed_elsewhere_gets_the_other_projects_facts(tmp_path: Path):
    world = _world(tmp_path, "home config and its local twin")
    link = tmp_path / "current"
    link.symlink_to(world.projects["a"])
    env = {"CLAUDE_PROJECT_DIR": str(link)}
    assert A_RULE in _shown(_settled(world, *HOOK, env=env))
    link.unlink()
    link.symlink_to(world.projects["b"])
    again = world.run(*HOOK, env=env)
    assert not again.fast
    assert B_RULE in _shown(again) and A_RULE not in _shown(again)
    assert B_RULE in _shown(_settled(world, *HOOK, env=env))


def test_a_store_restored_from_a_backup_never_replays_the_newer_history(tmp_path: Path):
    world = _world(tmp_path, "home config and its local twin")
    backup = tmp_path / "backup.db"
    shutil.copyfile(world.db, backup)  # the store closed: every commit is in the file
    with PersonaStore(world.db, profile="alice") as store:
        store.add("Reviews on Fridays.", topic="work")
    assert "Reviews on Fridays." in _shown(_settled(world, *HOOK))
    for journal in ("-wal", "-shm"):  # the backup comes back, as a restore leaves it: the file alone...
        Path(f"{world.db}{journal}").unlink(missing_ok=True)
    shutil.copyfile(backup, world.db)
    with PersonaStore(world.db, profile="alice") as store:
        store.add("Deploys on Mondays.", topic="work")  # ...and reaches the same counter by another history
    again = world.run(*HOOK)
    assert not again.fast
    assert "Deploys on Mondays." in _shown(again) and "Reviews on Fridays." not in _shown(again)


def test_an_included_template_edited_is_seen_by_inject_and_status(tmp_path: Path):
    world = _world(tmp_path, "user templates")
    templates = tmp_path / "templates"
    (templates / "_footer.j2").write_text("<!-- footer one -->\n")
    main = templates / "persona.md.j2"
    main.write_text(main.read_text() + '{% include "_footer.j2" %}')
    assert world.run("render", "--profile", "alice").code == 0
    inject = ("--set", "injection.enabled=true", "inject")
    assert b"footer one" in _settled(world, *inject).stdout
    status = ("status", "--profile", "alice")
    _settled(world, *status)
    (templates / "_footer.j2").write_text("<!-- footer two -->\n")
    said = world.run(*status)
    assert not said.fast and b"settings or templates changed" in said.stdout
    assert world.run("render", "--profile", "alice").code == 0
    again = world.run(*inject)
    assert not again.fast and b"footer two" in again.stdout


def test_a_table_another_tool_rebuilt_loses_no_write_made_while_our_triggers_were_gone(tmp_path: Path):
    world = _world(tmp_path, "home config and its local twin")
    assert ALICE in _shown(_settled(world, *HOOK))
    with closing(sqlite3.connect(world.db)) as conn, conn:
        conn.execute("CREATE TABLE rebuilt AS SELECT * FROM memoria_persona")
        conn.execute("DROP TABLE memoria_persona")
        conn.execute("ALTER TABLE rebuilt RENAME TO memoria_persona")
    with closing(sqlite3.connect(world.db)) as conn, conn:  # a write while our triggers are missing
        conn.execute("UPDATE memoria_persona SET content = 'Answers at length.' WHERE content = ?", (ALICE,))
    assert not world.run(*HOOK).fast  # the store's state cannot be told without our triggers: the full path
    assert world.run("render", "--profile", "alice").code == 0  # a write connection puts them back
    again = _settled(world, *HOOK)
    assert "Answers at length." in _shown(again) and ALICE not in _shown(again)


def test_a_code_change_in_a_subpackage_of_an_editable_install_is_a_new_answer(world: World, tmp_path: Path):
    package = tmp_path / "installed"
    shutil.copytree(REPO / "pipeline", package / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "templates", package / "templates")
    _settled(world, *HOOK, package=package)
    facts = package / "pipeline" / "store" / "facts.py"
    facts.write_text(facts.read_text() + "\n# edited\n")
    assert not world.run(*HOOK, package=package).fast
    _settled(world, *HOOK, package=package)
    template = package / "templates" / "persona.md.j2"
    template.write_text(template.read_text() + "\n")
    assert not world.run(*HOOK, package=package).fast


@pytest.fixture
def world(tmp_path: Path) -> World:
    return _world(tmp_path, "home config and its local twin")


def _spellings(world: World, tmp_path: Path) -> dict[str, list[str]]:
    """Other names of the same database file: a symlink, a hard link, a second config naming it. (A write-ahead log
    is named after the path it was opened by: two names of one file in WAL mode would corrupt it, so this
    database keeps a rollback journal, as its owner may choose.)"""
    with closing(sqlite3.connect(world.db)) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
    (tmp_path / "link.db").symlink_to(world.db)
    os.link(world.db, tmp_path / "hard.db")
    (tmp_path / "second.yaml").write_text(f"store:\n  path: {tmp_path / 'hard.db'}\n")
    return {"as configured": [], "a symlink": ["--db", str(tmp_path / "link.db")],
            "a hard link": ["--db", str(tmp_path / "hard.db")],
            "a second config": ["-c", str(tmp_path / "second.yaml")]}


def test_a_forget_reaches_the_records_every_spelling_of_the_database_made(world: World, tmp_path: Path):
    spellings = _spellings(world, tmp_path)
    for options in spellings.values():
        for profile in ("alice", "bob"):
            _settled(world, *options, *HOOK, "--profile", profile)
    other_home = tmp_path / "other-hermes"
    _settled(world, "--db", str(world.db), *HOOK, "--profile", "alice", env={"HERMES_HOME": str(other_home)})
    with PersonaStore(world.db, profile="alice") as store:
        fact = next(fact for fact in store.list() if fact.content == ALICE)
    assert world.run("forget", str(fact.id), "--profile", "alice").code == 0
    ours = [path for path in tmp_path.rglob("*") if path.is_file() and "persona-tier" in str(path)]
    assert ours and not any(ALICE.encode() in path.read_bytes() for path in ours)
    assert any(b"Bob writes" in path.read_bytes() for path in ours), "bob's records stay"
    for options in spellings.values():
        answer = world.run(*options, *HOOK, "--profile", "alice")
        assert not answer.fast and ALICE not in _shown(answer)


def test_a_nearer_checkout_made_later_is_its_own_project(world: World):
    cwd = world.projects["a"] / "src"
    assert A_RULE in _shown(_settled(world, *HOOK, cwd=cwd))
    repository(cwd / "inner", "git@github.com:me/c.git")
    again = world.run(*HOOK, cwd=cwd / "inner" / "src")
    assert not again.fast and A_RULE not in _shown(again)


def test_after_a_forget_no_file_under_the_home_holds_the_text(world: World, tmp_path: Path):
    """Every copy of the fact: the store (its pages and journal), the rendered files, the records of inject, the
    hook, status and a first block, in every profile's and project's request."""
    env = {"MNEMOSYNE_PERSONA_INJECTION__ENABLED": "true"}
    for project in ("a", "b"):
        _settled(world, *HOOK, env={"CLAUDE_PROJECT_DIR": str(world.projects[project])})
    _settled(world, "inject", env=env)
    _settled(world, "status", "--profile", "alice")
    with PersonaStore(world.db, profile="alice") as store:
        fact = next(fact for fact in store.list() if fact.content == ALICE)
    assert world.run("forget", str(fact.id), "--profile", "alice").code == 0
    holding = [str(path) for path in tmp_path.rglob("*") if path.is_file() and ALICE.encode() in path.read_bytes()]
    assert holding == []
    assert any(b"Bob writes" in path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
