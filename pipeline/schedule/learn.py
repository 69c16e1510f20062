"""`persona learn`: what each host's model saved in its own memory (``Host.memory``: Hermes' ``USER.md``, Gemini
CLI's ``~/.gemini/GEMINI.md``, Claude Code's auto memory) becomes a fact every other agent gets.

Each memory file is read by the import format its host names, and each entry never read before
(:mod:`pipeline.store.learned`) goes through the one import engine, written by ``learn:HOST``, scoped as the host
meant it (a project's memory to that project, a personal one to the user): a fact already there stays as it is,
a forgotten or demoted text is not taken in, and a changed one is proposed against the old fact. With
``learn.approve: ask`` each new fact is held for the user's approval instead (:mod:`pipeline.store.held_writes`).
A file that cannot be read is named with the reason, and the others are still learned.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import caches, inputs
from ..config.schema import Settings
from ..errors import FactsFileError, PersonaError
from ..fs import bounded_json
from ..fs.projects import project_of
from ..hosts.model import OwnMemory
from ..hosts.registry import HOSTS
from ..scopes import project_scope
from ..store import PersonaStore
from ..store.learned import learned_writer, note_learned, unseen
from ..warn_once import ProblemLog

if TYPE_CHECKING:  # the import engine and the formats load only when a memory file is read: a start that finds
    from ..interchange.fact_entry import Parsed  # nothing changed (a prompt's path) never needs them

SLUG_CHAR = re.compile(r"[^A-Za-z0-9]")
log = logging.getLogger(__name__)
UNREADABLE = ProblemLog(log)
# One learn at a time in a process: a host's threads (Hermes' gateway, the MCP server) starting sessions together
# would each find the same entry new and take it in twice.
_ONE_AT_A_TIME = threading.Lock()
# A file learned whole, as it stood then (inode, size, modification and change times): a host's session start in a
# long-running process (the Hermes plugin, the MCP server) reads only the files that changed since.
_LEARNED = caches.cache("learn.files", owner="profile", key="a profile (the database's label, the profile) and a "
                        "memory file's path", bound=4096, holds_text=False)


@dataclass
class Learned:
    """What one learn did: per file, the facts added, held or already there, and the files it could not read."""

    added: list[int] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    unchanged: int = 0
    proposals: int = 0
    files: list[str] = field(default_factory=list)  # every memory file read
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (file, why)

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "held": self.held, "unchanged": self.unchanged, "proposals": self.proposals,
                "files": self.files, "unreadable": [{"file": file, "why": why} for file, why in self.unreadable]}


def learn(settings: Settings, store: PersonaStore) -> Learned:
    """Learn every new entry of the memory files of ``learn.hosts`` into ``store`` (see the module)."""
    done = Learned()
    for name in settings.learn.hosts:
        for memory in HOSTS[name].memory:
            for path in memory_files(memory):
                try:
                    _learn_file(settings, store, name, memory, path, done)
                except PersonaError as error:
                    done.unreadable.append((str(path), str(error)))
    return done


def learn_due(settings: Settings, store: PersonaStore) -> Learned | None:
    """Learn where a host's render of what is due runs (``learn.on_tick``: the hook's and the plugin's session
    start, a compaction, the MCP server), so an entry a host's model saved reaches the others' next start; only
    into the home owner's profile (``store.profile``), never a gateway user's or another profile's. Never
    stops that render: a file it cannot read is a warning naming it and why (once per process), and a learn that
    fails is logged; None when it did not learn."""
    if not settings.learn.on_tick or not settings.learn.hosts:
        return None
    if store.profile != settings.store.profile:
        # The hosts' memory files are this home's user's, the owner of store.profile: a render for another profile
        # (a gateway's user, an MCP read of another's persona) never takes them in.
        return None
    try:
        with _ONE_AT_A_TIME:
            done = learn(settings, store)
    except PersonaError as error:
        log.warning("persona learn failed: %s", error)
        return None
    for file, why in done.unreadable:
        UNREADABLE.warn(f"not learned from {file}: {why}")
    return done


def memory_stamp(settings: Settings, profile: str) -> tuple[tuple[str, tuple[int, ...] | None], ...]:
    """How the memory files :func:`learn_due` would read for ``profile`` stand now (each path and its stat; a glob
    per memory folder): a reader that rendered at the same store generation and the same stamp has nothing new to
    learn. Empty where learning does not run (``learn.on_tick`` off, no hosts, another profile than the home's)."""
    if not settings.learn.on_tick or profile != settings.store.profile:
        return ()
    found = []
    for name in settings.learn.hosts:
        for memory in HOSTS[name].memory:
            folder = glob.escape(str(memory_folder(memory)))
            # glob on strings and one os.stat: about a quarter of pathlib's cost (benchmarks.learn), before every read
            found += [(path, _stands(path)) for pattern in memory.files
                      for path in glob.glob(os.path.join(folder, pattern), include_hidden=True)]
    return tuple(sorted(found))


def memory_files(memory: OwnMemory) -> list[Path]:
    """The host's memory files that exist now, in a stable order."""
    folder = memory_folder(memory)
    return sorted(path for pattern in memory.files for path in folder.glob(pattern) if path.is_file())


def users_own_files() -> list[str]:
    """The memory files the user writes themselves (``users_own``), which a forget names but never edits."""
    return [str(path) for host in HOSTS.values() for memory in host.memory if memory.users_own
            for path in memory_files(memory)]


def memory_folder(memory: OwnMemory) -> Path:
    """The folder a host keeps its memory in, resolved as the host resolves it."""
    if memory.folder_env and (chosen := inputs.environ(memory.folder_env)):
        return inputs.expanded(Path(chosen))
    home = inputs.environ(memory.home_env) if memory.home_env else None
    return (inputs.expanded(Path(home)) if home else Path(inputs.home())) / memory.folder


def _learn_file(settings: Settings, store: PersonaStore, host: str, memory: OwnMemory, path: Path,
                done: Learned) -> None:
    key, stood = (store.label, store.profile, str(path)), _stands(path)
    if stood is not None and _LEARNED.get(key) == stood:
        return  # learned as it stands: nothing in it is new
    _learn_read(settings, store, host, memory, path, done)
    if stood is not None:
        _LEARNED.put(key, stood)


def learned_as_they_stand(store: PersonaStore, host: str, memory: OwnMemory, path: Path) -> None:
    """Note every entry of ``path``, a memory file of ``host``, as learned (`persona init` imported it whole)."""
    from ..interchange.formats import read_source

    name, parsed = read_source(path, memory.format, max_facts=store.max_import_facts)
    note_learned(store, host, name, [item.fact.content for item in parsed.facts])


def _stands(path: Path | str) -> tuple[int, ...] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns


def _learn_read(settings: Settings, store: PersonaStore, host: str, memory: OwnMemory, path: Path,
                done: Learned) -> None:
    from ..interchange.fact_entry import Parsed
    from ..interchange.formats import read_source

    name, parsed = read_source(path, memory.format, max_facts=store.max_import_facts)
    done.files.append(name)
    texts = [item.fact.content for item in parsed.facts]
    fresh, seen_before = unseen(store, host, name, texts)
    if fresh and (seen_before or not memory.baseline):
        scope = _scope(memory, path)
        offered = [replace(parsed.facts[i], fact=parsed.facts[i].fact.model_copy(update={"scope": scope}))
                   for i in fresh]
        _take(settings, store, host, name, Parsed(facts=offered), done)
    if fresh or not seen_before:  # a file read as it was read before writes nothing: learning runs at each start
        note_learned(store, host, name, texts)


def _take(settings: Settings, store: PersonaStore, host: str, name: str, parsed: Parsed, done: Learned) -> None:
    """Import the new entries as facts by ``learn:HOST``, or hold those the import would add (approve: ask)."""
    from ..interchange.importing import import_entries

    writer, origin = learned_writer(host), f"learn:{host}:{name}"
    if settings.learn.approve == "ask":
        plan = import_entries(store, parsed, origin=origin, fmt="learn", skip_bad=True, dry_run=True,
                              declarative=False)
        adding = {entry["where"] for entry in plan.entries if entry["outcome"] == "add"}
        done.unchanged += len(plan.unchanged)
        mine, store.writer = store.writer, writer
        try:
            done.held += [store.hold("add", content=item.fact.content, topic=item.fact.topic,
                                     scope=item.fact.scope).name for item in parsed.facts if item.where in adding]
        finally:
            store.writer = mine
        return
    report = import_entries(store, parsed, origin=origin, fmt="learn", writer=writer, skip_bad=True,
                            declarative=False)
    done.added += report.added
    done.unchanged += len(report.unchanged)
    done.proposals += len(report.proposals)


def _scope(memory: OwnMemory, path: Path) -> str | None:
    """The scope a memory file's facts hold in: global, or the project its folder is named after (FactsFileError when
    no directory on this machine is that project: the file is named, never guessed at)."""
    if memory.project is None:
        return None
    name = path.parent.parent.name  # <name>/memory/MEMORY.md
    directory = slug_directory(name) if memory.project == "slug" else _indexed(memory, name)
    if directory is None or not directory.is_dir():
        raise FactsFileError(f"{path}: no directory on this machine is the project {name!r} names (a project moved "
                             "or deleted); its memory is not learned")
    return project_scope(project_of(directory).identity)


def _indexed(memory: OwnMemory, name: str) -> Path | None:
    """The project root the host's index maps to ``name`` (``{"projects": {root: name}}``), if any."""
    index = memory_folder(memory) / str(memory.index)
    try:
        projects = bounded_json.loads(index.read_text(encoding="utf-8")).get("projects", {})
    except (OSError, ValueError, AttributeError) as error:
        raise FactsFileError(f"{index}: cannot read the host's project index ({error})") from None
    roots = [root for root, named in projects.items() if named == name] if isinstance(projects, dict) else []
    return Path(roots[0]) if roots else None


def slug_directory(slug: str) -> Path | None:
    """The directory whose absolute path, every character but a letter or digit written ``-``, is ``slug``: found by
    walking down from the root, one matching entry at a time (the first that leads to the whole slug)."""
    def walk(directory: Path, rest: str) -> Path | None:
        if not rest:
            return directory
        try:
            entries = sorted(entry for entry in directory.iterdir() if entry.is_dir())
        except OSError:
            return None
        for entry in entries:
            part = "-" + SLUG_CHAR.sub("-", entry.name)
            if rest.startswith(part) and (found := walk(entry, rest[len(part):])) is not None:
                return found
        return None

    return walk(Path("/"), slug) if slug.startswith("-") else None
