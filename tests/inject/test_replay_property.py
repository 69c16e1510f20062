"""A property of the fast path (issue 48): whichever input a full run recorded is changed alone (a file's content,
its identity, a symlink's target, a listed folder, the environment, the store), the recorded answer is no longer
replayed, and what is answered then is the full path's answer. In-process, through ``pipeline.first_block``."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pipeline import PersonaStore, deliver, first_block, load_settings, run_pipeline
from pipeline.inject.first_block import REQUEST

from ..stages.test_scopes import repository

pytestmark = pytest.mark.slow
ENV = ("HOME", "HERMES_HOME", "MNEMOSYNE_PERSONA_STORE__PROFILE", "MNEMOSYNE_PERSONA_INJECTION__FILE",
       "MNEMOSYNE_PERSONA_INJECTION__HEADER", "MNEMOSYNE_PERSONA_INJECTION__ENABLED")


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in {*ENV, *values}}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def make_world(root: Path) -> tuple[dict[str, str], Path, Path]:
    """A Hermes home with a config file and its twin, two profiles' store, a project with a remote: the
    environment, the database and the project (reached through a symlink, as a host may name it)."""
    home = root / "hermes"
    (home / "mnemosyne").mkdir(parents=True)
    (home / "mnemosyne" / "persona.yaml").write_text("injection:\n  header: '# From a file'\n")
    (home / "mnemosyne" / "persona.local.yaml").write_text("injection:\n  check_interval_ms: 250\n")
    project = repository(root / "a", "git@github.com:me/a.git")
    (root / "here").symlink_to(project)
    env = {"HOME": str(root / "user"), "HERMES_HOME": str(home), "MNEMOSYNE_PERSONA_STORE__PROFILE": "alice",
           "MNEMOSYNE_PERSONA_INJECTION__ENABLED": "true",
           "MNEMOSYNE_PERSONA_INJECTION__FILE": str(home / "memory" / "persona-{profile}.md")}
    (root / "user").mkdir()
    with environment(env):
        settings = load_settings()
        settings.store.path.parent.mkdir(parents=True)
        for profile, fact in (("alice", "Answers tersely."), ("bob", "Writes Haskell only.")):
            with PersonaStore.from_settings(settings, profile=profile) as store:
                store.add(fact, topic="style")
                store.add(f"{profile} formats with biome here.", topic="format", scope="project:github.com/me/a")
                run_pipeline(settings, store=store)
    shutil.copyfile(settings.store.path, root / "backup.db")  # closed: every commit is in the file
    return env, settings.store.path, root / "here"


def _kept_inputs(env: dict[str, str]) -> list[list[object]]:
    records = Path(env["HERMES_HOME"]) / "mnemosyne" / "persona-tier" / "records"
    [path] = [path for path in records.rglob("*.json") if "deliveries" in path.parts and path.name != ".listed"]
    return json.loads(path.read_text())["inputs"]


def _change_path(path: Path, how: int) -> None:
    """Change what ``path`` is: a file's bytes, times or inode, or its absence; a folder for another one; a
    symlink pointed elsewhere; a missing path made."""
    if path.is_symlink():
        path.unlink()
        path.symlink_to(path.parent / "elsewhere")
    elif path.is_dir():
        path.rename(path.with_name(path.name + ".moved"))
        path.mkdir()
    elif not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n")
    elif how == 0:
        path.write_bytes(path.read_bytes())  # the same bytes, written again: another change time
    elif how == 1:
        path.write_bytes(path.read_bytes() + b"\n# changed\n")
    elif how == 2:
        shutil.copy2(path, path.with_name(path.name + ".new"))  # a copy with the same times, renamed over it
        os.replace(path.with_name(path.name + ".new"), path)
    else:
        path.unlink()


def _change(kind: str, subject: str, db: Path, how: int) -> dict[str, str]:
    """Change one recorded input alone; the variables it now runs with (changed ones)."""
    if kind in ("file", "link"):
        _change_path(Path(subject), how)
    elif kind == "listing":
        (Path(subject) / f"new-entry-{how}").write_text("\n")
    elif kind == "env":
        return {subject: "changed" if subject != "HOME" else str(db.parent / "another-home")}
    elif kind == "env-prefix" and subject.endswith("CONFIG"):
        (db.parent / "named.yaml").write_text("injection:\n  header: '# Named'\n")
        return {subject: str(db.parent / "named.yaml")}
    elif kind == "env-prefix":
        return {subject + "INJECTION__HEADER": "# From the environment"}
    else:  # the store, as another tool writes it (after a backup restored, half of the time)
        if how >= 2:
            for journal in ("-wal", "-shm"):
                Path(f"{db}{journal}").unlink(missing_ok=True)
            shutil.copyfile(db.parent.parent.parent.parent / "backup.db", db)
        with closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("INSERT INTO working_memory (id, content) VALUES (?, 'noted')", (f"m-{how}",))
            conn.execute("UPDATE memoria_persona SET reinforcement_count = reinforcement_count + 1 "
                         "WHERE session_id = 'alice'")
    return {}


CHANGEABLE = ("file", "link", "listing", "env", "env-prefix", "sqlite", "sqlite-read")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_recorded_input_changed_alone_is_no_longer_replayed(tmp_path_factory, data, monkeypatch):
    root = tmp_path_factory.mktemp("world")
    monkeypatch.chdir(root)
    env, db, project = make_world(root)
    args = {"profile": "alice", "host": "claude-code", "project": str(project)}
    request = [REQUEST, "alice", "claude-code", str(project)]
    with environment(env):
        first = first_block(**args)
        assert first_block(**args) == first and deliver.lookup(request, os.getcwd()) == first
        # Every input but the machine's own folders above the world (changing /tmp is not this test's to do).
        recorded = [entry for entry in _kept_inputs(env) if entry[0] in CHANGEABLE
                    and (not str(entry[0]).startswith(("file", "link", "listing")) or
                         (Path(str(entry[1])).is_relative_to(root) and Path(str(entry[1])) != root))]
    kinds = sorted({str(entry[0]) for entry in recorded})  # each kind as likely, however many inputs it has
    kind = data.draw(st.sampled_from(kinds), label="kind")
    _, subject, _ = data.draw(st.sampled_from([entry for entry in recorded if entry[0] == kind]), label="input")
    event(f"changed: {kind}")
    more = _change(str(kind), str(subject), db, data.draw(st.integers(0, 3), label="how"))
    with environment({**env, **more}):
        assert deliver.lookup(request, os.getcwd()) is None, (kind, subject)
        answered = _outcome(lambda: first_block(**args))
        assert answered == _outcome(lambda: _full(args))  # the full path's answer now, an error included


def _outcome(answer: Callable[[], str]) -> tuple[str, str]:
    try:
        return "answer", answer()
    except Exception as error:  # what the full path says of what it found: the same either way
        return type(error).__name__, str(error)


def _full(args: dict[str, str]) -> str:
    from pipeline import PersonaInjector
    from pipeline.inject.views import Reader

    return PersonaInjector(load_settings(), profile=args["profile"],
                           reader=Reader.at(args["host"], Path(args["project"]))).block()
