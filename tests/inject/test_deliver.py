"""The fast path (pipeline/deliver.py): `persona inject` and the SessionStart hook answered with the standard
library alone when nothing the last full run read has changed, byte for byte what the full path prints, and the
full path again the moment any input it read moves.

Every run is a real process (`python -X importtime -m pipeline`, as the console script runs), so a test sees
which path answered by what the process imported.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pipeline import PersonaStore
from pipeline.fs.locations import hermes_home
from pipeline.render.template_sources import builtin_template_dir

from ..conftest import REPO
from ..stages.test_scopes import repository

HEAVY = ("pydantic", "typer", "jinja2", "yaml", "ruamel", "click")
# What the fast path imports of ours: the records' home, the inputs it compares, the store's own statement.
FAST_MODULES = {"pipeline", "pipeline.moved", "pipeline.deliver", "pipeline.inputs", "pipeline.fs", "pipeline.fs.home",
                "pipeline.fs.records", "pipeline.store", "pipeline.store.contract", "pipeline.store.identity"}
ALICE, BOB = "Answers tersely.", "Bob writes Haskell only."
A_RULE, B_RULE = "Formats with biome here.", "Tabs, never spaces, here."


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: str
    imported: set[str] = field(default_factory=set)

    @property
    def fast(self) -> bool:
        return not any(module.split(".")[0] in HEAVY for module in self.imported)


@dataclass
class World:
    """Two profiles and two projects in one Hermes home; ``env`` and ``prefix`` are a config layout's."""

    root: Path
    home: Path
    db: Path
    projects: dict[str, Path]
    env: dict[str, str]
    prefix: list[str]

    def run(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            package: Path = REPO) -> Run:
        base = {"PATH": os.environ["PATH"], "HOME": str(self.root / "user"), "PYTHONPATH": str(package)}
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "pipeline", *self.prefix, *args],
                              env=base | self.env | (env or {}), capture_output=True, timeout=60,
                              cwd=cwd or self.root)
        lines = done.stderr.decode("utf-8", "replace").splitlines()
        imported = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
        rest = "\n".join(line for line in lines if not line.startswith("import time:"))
        return Run(done.returncode, done.stdout, rest, imported)

    @property
    def records(self) -> Path:
        return self.home / "mnemosyne" / "persona-tier" / "records"

    def full(self, *args: str, **kwargs: object) -> Run:
        """What the full path answers now (nothing to replay: the records' pointers are set aside for the run)."""
        pointers, aside = self.records / "pointers", self.root / "pointers-aside"
        if pointers.exists():
            shutil.move(pointers, aside)
        try:
            done = self.run(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            if pointers.exists():
                shutil.rmtree(pointers)
            if aside.exists():
                shutil.move(aside, pointers)
        assert not done.fast
        return done

    def delivered(self, *args: str, **kwargs: object) -> tuple[Run, Run]:
        """The full path's answer now, then the request's answer once the fast path gives it (a run that rendered,
        or raced a write, is not recorded: within three requests)."""
        full = self.full(*args, **kwargs)
        for _ in range(3):
            after = self.run(*args, **kwargs)  # type: ignore[arg-type]
            if after.fast:
                return full, after
        raise AssertionError(f"{args}: never answered by the fast path")


def _store(db: Path) -> None:
    with PersonaStore(db, profile="alice") as store:
        store.add(ALICE, topic="style")
        store.add(A_RULE, topic="format", scope="project:github.com/me/a")
        store.add(B_RULE, topic="format", scope="project:github.com/me/b")
    with PersonaStore(db, profile="bob") as store:
        store.add(BOB, topic="languages")


LAYOUTS = ("default home", "home config and its local twin", "--config", "MNEMOSYNE_PERSONA_CONFIG", "--db",
           "user templates")


def _world(root: Path, layout: str) -> World:
    home = root / "hermes"
    db = home / "mnemosyne" / "data" / "mnemosyne.db"
    db.parent.mkdir(parents=True)
    _store(db)
    projects = {"a": repository(root / "a", "git@github.com:me/a.git"),
                "b": repository(root / "b", "git@github.com:me/b.git")}
    env = {"HERMES_HOME": str(home), "MNEMOSYNE_PERSONA_STORE__PROFILE": "alice",
           "MNEMOSYNE_PERSONA_INJECTION__FILE": str(home / "memory" / "persona-{profile}.md")}
    prefix: list[str] = []
    config = "injection:\n  header: '# Rules from a file'\n"
    if layout == "home config and its local twin":
        (home / "mnemosyne" / "persona.yaml").write_text(config)
        (home / "mnemosyne" / "persona.local.yaml").write_text("injection:\n  check_interval_ms: 250\n")
    elif layout == "--config":
        (root / "mine.yaml").write_text(config)
        prefix = ["--config", str(root / "mine.yaml")]
    elif layout == "MNEMOSYNE_PERSONA_CONFIG":
        (root / "env.yaml").write_text(config)
        env["MNEMOSYNE_PERSONA_CONFIG"] = str(root / "env.yaml")
    elif layout == "--db":
        moved = root / "elsewhere.db"
        shutil.move(db, moved)
        db, prefix = moved, ["--db", str(moved)]
    elif layout == "user templates":
        (root / "templates").mkdir()
        shutil.copy(builtin_template_dir() / "persona.md.j2", root / "templates" / "persona.md.j2")
        (root / "mine.yaml").write_text(f"render:\n  template_dirs: [{root / 'templates'}]\n")
        prefix = ["--config", str(root / "mine.yaml")]
    world = World(root, home, db, projects, env, prefix)
    for profile in ("alice", "bob"):
        assert world.run("render", "--profile", profile).code == 0
    return world


@pytest.fixture(params=LAYOUTS)
def layout(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return _world(tmp_path, request.param)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return _world(tmp_path, "home config and its local twin")


HOOK = ("inject", "--format", "claude-code")
COMMANDS = {
    "inject": ("--set", "injection.enabled=true", "inject"),
    "inject, bob": ("--set", "injection.enabled=true", "inject", "--profile", "bob"),
    "inject for a host and a project": ("inject", "--host", "claude-code", "--project", "a"),
    "the SessionStart hook": HOOK,
    "the SessionStart hook, bob": (*HOOK, "--profile", "bob"),
}


def _same(world: World, args: tuple[str, ...], project: str) -> None:
    full, fast = world.delivered(*args, env={"CLAUDE_PROJECT_DIR": str(world.projects[project])})
    assert fast.fast, f"{args}: the request after the full path's imported {sorted(layout_heavy(fast))}"
    assert (fast.code, fast.stdout, fast.stderr) == (full.code, full.stdout, full.stderr)


def test_over_every_config_layout_the_fast_path_prints_what_the_full_path_printed(layout: World):
    for command, project in (("inject", "a"), ("the SessionStart hook", "a"), ("the SessionStart hook, bob", "b")):
        _same(layout, COMMANDS[command], project)
    hook = json.loads(layout.run(*HOOK, env={"CLAUDE_PROJECT_DIR": str(layout.projects["a"])}).stdout)
    shown = hook["hookSpecificOutput"]["additionalContext"]
    assert ALICE in shown and A_RULE in shown and B_RULE not in shown and BOB not in shown


@pytest.mark.parametrize("command", COMMANDS)
def test_for_every_command_the_fast_path_prints_what_the_full_path_printed(world: World, command: str):
    for project in ("a", "b"):
        _same(world, COMMANDS[command], project)


def layout_heavy(run: Run) -> set[str]:
    return {module for module in run.imported if module.split(".")[0] in HEAVY}


def test_the_fast_path_imports_nothing_but_the_standard_library(world: World):
    _, fast = world.delivered(*HOOK)
    ours = {module for module in fast.imported if module.startswith("pipeline")}
    assert "pipeline.deliver" in ours and ours <= FAST_MODULES, ours
    assert layout_heavy(fast) == set()


def test_each_profile_and_project_has_its_own_answer(world: World):
    answers = {}
    for profile in ("alice", "bob"):
        for project in ("a", "b"):
            args = (*HOOK, "--profile", profile)
            env = {"CLAUDE_PROJECT_DIR": str(world.projects[project])}
            full, fast = world.delivered(*args, env=env)
            assert fast.fast and fast.stdout == full.stdout
            answers[profile, project] = fast.stdout
    assert len(set(answers.values())) == 3  # bob holds no project facts: his two projects read alike
    assert A_RULE.encode() in answers["alice", "a"] and B_RULE.encode() in answers["alice", "b"]
    assert BOB.encode() not in answers["alice", "a"] and ALICE.encode() not in answers["bob", "a"]


def _another_writer(world: World) -> None:
    """Another tool (Mnemosyne, another host) changing one of alice's facts: our triggers count it."""
    with closing(sqlite3.connect(world.db)) as conn, conn:
        conn.execute("UPDATE memoria_persona SET reinforcement_count = reinforcement_count + 1 "
                     "WHERE session_id = 'alice' AND content = ?", (ALICE,))


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# edited\n")


def _settled(world: World, *args: str, **kwargs: object) -> Run:
    """The answer once the fast path gives it, which is what the full path answers now."""
    full, fast = world.delivered(*args, **kwargs)
    assert (fast.code, fast.stdout, fast.stderr) == (full.code, full.stdout, full.stderr)
    return fast


CHANGES = {
    "another tool's write to the profile's facts": _another_writer,
    "a render": lambda w: w.run("render", "--force", "--profile", "alice"),
    "the home config's bytes": lambda w: _edit(w.home / "mnemosyne" / "persona.yaml"),
    "a local twin": lambda w: (w.home / "mnemosyne" / "persona.local.yaml").unlink(),
    "the persona file": lambda w: _edit(w.home / "memory" / "persona-alice.md"),
    "the project's git config": lambda w: _edit(w.projects["a"] / ".git" / "config"),
    "a nearer checkout": lambda w: repository(w.projects["a"] / "src", "git@github.com:me/c.git"),
    "the sticky Hermes profile's file": lambda w: (w.root / "user" / ".hermes" / "active_profile").write_text(
        "work\n\n"),
    "Mnemosyne's bank switch": lambda w: (w.home / "config.yaml").write_text("memory: {}\n"),
}


def test_each_part_of_the_key_changed_alone_sends_it_to_the_full_path(world: World):
    cwd = world.projects["a"] / "src"
    _sticky(world)  # the Hermes home found through ~/.hermes/active_profile, so that file is a part too
    _settled(world, *HOOK, cwd=cwd)
    for change, apply in CHANGES.items():
        apply(world)
        again = world.run(*HOOK, cwd=cwd)
        assert not again.fast, f"{change}: answered from the record"
        assert again.code == 0, again.stderr
        _settled(world, *HOOK, cwd=cwd)
    assert _nearer_checkout_is_its_own_project(world, cwd)


def _nearer_checkout_is_its_own_project(world: World, cwd: Path) -> bool:
    """The nearer checkout is another project: the first project's rule is no longer shown there."""
    shown = json.loads(world.run(*HOOK, cwd=cwd).stdout)["hookSpecificOutput"]["additionalContext"]
    return ALICE in shown and A_RULE not in shown


def _sticky(world: World) -> None:
    """Move the world's Hermes home to a Hermes profile that ~/.hermes/active_profile names."""
    root = world.root / "user" / ".hermes"
    (root / "profiles").mkdir(parents=True)
    shutil.move(world.home, root / "profiles" / "work")
    (root / "active_profile").write_text("work\n")
    world.home = root / "profiles" / "work"
    world.db = world.home / "mnemosyne" / "data" / "mnemosyne.db"
    world.env = {**world.env, "MNEMOSYNE_PERSONA_INJECTION__FILE": str(world.home / "memory" / "persona-{profile}.md")}
    del world.env["HERMES_HOME"]


ENV_CHANGES = {
    "a PERSONA_ variable": {"MNEMOSYNE_PERSONA_INJECTION__HEADER": "# Rules from the environment"},
    "a persona variable in lower case": {"mnemosyne_persona_injection__header": "# lower"},
    "the Hermes home": {"HERMES_HOME": "elsewhere"},
    "the project directory's variable": {"CLAUDE_PROJECT_DIR": "b"},
}


def test_each_part_of_the_environment_changed_alone_sends_it_to_the_full_path(world: World):
    env = {"CLAUDE_PROJECT_DIR": str(world.projects["a"])}
    first = _settled(world, *HOOK, env=env)
    unrelated = world.run(*HOOK, env=env | {"CLAUDE_SESSION_ID": "s-2", "TERM": "dumb"})
    assert unrelated.fast and unrelated.stdout == first.stdout, "a variable that shapes nothing may vary"
    places = {"CLAUDE_PROJECT_DIR": str(world.projects["b"]), "HERMES_HOME": str(world.root / "other-home")}
    for change, extra in ENV_CHANGES.items():
        changed = env | {name: places.get(name, value) for name, value in extra.items()}
        again = world.run(*HOOK, env=changed)
        assert not again.fast, change
        full = world.full(*HOOK, env=changed)  # a lower-case variable is an error of the full path: the same here
        assert (again.code, again.stdout, again.stderr) == (full.code, full.stdout, full.stderr), change


def test_the_arguments_and_the_working_directory_are_part_of_the_key(world: World):
    full, fast = world.delivered(*HOOK, "--project", str(world.projects["a"]))
    assert fast.fast and fast.stdout == full.stdout
    assert not world.run(*HOOK, "--project", str(world.projects["b"])).fast
    assert not world.run(*HOOK, "--project", str(world.projects["a"]), cwd=world.projects["b"]).fast
    assert not world.run("--debug", *HOOK, "--project", str(world.projects["a"])).fast


def test_a_new_package_sends_it_to_the_full_path(world: World, tmp_path: Path):
    package = tmp_path / "installed"
    shutil.copytree(REPO / "pipeline", package / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    full, fast = world.delivered(*HOOK, package=package)
    assert fast.fast and fast.stdout == full.stdout
    (package / "pipeline" / "deliver.py").write_text((package / "pipeline" / "deliver.py").read_text() + "\n")
    assert not world.run(*HOOK, package=package).fast


def _kept(world: World) -> list[Path]:
    return sorted(path for path in world.records.rglob("*.json") if "deliveries" in path.parts)


def test_the_records_are_private_and_a_forget_erases_the_profiles(world: World):
    for profile in ("alice", "bob"):
        world.delivered(*HOOK, "--profile", profile)
    kept, pointers = _kept(world), sorted((world.records / "pointers").iterdir())
    assert len(kept) == len(pointers) == 2
    for path in (*kept, *pointers):
        assert path.stat().st_mode & 0o777 == 0o600, path
        assert path.parent.stat().st_mode & 0o777 == 0o700, path.parent
    assert any(ALICE.encode() in path.read_bytes() for path in kept)
    with PersonaStore(world.db, profile="alice") as store:
        fact = next(fact for fact in store.list() if fact.content == ALICE)
    assert world.run("forget", str(fact.id), "--profile", "alice").code == 0
    ours = [path for path in world.root.rglob("*") if path.is_file() and "persona-tier" in str(path)]
    left = b"".join(path.read_bytes() for path in ours)
    assert ALICE.encode() not in left
    assert BOB.encode() in left, "bob's record stays"
    answer = world.run(*HOOK, "--profile", "alice")
    assert not answer.fast and ALICE.encode() not in answer.stdout


def test_a_session_snapshot_or_a_postgresql_store_is_never_recorded(world: World):
    for _ in range(2):
        session = world.run("--set", "injection.mode=session", *HOOK, "--session-id", "s-1")
        assert session.code == 0 and not session.fast
    url = "postgresql://127.0.0.1:1/nowhere"
    for _ in range(2):
        assert not world.run("--db", url, *HOOK).fast


def test_the_fast_path_finds_the_records_where_the_full_path_keeps_them(world: World, monkeypatch):
    """One definition of the Hermes home and the records' folder, whichever path asks."""
    from pipeline.fs import records

    for name, value in world.env.items():
        monkeypatch.setenv(name, value)
    assert records.folder() == str(hermes_home() / "mnemosyne" / "persona-tier" / "records")


def test_the_recorded_inputs_are_what_the_full_path_read(world: World):
    """The record names, as its inputs, the config files, the project's git files and the store the run read:
    noted by the run itself, not listed beside it."""
    _settled(world, *HOOK, cwd=world.projects["a"] / "src")
    [record] = [json.loads(path.read_text()) for path in _kept(world)]
    subjects = {subject for _, subject, _ in record["inputs"]}
    kinds = {kind for kind, _, _ in record["inputs"]}
    assert {str(world.home / "mnemosyne" / name) for name in ("persona.yaml", "persona.local.yaml")} <= subjects
    assert str(world.projects["a"] / ".git" / "config") in subjects
    assert str(world.home / "memory" / "persona-alice.md") in subjects
    assert {"code", "sqlite", "env-prefix"} <= kinds
    assert ("env", "CLAUDE_PROJECT_DIR") in {(kind, subject) for kind, subject, _ in record["inputs"]}


def test_erasing_a_profile_erases_its_records_and_no_other(world: World):
    for profile in ("alice", "bob"):
        _settled(world, *HOOK, "--profile", profile)
    assert world.run("profile", "erase", "bob", "--yes").code == 0
    kept = b"".join(path.read_bytes() for path in _kept(world))
    assert BOB.encode() not in kept and ALICE.encode() in kept
    assert world.run(*HOOK, "--profile", "alice").fast


def test_a_delivery_that_warns_is_never_answered_from_a_record(world: World):
    """The fast path says nothing on stderr: a full answer that warned is given by the full path every time."""
    persona = world.home / "memory" / "persona-alice.md"
    persona.write_bytes(persona.read_bytes() + b"\n- caf\xe9 au lait\n")
    runs = [world.run(*COMMANDS["inject"]) for _ in range(3)]
    assert not any(run.fast for run in runs)
    assert all(run.code == 0 and "not valid UTF-8" in run.stderr for run in runs), [run.stderr for run in runs]
    assert len({run.stdout for run in runs}) == 1


def test_python_m_pipeline_deliver_prints_the_recorded_answer_or_exits_1(world: World):
    env = {"PATH": os.environ["PATH"], "HOME": str(world.root / "user"), "PYTHONPATH": str(REPO)} | world.env

    def alone() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "pipeline.deliver", *HOOK], env=env, capture_output=True,
                              timeout=60, cwd=world.root)

    missed = alone()
    assert (missed.returncode, missed.stdout, missed.stderr) == (1, b"", b"")
    answer = _settled(world, *HOOK)
    hit = alone()
    assert (hit.returncode, hit.stdout) == (0, answer.stdout)


def test_records_are_kept_to_a_bound_the_oldest_going_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """One record per request, directory and environment: a user's many checkouts must not pile them up."""
    from pipeline.fs import records

    monkeypatch.setattr(records, "KEEP", 2)
    home = str(tmp_path / "home")
    for number in range(4):
        records.keep_delivery(records.folder(home), f"request-{number}", "store", "alice",
                              {"inputs": [], "output": f"block {number}"})
        for path in Path(records.folder(home)).rglob("*"):
            if path.is_file() and f'"request-{number}"' in path.read_text():
                os.utime(path, ns=(number, number))  # distinct ages, whatever the clock's resolution
    profile = Path(records.profile_folder(records.folder(home), "store", "alice"))
    assert len(list(profile.iterdir())) == 2
    assert len(list((Path(records.folder(home)) / "pointers").iterdir())) == 2
    kept = [json.loads(path.read_text())["output"] for path in profile.iterdir()]
    assert sorted(kept) == ["block 2", "block 3"]
