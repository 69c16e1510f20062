"""`persona init`: a new user does not start empty. Find the memory this machine already holds, show what would be
imported and which host presets added, then do it.

What is looked for, under the user's home: the Hermes home (``$HERMES_HOME``, else ``~/.hermes`` or its sticky
profile) with its ``memories/USER.md`` (facts) and ``MEMORY.md`` (notes offered for review) and the persona.md the
existing tier told users to write; Claude Code's ``~/.claude/CLAUDE.md``, Codex's ``~/.codex/AGENTS.md`` and
Gemini CLI's ``~/.gemini/GEMINI.md``; and Mnemosyne's database, which is the store itself unless the settings name
another. A host whose directory exists gets its preset (a region of its user file, as ``persona targets add HOST
--user`` adds), unless a target already writes that file. A hand-written persona.md that a target writes is
adopted (:mod:`pipeline.schedule.adopt`); one of our renders is left alone. Nothing is deleted, and the user's own
text stays in their files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..config.presets import PRESETS
from ..config.schema import Settings
from ..config.targets import resolve_target
from ..config.urls import describe_database, store_target
from ..errors import InputError, PersonaError
from ..fs.locations import default_database, hermes_home
from ..fs.write import same_file
from ..hosts import registry
from ..hosts.model import OwnMemory
from ..interchange.formats import import_source
from ..interchange.importing import ImportReport
from ..render.model import TargetReport
from ..schedule.adopt import adopt, targets_of
from ..schedule.learn import learned_as_they_stand, memory_files
from ..stages.ownership import foreign
from ..stages.runner import run_pipeline
from ..store import PersonaStore
from ..store.learned import learned_writer
from ..text import counted
from .claude_hooks import runs_ours, settings_file

# The hosts init offers (each declares offered_by_init): a file of the user's own under the home, which init looks
# for. The other hosts with a user-level file are added by `persona targets add HOST --user` only, as before.
USER_PRESETS = registry.offered_by_init()
# A user-level file a host loads instead of its usual one while it exists (Codex: AGENTS.override.md).
OVERRIDES = {host.name: host.user_override for host in registry.HOSTS.values() if host.user_override}
HERMES_FILES = (("memories/USER.md", "Hermes USER.md"), ("memories/MEMORY.md", "Hermes MEMORY.md"))


@dataclass(frozen=True, slots=True)
class Found:
    """A file init would import: whose it is, where, in which format, and whether it is adopted (imported, then
    taken over by the target that writes it)."""

    label: str
    path: Path
    fmt: str
    adopt: bool = False


@dataclass(frozen=True, slots=True)
class NewTarget:
    """A host preset init would add: its name (the preset's) and the user file its region goes into."""

    preset: str
    path: Path

    def settings(self) -> dict[str, Any]:
        return PRESETS[self.preset].target(self.preset, self.path, None)  # a user file: no project


@dataclass
class InitPlan:
    """What init found, and what it would do with it."""

    sources: list[Found] = field(default_factory=list)
    targets: list[NewTarget] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was found and needs nothing
    unhook: list[Path] = field(default_factory=list)  # settings files whose hook of ours gives way to a target
    hermes: bool = False  # a Hermes home exists: `persona hermes install` is the next step there


@dataclass
class Outcome:
    """What carrying out one step gave: an import's report, a render's, or the one line that says why it failed."""

    what: str
    report: ImportReport | None = None
    rendered: list[TargetReport] = field(default_factory=list)
    error: str | None = None


def plan_init(settings: Settings, store: PersonaStore, home: Path, *, instead_of_hook: bool = False) -> InitPlan:
    """What this machine holds under ``home`` and the Hermes home, and what init would do with it: a host our
    session-start hook already gives the persona gets no target (each fact once), unless ``instead_of_hook``
    (then the hook is removed and the target added)."""
    plan = InitPlan(notes=[_database(settings, store)])
    hermes = hermes_home()
    plan.hermes = hermes.is_dir()
    for name, label in HERMES_FILES:
        if _has_text(hermes / name):
            plan.sources.append(Found(label, hermes / name, "hermes"))
    _persona_md(settings, store, hermes / "memory" / "persona.md", plan)
    for preset in USER_PRESETS:
        _host(settings, store, preset, home, plan, instead_of_hook)
    return plan


def _database(settings: Settings, store: PersonaStore) -> str:
    facts = sum(store.count_by_tier().values())
    line = f"{describe_database(settings)}: {counted(facts, 'persona fact')} already in it"
    mnemosyne = default_database().path
    if store_target(settings) != mnemosyne and mnemosyne.is_file():
        line += f"; Mnemosyne's own database {mnemosyne} is not the store (store.path or store.url names another)"
    return line


def _persona_md(settings: Settings, store: PersonaStore, path: Path, plan: InitPlan) -> None:
    """The persona.md the existing tier told users to write: adopted when a target writes it, else imported."""
    if not _has_text(path):
        return
    try:
        written_by_target = bool(targets_of(settings, store.profile, path))
    except PersonaError:
        written_by_target = False
    if not written_by_target:
        plan.sources.append(Found("Hermes persona.md", path, "persona-md"))
    elif foreign(store, path) is not None:
        plan.sources.append(Found("Hermes persona.md", path, "persona-md", adopt=True))
    else:
        plan.notes.append(f"{path} is a render of persona-tier's: nothing to import")


def _host(settings: Settings, store: PersonaStore, preset: str, home: Path, plan: InitPlan,
          instead_of_hook: bool) -> None:
    host = PRESETS[preset]
    assert host.user_file is not None  # USER_PRESETS all have one
    path = home / host.user_file
    if not path.parent.is_dir():
        return
    shadow = path.with_name(OVERRIDES.get(preset, path.name))
    if shadow != path and _has_text(shadow):  # the host loads the override instead: import it, and write there
        plan.notes.append(f"{host.host} reads {shadow} instead of {path} while it exists; init imports and writes it")
        path = shadow
    if _has_text(path):
        plan.sources.append(Found(host.host, path, "instructions"))
    writers = [name for name in settings.targets if _writes(settings, store.profile, name, path)]
    hook = _our_hook(preset, home)
    if preset in settings.targets or writers:
        plan.notes.append(f"{host.host}: target {(writers or [preset])[0]!r} already writes {path}")
    elif hook is not None and not instead_of_hook:
        plan.notes.append(f"{host.host} gets the persona from the session-start hook in {hook}: no target added "
                          f"for {path}, so each fact arrives once (`persona init --instead-of-hook` removes the "
                          "hook and adds the target)")
    else:
        plan.unhook += [hook] if hook is not None else []
        plan.targets.append(NewTarget(preset, path))


def _our_hook(preset: str, home: Path) -> Path | None:
    """The user's settings file where our session-start hook gives the host of ``preset`` the persona, if any."""
    if preset not in registry.hooks():
        return None
    path = settings_file(user=True, project=None, home=home)
    try:
        return path if runs_ours(path) else None
    except InputError:  # a settings file the host cannot read runs no hook of ours either
        return None


def _writes(settings: Settings, profile: str, name: str, path: Path) -> bool:
    try:
        return same_file(resolve_target(settings, name, profile=profile).path, path)
    except PersonaError:
        return False


def _has_text(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def preview(store: PersonaStore, plan: InitPlan, *, skip_bad: bool = False,
            accept_notes: bool = False) -> list[Outcome]:
    """What importing each source would do (a dry run: the store may be read-only)."""
    return [_import(store, found, dry_run=True, skip_bad=skip_bad, accept_notes=accept_notes)
            for found in plan.sources]


def carry_out(settings: Settings, store: PersonaStore, plan: InitPlan, *, add_target: Callable[[NewTarget], str],
              reload: Callable[[], Settings], skip_bad: bool = False, accept_notes: bool = False) -> list[Outcome]:
    """Import every source (adopting where the plan says so), add each new target with ``add_target`` (which says
    what it did), then render the new targets with the settings ``reload`` reads. Each step that fails is one line
    in its outcome, and the others go on: one bad file does not keep the rest from coming in."""
    done = [_adopt(settings, store, found, skip_bad) if found.adopt
            else _import(store, found, dry_run=False, skip_bad=skip_bad, accept_notes=accept_notes)
            for found in plan.sources]
    for target in plan.targets:
        done.append(_step(f"target {target.preset}", partial(_added, add_target, target)))
    if plan.targets:
        fresh = reload()
        done += [_step(f"render {target.preset}", partial(_render, fresh, store, target.preset))
                 for target in plan.targets]
    return done


def _added(add_target: Callable[[NewTarget], str], target: NewTarget) -> Outcome:
    return Outcome(add_target(target))


def _render(settings: Settings, store: PersonaStore, name: str) -> Outcome:
    return Outcome(f"render {name}", rendered=run_pipeline(settings, store=store, targets=[name]))


def _import(store: PersonaStore, found: Found, *, dry_run: bool, skip_bad: bool, accept_notes: bool) -> Outcome:
    own = _memory_of(found.path)

    def run() -> Outcome:
        # A host's own memory (Hermes' USER.md, Gemini's GEMINI.md) comes in as learned from that host: the host
        # loads the file itself, so its facts are left out of its own targets, and `persona learn` reads no entry
        # of it again.
        report = import_source(store, found.path, found.fmt, dry_run=dry_run, skip_bad=skip_bad,
                               accept_notes=accept_notes, writer=learned_writer(own[0]) if own else None)
        if own is not None and not dry_run:
            learned_as_they_stand(store, *own, found.path)
        return Outcome(f"import {found.path}", report=report)

    return _step(f"import {found.path}", run)


def _memory_of(path: Path) -> tuple[str, OwnMemory] | None:
    """The host whose own memory ``path`` is, and that memory's description; None for any other file, and for a
    file the user writes themselves (imported as theirs: a forget never edits it)."""
    for name in registry.learners():
        for memory in registry.HOSTS[name].memory:
            if not memory.users_own and any(same_file(path, file) for file in memory_files(memory)):
                return name, memory
    return None


def _adopt(settings: Settings, store: PersonaStore, found: Found, skip_bad: bool) -> Outcome:
    def run() -> Outcome:
        adoption = adopt(settings, store, found.path, fmt=found.fmt, skip_bad=skip_bad)
        return Outcome(f"adopt {found.path}", report=adoption.imported, rendered=adoption.rendered)

    return _step(f"adopt {found.path}", run)


def _step(what: str, run: Callable[[], Outcome]) -> Outcome:
    try:
        return run()
    except PersonaError as error:
        return Outcome(what, error=str(error))
